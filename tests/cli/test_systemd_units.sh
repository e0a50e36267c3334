#!/usr/bin/env bash
# The systemd units shipped with idem: installed from the build tree (their ExecStart= names the
# installed binary, written at install time), they pass `systemd-analyze verify` (which also
# asks man for each Documentation= page) and carry the hardening and the notify type the daemon
# speaks.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
command -v systemd-analyze >/dev/null ||
  skip "systemd-analyze is missing (package systemd)"
build=$(dirname "$IDEM_BIN")
[[ -f $build/cmake_install.cmake ]] || fail "$build is not idem's build folder"

capture install cmake --install "$build" --prefix "$T/root"
expect_rc 0
units=$T/root/lib/systemd/system
for unit in idem-serve.service idem-serve.socket idem-gc.service idem-gc.timer; do
  [[ -f $units/$unit ]] || fail "$unit is not installed in $units"
done
grep -qxF "ExecStart=$T/root/bin/idem serve --config /etc/idem/serve.json \$IDEM_SERVE_ARGS" \
  "$units/idem-serve.service" || fail "idem-serve.service does not start the installed idem"
grep -qxF "ExecStart=$T/root/bin/idem gc" "$units/idem-gc.service" ||
  fail "idem-gc.service does not run the installed idem"

if command -v man >/dev/null; then
  man_check=(--man=yes)
  export MANPATH="$T/root/share/man"
else
  man_check=(--man=no)
fi
capture verify systemd-analyze verify "${man_check[@]}" "$units"/idem-*
expect_rc 0
[[ ! -s $T/verify.err ]] || fail "systemd-analyze verify warns: $(cat "$T/verify.err")"

# has UNIT LINE: the unit has the line, exactly.
has() { grep -qxF "$2" "$units/$1" || fail "$1 lacks '$2'"; }
# shellcheck disable=SC2016 # systemd's $MAINPID, literally
for directive in Type=notify 'ExecReload=/bin/kill -HUP $MAINPID'; do
  has idem-serve.service "$directive"
done
for service in idem-serve.service idem-gc.service; do
  for directive in DynamicUser=yes User=idem StateDirectory=idem ProtectSystem=strict \
    NoNewPrivileges=yes 'Environment=IDEM_DB=%S/idem/idem.db'; do
    has "$service" "$directive"
  done
done
has idem-serve.socket ListenStream=127.0.0.1:8787
has idem-gc.timer OnCalendar=daily
has idem-gc.timer Persistent=true
