#!/usr/bin/env bash
# The order of writes across stdout and stderr is kept, live and on replay, and each stream can
# be read back on its own. (Under `2>&1` the command gets one pipe for both and the record holds
# it all as stdout: tests/cli/test_output_order.sh.)
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

pieces=()
for i in $(seq 1 20); do interleave_pair "out $i\n" "err $i\0\n"; done
# Several writes in a row to one stream, and a last piece without a newline.
pieces+=("o:tail-a " "o:tail-b\n" "e:last")
printf 'tail-a tail-b\n' | tee -a "$T/want.out" >>"$T/want.combined"
printf 'last' | tee -a "$T/want.err" >>"$T/want.combined"
cmd=("$(helper interleave)" "${pieces[@]}")

rc=0
idem run -k order -- "${cmd[@]}" >"$T/live.combined" 2>&1 || rc=$?
assert_eq 0 "$rc" "exit code of the first run"
assert_same "$T/want.combined" "$T/live.combined"

rc=0
idem run -k order -- "${cmd[@]}" >"$T/replay.combined" 2>&1 || rc=$?
assert_eq 0 "$rc" "exit code of the replay"
assert_same "$T/want.combined" "$T/replay.combined"

# Stdout and stderr apart: the record keeps them apart, live, on replay and for show.
for name in split split-replay; do
  capture "$name" idem run -k order-split -- "${cmd[@]}"
  expect_rc 0
  assert_same "$T/want.out" "$T/$name.out"
  assert_same "$T/want.err" "$T/$name.err"
done

idem show order-split --stdout >"$T/show.out"
assert_same "$T/want.out" "$T/show.out"
idem show order-split --stderr >"$T/show.err"
assert_same "$T/want.err" "$T/show.err"

# The order survives a failing command too (replayed with --replay-failures).
rc=0
idem run -k order-fail --replay-failures -- "$(helper interleave)" 'e:E1\n' 'o:O1\n' 'e:E2\n' x:9 >"$T/f1" 2>&1 || rc=$?
assert_eq 9 "$rc" "exit code of the failing interleave"
assert_bytes "$T/f1" 'E1\nO1\nE2\n'
rc=0
idem run -k order-fail --replay-failures -- "$(helper interleave)" 'e:E1\n' 'o:O1\n' 'e:E2\n' x:9 >"$T/f2" 2>&1 || rc=$?
assert_eq 9 "$rc" "exit code of the replayed failure"
assert_bytes "$T/f2" 'E1\nO1\nE2\n'
