#!/usr/bin/env bash
# --ttl: an expired record behaves as absent (runs again, attempt 1), is hidden by ls unless
# --all, and is deleted by gc. gc --older-than also deletes old finished records; never running.
# Time passes on the test clock ($IDEM_TEST_CLOCK_OFFSET_MS moves idem's wall clock), so nothing
# here waits for it.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
if [[ $(idem --version) != *"(test hooks)"* ]]; then
  skip "the test clock needs a build with -DIDEM_TEST_HOOKS=ON"
fi
hours() { echo $(($1 * 3600 * 1000)); }
at() {  # at OFFSET_MS COMMAND...: runs the command as if OFFSET_MS had passed
  local offset=$1
  shift
  IDEM_TEST_CLOCK_OFFSET_MS=$offset "$@"
}
export IDEM_TEST_CLOCK_OFFSET_MS=0

capture keep at -5000 idem run -k keep -- echo keep
expect_rc 0
tcmd=(sh -c 'echo "$IDEM_ATTEMPT" >> "$1"; echo ttl' sh "$T/attempts")
capture t1 idem run -k short --ttl 1h -- "${tcmd[@]}"
expect_rc 0
export IDEM_TEST_CLOCK_OFFSET_MS=$(($(hours 1) - 1000))
assert_status short succeeded  # a second before its TTL ends
export IDEM_TEST_CLOCK_OFFSET_MS=$(($(hours 1) + 1000))
assert_status short expired

idem ls --json | jsonq /key >"$T/ls.keys"
assert_bytes "$T/ls.keys" 'keep\n'
idem ls --all --json | jsonq /key /status >"$T/ls-all.keys"
assert_bytes "$T/ls-all.keys" 'short\texpired\nkeep\tsucceeded\n'
idem ls | awk 'NR > 1 { print $1 }' >"$T/ls.human"
assert_bytes "$T/ls.human" 'keep\n'
idem ls --all | awk 'NR > 1 { print $1 }' >"$T/ls-all.human"
assert_bytes "$T/ls-all.human" 'short\nkeep\n'

# The expired key runs again as a first attempt.
capture t2 idem run -k short --ttl 1h -- "${tcmd[@]}"
expect_rc 0
assert_bytes "$T/t2.out" 'ttl\n'
assert_bytes "$T/attempts" '1\n1\n'
assert_status short succeeded
export IDEM_TEST_CLOCK_OFFSET_MS=$(($(hours 2) + 2000))
assert_status short expired

capture dry idem gc --dry-run
expect_rc 0
assert_bytes "$T/dry.out" 'would remove 1\n'
assert_status short expired
capture gc1 idem gc
expect_rc 0
assert_bytes "$T/gc1.out" 'removed 1\n'
[[ ! -s $IDEM_DB-wal ]] || fail "gc left $(wc -c <"$IDEM_DB-wal") bytes in the WAL"
assert_status short none
assert_status keep succeeded
integrity_ok
capture gc2 idem gc
expect_rc 0
assert_bytes "$T/gc2.out" 'removed 0\n'

# --older-than: finished records older than D go; newer ones and running ones stay.
export IDEM_TEST_CLOCK_OFFSET_MS=0
mkfifo "$T/gate"
bg running at -5000 idem run -k running --ttl 1h -- sh -c 'read x < "$1"' sh "$T/gate"
wait_until "'running' is claimed" status_is running running
capture old at -1500 idem run -k old -- echo old
expect_rc 0
# A minute ahead on the test clock: 'new' stays younger than 1s however slowly the lines below
# run on a busy machine.
capture new at 60000 idem run -k new -- echo new
expect_rc 0
capture dry2 idem gc --older-than 1s --dry-run
expect_rc 0
assert_bytes "$T/dry2.out" 'would remove 2\n'
assert_status old succeeded
capture gc3 idem gc --older-than 1s
expect_rc 0
assert_bytes "$T/gc3.out" 'removed 2\n'
assert_status old none
assert_status keep none
assert_status new succeeded
assert_status running running
integrity_ok

release_fifo "$T/gate"
bg_wait running
expect_rc 0
assert_status running succeeded
