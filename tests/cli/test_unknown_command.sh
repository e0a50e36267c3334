#!/usr/bin/env bash
# An unknown subcommand is named as such (64), not reported as a missing one.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture u1 idem frobnicate
expect_rc 64
assert_idem_error
assert_bytes "$T/u1.err" "idem: unknown command 'frobnicate'; see 'idem --help'\n"
capture u2 idem --db "$T/x.db" frobnicate --key k
expect_rc 64
assert_bytes "$T/u2.err" "idem: unknown command 'frobnicate'; see 'idem --help'\n"
[[ ! -e $T/x.db ]] || fail "an unknown command must not create the store"
# No subcommand at all is still "required".
capture u3 idem
expect_rc 64
assert_idem_error
file_has "$T/u3.err" "subcommand is required" || fail "no subcommand: $(cat "$T/u3.err")"
