#!/usr/bin/env bash
# Store paths (issue 8): folders above the database may be symlinks (Debian's /var/run -> /run, a
# symlinked $HOME); the database file and its -wal/-shm may not; a failed open leaves nothing
# behind: no empty file, no folder created for it.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
unset IDEM_DB

mkdir -p "$T/run" "$T/real-home"
ln -s "$T/run" "$T/var-run"
ln -s "$T/real-home" "$T/home"

# --db under a symlinked folder, as /var/run/x.db.
capture first idem run --db "$T/var-run/x.db" -k k -- echo ran
expect_rc 0
capture again idem run --db "$T/var-run/x.db" -k k -- echo ran
expect_rc 0
assert_bytes "$T/again.out" 'ran\n'
[[ -f $T/run/x.db && ! -L $T/run/x.db ]] || fail "the store is not in the link's target"
assert_eq succeeded "$(idem --db "$T/var-run/x.db" status k)" "status through the link"
assert_eq succeeded "$(idem --db "$T/run/x.db" status k)" "status through the real path"

# The default path under a symlinked $HOME, folders created behind the link.
capture home env HOME="$T/home" XDG_STATE_HOME= "$IDEM_BIN" run -k h -- true
expect_rc 0
[[ -f $T/real-home/.local/state/idem/idem.db ]] || fail "no store under the real home"
assert_eq 700 "$(stat -c %a "$T/real-home/.local/state/idem")" "mode of the folder idem made"
assert_eq 600 "$(stat -c %a "$T/real-home/.local/state/idem/idem.db")" "mode of the store"
assert_eq h "$(HOME="$T/home" XDG_STATE_HOME='' idem ls --keys)" "ls through the symlinked home"

# A relative --db from a working directory reached through a link.
(cd "$T/var-run" && "$IDEM_BIN" run --db rel.db -k r -- true) || fail "relative --db under a link"
[[ -f $T/run/rel.db ]] || fail "relative store not created"

# The database file itself as a symlink is still refused, and so is its WAL.
ln -s "$T/run/x.db" "$T/link.db"
capture link idem status --db "$T/link.db" k
expect_rc 74
assert_idem_error
ln -s "$T/elsewhere" "$T/w.db-wal"
capture wal idem status --db "$T/w.db" k
expect_rc 74
assert_idem_error
[[ ! -e $T/w.db && ! -e $T/elsewhere ]] || fail "a refused open created files"

# A failed open leaves nothing behind. SQLite cannot make its journal here (a folder is in the
# way), after idem created the file: the empty file goes again.
mkdir "$T/j.db-journal"
capture journal idem run --db "$T/j.db" -k k -- true
expect_rc 74
assert_idem_error
[[ ! -e $T/j.db && ! -e $T/j.db-wal && ! -e $T/j.db-shm ]] || fail "a failed open left: $(ls "$T" | grep '^j\.db')"
# The file cannot be created (its name is too long): the folders made for it go again.
capture long idem status --db "$T/new/deeper/$(printf 'x%.0s' {1..300}).db" k
expect_rc 74
assert_idem_error
[[ ! -e $T/new ]] || fail "a failed open left the folders it made"
# A bad setting is refused before anything is created.
capture busy env IDEM_BUSY_TIMEOUT=soon "$IDEM_BIN" status --db "$T/other/b.db" k
expect_rc 64
[[ ! -e $T/other ]] || fail "a refused setting left a folder"
