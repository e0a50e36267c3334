#!/usr/bin/env bash
# The store's folder is 0700 and its files 0600 whatever the umask (captured output may hold
# secrets); --db beats $IDEM_DB beats ${XDG_STATE_HOME:-$HOME/.local/state}/idem/idem.db.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

mode_is() {  # mode_is PATH OCTAL
  assert_eq "$2" "$(stat -c %a "$1")" "mode of $1"
}
files_private() {  # files_private DB: the db and its -wal/-shm (when present) are 0600
  local f
  for f in "$1" "$1-wal" "$1-shm"; do
    [[ ! -e $f ]] || mode_is "$f" 600
  done
}

# in_state DIR IDEM_ARGS...: idem with XDG_STATE_HOME=DIR and no $IDEM_DB.
in_state() { env -u IDEM_DB XDG_STATE_HOME="$1" "$IDEM_BIN" "${@:2}"; }
state_is() { [[ $(in_state "$1" status "$2") == "$3" ]]; }

for mask in 022 000; do
  umask "$mask"
  state=$T/state-$mask
  mkfifo "$T/gate-$mask"
  # While a command runs the store is open: its -wal and -shm exist, and must be private too.
  bg hold env -u IDEM_DB XDG_STATE_HOME="$state" "$IDEM_BIN" run -k hold -- sh -c 'read x < "$1"' sh "$T/gate-$mask"
  wait_until "the claim is recorded" state_is "$state" hold running
  db=$state/idem/idem.db
  [[ -e $db ]] || fail "umask $mask: no database at $db"
  mode_is "$state/idem" 700
  files_private "$db"
  release_fifo "$T/gate-$mask"
  bg_wait hold
  expect_rc 0
  files_private "$db"
  mode_is "$state/idem" 700
  assert_eq succeeded "$(in_state "$state" status hold)" "status in the default store"
done
umask 022

# Without XDG_STATE_HOME: $HOME/.local/state/idem/idem.db.
mkdir "$T/home"
env -u IDEM_DB -u XDG_STATE_HOME HOME="$T/home" "$IDEM_BIN" run -k home -- true
[[ -e $T/home/.local/state/idem/idem.db ]] || fail "no database under \$HOME/.local/state/idem"
mode_is "$T/home/.local/state/idem" 700
files_private "$T/home/.local/state/idem/idem.db"

# Precedence: --db (before or after the subcommand) over $IDEM_DB over XDG_STATE_HOME.
export XDG_STATE_HOME=$T/xdg
export IDEM_DB=$T/env.db
idem --db "$T/flag.db" run -k p -- true
[[ -e $T/flag.db ]] || fail "--db before the subcommand was not used"
[[ ! -e $T/env.db ]] || fail "\$IDEM_DB was used although --db was given"
idem run --db "$T/flag2.db" -k p2 -- true
[[ -e $T/flag2.db ]] || fail "--db after the subcommand was not used"
[[ ! -e $T/env.db ]] || fail "\$IDEM_DB was used although --db was given after run"
assert_eq succeeded "$(idem --db "$T/flag.db" status p)" "status of p in flag.db"
assert_eq succeeded "$(idem status p2 --db "$T/flag2.db")" "status of p2 in flag2.db (--db last)"
assert_eq none "$(idem --db "$T/flag.db" status p2)" "status of p2 in flag.db"
idem run -k e -- true
[[ -e $T/env.db ]] || fail "\$IDEM_DB was not used"
[[ ! -e $T/xdg ]] || fail "XDG_STATE_HOME was used although \$IDEM_DB was set"
assert_eq succeeded "$(idem status e)" "status of e in \$IDEM_DB"
assert_eq none "$(idem --db "$T/flag.db" status e)" "status of e in flag.db"
files_private "$T/flag.db"
files_private "$T/env.db"
