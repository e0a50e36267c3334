#!/usr/bin/env bash
# idem each --jobs N hands the lines of one key to its jobs one at a time, in input order
# (per-key FIFO): a later line of a key never runs before an earlier one, nor beside it. 200 lines
# over 10 keys, 4 jobs, 10 times. The handler records its line under its key and fails, so every
# line of a key runs (a failed key runs again at its next line) and each key's record of lines
# must be the input's. Ten rounds: the unit test of the key queue (tests/unit/test_key_queue.cpp)
# repeats the same input fifty times without starting 10,000 processes; this proves the wiring.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

RANDOM=2023  # the same input every time
for ((n = 1; n <= 200; n++)); do
  key=k$((RANDOM % 10))
  printf '{"id":"%s"}\n' "$key" >>"$T/in.jsonl"
  echo "$n" >>"$T/want.$key"  # the lines of each key, in input order
done
handler=(sh -c 'echo "$IDEM_LINE" >> "$IDEM_KEY"; exit 1')

for ((round = 1; round <= 10; round++)); do
  rm -rf "$T/out" "$T/round.db" "$T/round.db-wal" "$T/round.db-shm"
  mkdir "$T/out"
  (cd "$T/out" && IDEM_DB=$T/round.db idem each --key-field /id --jobs 4 -q -- "${handler[@]}" \
    <"$T/in.jsonl" >"$T/round.out" 2>"$T/round.err") && rc=0 || rc=$?
  _last=round
  expect_rc 1
  assert_bytes "$T/round.err" 'idem each: 200 messages: 0 ran, 200 failed, 0 skipped (already done), 0 refused, 0 malformed\n'
  for want in "$T"/want.*; do
    key=${want##*.}
    cmp -s "$want" "$T/out/$key" ||
      fail "round $round, key $key: lines ran in the order $(paste -sd, "$T/out/$key"), want $(paste -sd, "$want")"
  done
done
