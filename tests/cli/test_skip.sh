#!/usr/bin/env bash
# A test skips (77, CTest's SKIP_RETURN_CODE) only through lib.sh's `skip REASON`. Any other exit
# 77 is a failure (1): idem's own 77 ("not the owner", from idem end) escaping under set -e must
# not be counted as a skip. The unit tests' binary likewise never exits 77 for failed assertions.
tests_dir=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}" && pwd)
source "$tests_dir/cli/lib.sh"

mkdir "$T/tmp"
# child NAME BODY: a test script sourcing lib.sh, then BODY; run it, its stdout and stderr in
# $T/NAME.out/.err, its temp dir under $T/tmp; sets rc.
child() {
  printf 'source %q\n%s\n' "$tests_dir/cli/lib.sh" "$2" >"$T/$1.sh"
  capture "$1" env TMPDIR="$T/tmp" bash "$T/$1.sh"
}

child skipped 'skip "no widget here"'
expect_rc 77
assert_bytes "$T/skipped.err" 'SKIP: no widget here\n'
[[ -z $(ls -A "$T/tmp") ]] || fail "a skipped test left its files: $(ls "$T/tmp")"

child stray 'exit 77'
expect_rc 1
file_has "$T/stray.err" "stray.sh: exit 77 without skip" || fail "no message for a stray 77: $(cat "$T/stray.err")"
file_has "$T/stray.err" "FAILED (exit 1)" || fail "a stray 77 is not reported failed: $(cat "$T/stray.err")"

# idem end by a caller that does not own the key exits 77: under set -e, the test fails.
child not-owner 'idem run -k owned -- true
idem end -k owned --exit 0
echo "not reached"'
expect_rc 1
assert_empty "$T/not-owner.out"
file_has "$T/not-owner.err" "does not own" || fail "idem end said: $(cat "$T/not-owner.err")"
file_has "$T/not-owner.err" "exit 77 without skip" || fail "no message for idem's 77: $(cat "$T/not-owner.err")"

# A skip from a subshell is no skip of the test: only the script's own shell can skip.
child subshell '(skip "in a subshell")'
expect_rc 1

rm -rf "$T/tmp"

# The unit tests: a case with 77 failed assertions (hidden, run by name) exits 1, not 77.
unit=$IDEM_HELPERS/idem_unit_tests
if [[ -x $unit ]]; then
  capture unit "$unit" '[seventy-seven]'
  expect_rc 1
  file_has "$T/unit.out" "77 failed" || fail "the hidden case did not fail 77 times: $(tail -n 3 "$T/unit.out")"
fi
