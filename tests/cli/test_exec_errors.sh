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
