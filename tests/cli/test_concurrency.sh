#!/usr/bin/env bash
# contract §8.1: N concurrent attempts of one key run the command exactly once; the others are refused
# with 75, or with --wait replay the same bytes.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

N=32
mkfifo "$T/gate"

# exited_count NAME_PREFIX WANT: at least WANT of the N background attempts have exited.
exited_count() {
  local i n=0
  for ((i = 0; i < N; i++)); do
    if bg_exited "$1$i"; then n=$((n + 1)); fi
  done
  ((n >= $2))
}

# Round 0: many processes open a store that does not exist yet (cron jobs starting together).
# Creating it must not show anyone a "database is locked": busy locks are waited out. 20 stores,
# each a race of its own (640 processes, two thirds of this script's); IDEM_TEST_FRESH_ROUNDS=N
# makes it N (`pg: concurrency` takes 6: every claim there is a round trip to the server).
for ((round = 0; round < ${IDEM_TEST_FRESH_ROUNDS:-20}; round++)); do
  fresh_store "fresh-$round"
  for ((i = 0; i < N; i++)); do
    bg "f$i" env "$FRESH_STORE" "$IDEM_BIN" run -k fresh -- sh -c 'echo x >> "$1"' sh "$T/fresh-$round.count"
  done
  for ((i = 0; i < N; i++)); do
    bg_wait "f$i"
    [[ $rc == 0 || $rc == 75 ]] || fail "fresh store $round: attempt $i exited $rc: $(cat -v "$T/f$i.err")"
  done
  assert_lines 1 "$T/fresh-$round.count"
done

# Round 1: no --wait. The winner blocks on the gate until all the others have been refused.
cmd=(sh -c 'echo "run $$" >> "$1"; read x < "$2"; echo "done $$"; echo "err $$" >&2' sh "$T/counter1" "$T/gate")
for ((i = 0; i < N; i++)); do
  bg "a$i" idem run -k same -- "${cmd[@]}"
done
wait_until "the command starts" test -s "$T/counter1"
wait_until "$((N - 1)) attempts are refused" exited_count a $((N - 1))
assert_status same running
# --wait that runs out while the key is still running: 75 too, after the wait.
start=$(now_ms)
capture waited idem run -k same --wait 300ms -- "${cmd[@]}"
expect_rc 75
assert_idem_error
elapsed=$(($(now_ms) - start))
((elapsed >= 300)) || fail "--wait 300ms gave up after ${elapsed} ms"
release_fifo "$T/gate"
ran=0 refused=0
for ((i = 0; i < N; i++)); do
  bg_wait "a$i"
  case $rc in
    0) ran=$((ran + 1)) winner=$i ;;
    75) refused=$((refused + 1))
        assert_idem_error "a$i" ;;
    *) fail "attempt $i exited $rc: $(cat -v "$T/a$i.err")" ;;
  esac
done
assert_eq "1 $((N - 1))" "$ran $refused" "attempts that ran / were refused with 75"
assert_lines 1 "$T/counter1"
assert_bytes "$T/a$winner.out" 'done %s\n' "$(cut -d' ' -f2 "$T/counter1")"
assert_status same succeeded

# Round 2: --wait. Every attempt ends with the winner's bytes and exit code.
cmd=(sh -c 'echo "run $$" >> "$1"; read x < "$2"; echo "done $$"; echo "err $$" >&2' sh "$T/counter2" "$T/gate")
for ((i = 0; i < N; i++)); do
  bg "w$i" idem run -k same-wait --wait 60s -- "${cmd[@]}"
done
wait_until "the command starts" test -s "$T/counter2"
release_fifo "$T/gate"
for ((i = 0; i < N; i++)); do
  bg_wait "w$i"
  expect_rc 0
  assert_same "$T/w0.out" "$T/w$i.out"
  assert_same "$T/w0.err" "$T/w$i.err"
done
assert_lines 1 "$T/counter2"
assert_bytes "$T/w0.out" 'done %s\n' "$(cut -d' ' -f2 "$T/counter2")"

# --wait on a key whose running attempt fails: the waiter claims and runs attempt 2.
fcmd=(sh -c 'echo "$IDEM_ATTEMPT" >> "$1"; if [ "$IDEM_ATTEMPT" = 1 ]; then read x < "$2"; exit 1; fi; echo second' sh "$T/fail.log" "$T/gate")
bg first idem run -k fails -- "${fcmd[@]}"
wait_until "the failing attempt starts" test -s "$T/fail.log"
bg waiter idem run -k fails -v --wait 60s -- "${fcmd[@]}"
wait_until "the waiter says it waits" file_has "$T/waiter.err" "idem: waiting"
release_fifo "$T/gate"
bg_wait first
expect_rc 1
bg_wait waiter
expect_rc 0
assert_bytes "$T/waiter.out" 'second\n'
assert_eq 1 "$(grep -c '^idem: ' "$T/waiter.err")" "idem: lines of the -v waiter"
assert_bytes "$T/fail.log" '1\n2\n'

# Volume: 8 workers run the same 40 keys in different orders with --wait; each key runs once.
worker() {  # worker ID: runs every key, records any unexpected result in $T/bad.ID
  local id=$1 j k out
  for ((j = 0; j < 40; j++)); do
    k=$(((j + id * 5) % 40))
    out=$("$IDEM_BIN" run -k "vol-$k" --wait 60s -- sh -c 'echo x >> "$1"; echo "key $2"' sh "$T/vol.$k" "$k") ||
      echo "vol-$k exited $?" >>"$T/bad.$id"
    [[ $out == "key $k" ]] || echo "vol-$k printed '$out'" >>"$T/bad.$id"
  done
}
for ((i = 0; i < 8; i++)); do bg "worker$i" worker "$i"; done
for ((i = 0; i < 8; i++)); do
  WAIT_SECONDS=120 bg_wait "worker$i"
  expect_rc 0
  [[ ! -e $T/bad.$i ]] || fail "worker $i: $(cat "$T/bad.$i")"
done
for ((k = 0; k < 40; k++)); do assert_lines 1 "$T/vol.$k"; done
integrity_ok
