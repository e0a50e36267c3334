#!/usr/bin/env bash
# No NSS in the static idem (docs/internals.md, "No NSS in the static idem"). A static glibc that
# loads an NSS module (built against the system's shared glibc) crashes: a uid in no passwd file
# with HOME unset made getpwuid_r load libnss_systemd, and every command, --help included, died
# of SIGSEGV. Now:
#  a. the static idem holds no NSS entry point (nm), so no module can be loaded into it; the
#     resolver functions OpenSSL refers to are idem's failures, a few bytes each;
#  b. a uid in no passwd file, HOME unset or empty, under an nsswitch.conf naming modules: every
#     subcommand's --help works, `run --db` works, and `run` without a store says what to set
#     (one line, exit 74);
#  c. names for --listen come from /etc/hosts without a resolver: a name mapped to 127.0.0.1 is
#     loopback, one mapped elsewhere is not; the listening line writes [::1]:PORT; the static
#     idem's `serve` runs as idem-pg, the dynamically linked one, whose resolver is the system's.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
unset IDEM_DB IDEM_STORE XDG_STATE_HOME

# a. Linked statically (no program interpreter): not one NSS function, nor glibc's NSS machinery.
if ! readelf -lW "$IDEM_BIN" | grep -q 'Requesting program interpreter'; then
  nm -S "$IDEM_BIN" >"$T/nm" || fail "nm -S could not read $IDEM_BIN"  # with sizes, read below
  [[ -s $T/nm ]] || fail "no symbols in $IDEM_BIN (stripped?): nothing to check"
  grep -qE ' T main$' "$T/nm" || fail "nm lists no main in $IDEM_BIN"
  nss='getpw(uid|nam|ent)(_r)?|[sg]etpwent|getgr(gid|nam|ent|ouplist)(_r)?|initgroups|getspnam(_r)?'
  nss+='|gethostby(name2|addr)(_r)?|gethostbyname_r|gethostent(_r)?|getservby(name|port)(_r)?'
  nss+='|getprotoby(name|number)(_r)?|getnetby(name|addr)(_r)?|getlogin(_r)?|cuserid|getpwuid'
  nss+='|__nss_[A-Za-z0-9_]+|_nss_[A-Za-z0-9_]+'
  if grep -E " [A-Za-z] ($nss)(@.*)?$" "$T/nm" >"$T/nss"; then
    fail "the static idem can reach NSS ($(wc -l <"$T/nss") symbols): $(head -5 "$T/nss" | tr '\n' ' ')"
  fi
  # OpenSSL's references to the resolver are bound to idem's failures (src/static_link.cpp), a
  # few bytes each; glibc's getaddrinfo is kilobytes, and brings its NSS loader.
  awk '$4 ~ /^(getaddrinfo|freeaddrinfo|getnameinfo|gethostbyname)$/ && NF == 4' "$T/nm" >"$T/resolver"
  (($(wc -l <"$T/resolver") == 4)) ||
    fail "the static idem should define getaddrinfo, freeaddrinfo, getnameinfo and gethostbyname as failures: $(tr '\n' ' ' <"$T/resolver")"
  while read -r _ size _ name; do
    ((16#$size <= 64)) || fail "$name in the static idem is $((16#$size)) bytes: glibc's, not idem's failure"
  done <"$T/resolver"
fi

# b. A uid in no passwd file, under an nsswitch.conf bind-mounted in a mount namespace of its own.
(($(id -u) == 0)) || skip "running as another uid needs root"
command -v setpriv >/dev/null || skip "setpriv is missing (util-linux)"
unshare --mount true 2>/dev/null || skip "cannot make a mount namespace (needs CAP_SYS_ADMIN)"
uid=
for candidate in 4242420 4242421 4242422 4242423; do
  getent passwd "$candidate" >/dev/null || { uid=$candidate && break; }
done
[[ -n $uid ]] || fail "every candidate uid is in the passwd database"
chmod o+x "$T"
mkdir "$T/u"
chown "$uid:$uid" "$T/u"
# A copy the stranger can run: the build may live under a folder only root can enter (a clean
# clone in a 0700 mktemp folder, as CI makes).
install -d -m 0755 "$T/bin"
install -m 0755 "$IDEM_BIN" "$T/bin/idem"
stranger_idem=$T/bin/idem
printf '%s\n' 'passwd: files systemd' 'group: files systemd' 'shadow: files systemd' \
  'hosts: files resolve [!UNAVAIL=return] dns' >"$T/nsswitch.conf"
# stranger CMD...: CMD as $uid (groups none) with the test's nsswitch.conf in force.
stranger() {
  unshare --mount sh -c \
    'mount --bind "$1" /etc/nsswitch.conf && uid=$2 && shift 2 &&
     exec setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"' \
    sh "$T/nsswitch.conf" "$uid" "$@"
}
mapfile -t commands < <(idem --list-commands)
((${#commands[@]} >= 10)) || fail "idem --list-commands lists ${#commands[@]} subcommands"
for how in "env -u HOME" "env HOME="; do
  read -r -a env_cmd <<<"$how"
  capture top stranger "${env_cmd[@]}" "$stranger_idem" --help
  expect_rc 0
  file_has "$T/top.out" "--db" || fail "$how: idem --help printed no --db: $(head -c 300 "$T/top.out")"
  for sub in "${commands[@]}"; do
    capture "help-$sub" stranger "${env_cmd[@]}" "$stranger_idem" "$sub" --help
    expect_rc 0
    [[ -s $T/help-$sub.out ]] || fail "$how: idem $sub --help printed nothing"
  done
  capture db stranger "${env_cmd[@]}" "$stranger_idem" --db "$T/u/idem.db" run -k "k-${how// /}" -- echo ran
  expect_rc 0
  assert_bytes "$T/db.out" 'ran\n'
  # No store to be found: one line naming what to set, 74, and nothing ran.
  capture nostore stranger "${env_cmd[@]}" "$stranger_idem" run -k nostore -- touch "$T/u/ran"
  expect_rc 74
  assert_idem_error
  file_has "$T/nostore.err" "set HOME" || fail "$how: the error names nothing to set: $(cat "$T/nostore.err")"
  [[ ! -e $T/u/ran ]] || fail "$how: the command ran without a store"
done
# The --help text names the default as written, resolved for nobody (--help opens no store).
grep -qF '(default: $IDEM_DB, else ${XDG_STATE_HOME:-$HOME/.local/state}/idem/idem.db)' "$T/top.out" ||
  fail "idem --help's --db default: $(grep -F -- '--db' "$T/top.out")"

# c. --listen names from /etc/hosts (a test file bind-mounted over it).
printf '%s\n' '127.0.0.1 localhost' '::1 localhost' '127.0.0.1 vm' '10.11.12.13 far' >"$T/hosts"
# serve_in NAME --listen ADDR: serve --ledger in the background with the test's /etc/hosts.
serve_in() {
  local name=$1
  shift
  # unshare and sh exec: the bg pid is idem's own.
  bg "$name" unshare --mount sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' \
    sh "$T/hosts" "$IDEM_BIN" serve --ledger --db "$T/$name.db" --port-file "$T/$name.port" "$@"
  _up_or_gone() { [[ -s $T/$name.port ]] || bg_exited "$name"; }
  wait_until "daemon '$name' writes its port file" _up_or_gone
  [[ -s $T/$name.port ]] || fail "daemon '$name' did not start: $(head -c 2000 "$T/$name.err")"
}
stop_serve() {
  kill -TERM "$(bg_pid "$1")"
  bg_wait "$1"
  expect_rc 0
}
serve_in vm --listen vm:0
port=$(<"$T/vm.port")
file_has "$T/vm.err" "\"address\":\"vm:$port\"" || fail "listening line: $(head -c 500 "$T/vm.err")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")
assert_eq 200 "$code" "/healthz on the loopback listener named vm"
# The static idem's daemon is idem-pg, linked dynamically (where it is built).
if [[ -x $(dirname "$IDEM_BIN")/idem-pg ]] && [[ -s $T/nm ]]; then
  assert_eq "$(dirname "$IDEM_BIN")/idem-pg" "$(readlink "/proc/$(bg_pid vm)/exe")" \
    "the program serving"
fi
stop_serve vm

capture far unshare --mount sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' \
  sh "$T/hosts" "$IDEM_BIN" serve --ledger --db "$T/far.db" --listen far:0
expect_rc 64
assert_idem_error
file_has "$T/far.err" "not a loopback address" || fail "far:0: $(cat "$T/far.err")"

if ip -6 addr show dev lo 2>/dev/null | grep -q '::1/128'; then
  serve_in v6 --listen '[::1]:0'
  port=$(<"$T/v6.port")
  file_has "$T/v6.err" "\"address\":\"[::1]:$port\"" ||
    fail "listening line of [::1]:0: $(head -c 500 "$T/v6.err")"
  stop_serve v6
fi
