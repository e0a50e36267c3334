#!/usr/bin/env bash
# A command that cannot start: 127 not found, 126 not executable, one "idem:" line, failed.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture nf idem run -k notfound -- "$T/no/such/command"
expect_rc 127
assert_idem_error
assert_status notfound failed

capture nfpath idem run -k notfound-path -- idem-no-such-command-on-path
expect_rc 127
assert_idem_error

printf '#!/bin/sh\necho should not run\n' >"$T/noexec"
chmod 644 "$T/noexec"
capture ne idem run -k noexec -- "$T/noexec"
expect_rc 126
assert_idem_error
assert_status noexec failed

mkdir "$T/adir"
capture dir idem run -k dir -- "$T/adir"
expect_rc 126
assert_idem_error

# Could-not-start is a failure: the next attempt tries again, and succeeds once it can.
chmod 755 "$T/noexec"
capture ne2 idem run -k noexec -- "$T/noexec"
expect_rc 0
assert_bytes "$T/ne2.out" 'should not run\n'
assert_eq 2 "$(idem show noexec --json | jsonq /attempt)" "attempt after a failed start"

# PATH's rules as glibc's: entries without the name are passed over (idem asks before the claim
# is committed which ones, then execs from the first that has it), one without permission is
# remembered and the search goes on; EACCES wins over "not found" when nothing runs.
mkdir "$T/none" "$T/denied" "$T/good"
printf '#!/bin/sh\necho denied ran\n' >"$T/denied/idem-path-order"
chmod 644 "$T/denied/idem-path-order"
printf '#!/bin/sh\necho good ran\n' >"$T/good/idem-path-order"
chmod 755 "$T/good/idem-path-order"
capture order env PATH="$T/none:$T/no/such/folder:$T/denied:$T/good:/usr/bin:/bin" \
  "$IDEM_BIN" run -k path-order -- idem-path-order
expect_rc 0
assert_bytes "$T/order.out" 'good ran\n'
capture denied env PATH="$T/none:$T/denied:$T/no/such/folder" "$IDEM_BIN" run -k path-denied -- idem-path-order
expect_rc 126
assert_idem_error
capture missing env PATH="$T/none:$T/no/such/folder" "$IDEM_BIN" run -k path-missing -- idem-path-order
expect_rc 127
assert_idem_error
# A relative entry is looked up from the command's folder, as the exec finds it.
mkdir "$T/rel"
printf '#!/bin/sh\necho relative ran\n' >"$T/rel/idem-path-rel"
chmod 755 "$T/rel/idem-path-rel"
capture rel sh -c 'cd "$1" && PATH="$1/none:rel:/usr/bin:/bin" exec "$2" run -k path-rel -- idem-path-rel' \
  sh "$T" "$IDEM_BIN"
expect_rc 0
assert_bytes "$T/rel.out" 'relative ran\n'

# Without PATH (cron's `env -i`), the command is looked up where `sh -c` looks, dash's default
# (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin), not glibc's /bin:/usr/bin: a
# command only in /usr/local/sbin (a folder of $T bind-mounted over it) is found by both.
mkdir "$T/sbin"
printf '#!/bin/sh\necho found\n' >"$T/sbin/idem-path-probe"
chmod 755 "$T/sbin/idem-path-probe"
if [[ -d /usr/local/sbin ]] && unshare --mount true 2>/dev/null; then
  bare() {  # bare CMD...: CMD under env -i, $T/sbin over /usr/local/sbin
    unshare --mount sh -c 'mount --bind "$1" /usr/local/sbin && shift && exec env -i "$@"' \
      sh "$T/sbin" "$@"
  }
  capture shpath bare /bin/sh -c idem-path-probe
  expect_rc 0
  assert_bytes "$T/shpath.out" 'found\n'
  capture nopath bare "$IDEM_BIN" --db "$T/nopath.db" run -k nopath -- idem-path-probe
  expect_rc 0
  assert_bytes "$T/nopath.out" 'found\n'
fi
