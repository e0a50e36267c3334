#!/usr/bin/env bash
# The default store without HOME (cron under `env -i`, a unit without User=): the home folder of
# the user's /etc/passwd entry, as git finds it. `idem --help` names the default as written: it
# opens no store, so it works the path out for nobody.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
unset IDEM_DB

# --help: the default path as written, whatever the environment.
db_help() { "$@" "$IDEM_BIN" --help | grep -E '^ +--db '; }
want='(default: $IDEM_DB, else ${XDG_STATE_HOME:-$HOME/.local/state}/idem/idem.db)'
for setting in "env -i" "env HOME=$T/h XDG_STATE_HOME=" "env HOME= XDG_STATE_HOME=" \
  "env XDG_STATE_HOME=$T/x"; do
  read -r -a how <<<"$setting"
  line=$(db_help "${how[@]}") || fail "${how[*]} idem --help has no --db line"
  [[ $line == *"$want"* ]] || fail "${how[*]} idem --help: want the default $want, got: $line"
done

# The store itself, under env -i: in the passwd entry's home. That home is made a folder of $T by
# a passwd file bind-mounted in a mount namespace of its own, so nothing is written to the real
# home.
awk -F: -v OFS=: -v uid="$(id -u)" -v home="$T/pwhome" '$3 == uid {$6 = home} {print}' \
  /etc/passwd >"$T/passwd"
mkdir "$T/pwhome"
unshare --mount sh -c 'mount --bind "$1" /etc/passwd' sh "$T/passwd" 2>/dev/null ||
  skip "cannot bind-mount a passwd file in a mount namespace (needs root or CAP_SYS_ADMIN)"
in_namespace() {  # in_namespace CMD...: CMD under env -i, the passwd file of $T in force
  unshare --mount sh -c 'mount --bind "$1" /etc/passwd && shift && exec env -i "$@"' \
    sh "$T/passwd" "$@"
}
capture cron in_namespace "$IDEM_BIN" run -k nightly -- sh -c 'echo ran'
expect_rc 0
assert_bytes "$T/cron.out" 'ran\n'
[[ -f $T/pwhome/.local/state/idem/idem.db ]] || fail "no store in the passwd entry's home"
assert_eq succeeded "$(idem --db "$T/pwhome/.local/state/idem/idem.db" status nightly)" \
  "status of the key run under env -i"
capture replay in_namespace "$IDEM_BIN" run -k nightly -- sh -c 'echo ran'
expect_rc 0
assert_bytes "$T/replay.out" 'ran\n'
assert_eq 1 "$(idem --db "$T/pwhome/.local/state/idem/idem.db" show nightly --json | jsonq /attempt)" \
  "attempts of the key run twice under env -i"
