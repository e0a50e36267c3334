#!/usr/bin/env bash
# contract §5, idem each: one handler run per new key of a JSON Lines stream, the message on its
# stdin; duplicates and keys done by an earlier pass are skipped; malformed lines are reported
# with their line number and never stop the rest; failures run again on the next pass unless
# --replay-failures; one key never runs twice at once with --jobs; a crash leaves the message in
# flight abandoned (refused later) and the finished ones done.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
# A killed owner is abandoned once its lease runs out on PostgreSQL (await_abandoned); SQLite
# takes no lease.
export IDEM_LEASE=2s

# reports NAME: the "idem: " lines of a capture's stderr, sorted (the reader reports malformed
# lines while a worker reports handler failures, so their relative order is not fixed).
reports() { { grep '^idem: ' "$T/$1.err" || true; } | sort; }
# sorted LINE...: the lines, sorted like reports.
sorted() { printf '%s\n' "$@" | sort; }
# assert_summary NAME TOTAL RAN FAILED SKIPPED REFUSED MALFORMED: the last stderr line
assert_summary() {
  local noun=messages
  (($2 == 1)) && noun=message
  local want="idem each: $2 $noun: $3 ran, $4 failed, $5 skipped (already done), $6 refused, $7 malformed"
  assert_eq "$want" "$(tail -n 1 "$T/$1.err")" "summary of '$1'"
}
# each_from NAME FILE ARG...: idem each ARG... with FILE on stdin, captured as NAME.
each_from() {
  local name=$1 file=$2
  shift 2
  capture "$name" idem each "$@" <"$file"
}

# --- Duplicates, malformed lines with their numbers, the message on stdin, the environment -------
# Line 4 is blank (numbered, not counted); line 11 has no final newline.
printf '%s\n' '{"id":"a","n":1}' 'not json' '{"id":"b"}' '' '{"id":"a","n":1}' '{"other":1}' \
  '{"id":7}' '{"id":7.5}' '{"id":null}' '{"id":""}' >"$T/mixed.jsonl"
printf '%s' '{"id":"c"}' >>"$T/mixed.jsonl"
handler=(sh -c 'echo "$IDEM_KEY" >> "$1/counter"
  { printf "%s|%s|%s|" "$IDEM_KEY" "$IDEM_ATTEMPT" "$IDEM_LINE"; cat; } > "$1/msg.$IDEM_KEY"
  echo "out $IDEM_KEY"' sh "$T")
each_from mixed "$T/mixed.jsonl" --key-field /id -- "${handler[@]}"
expect_rc 1
assert_bytes "$T/mixed.out" 'out a\nout b\nout 7\nout c\n'
assert_bytes "$T/counter" 'a\nb\n7\nc\n'
# The handler reads the line as received plus a newline, and sees its key, attempt and line.
assert_bytes "$T/msg.a" 'a|1|1|{"id":"a","n":1}\n'
assert_bytes "$T/msg.b" 'b|1|3|{"id":"b"}\n'
assert_bytes "$T/msg.7" '7|1|7|{"id":7}\n'
assert_bytes "$T/msg.c" 'c|1|11|{"id":"c"}\n'
assert_eq "$(sorted \
  "idem: line 2: not JSON" \
  "idem: line 6: no value at '/id' (key 'id' not found)" \
  "idem: line 8: the value at '/id' is a number with a fraction or exponent (or past 64 bits); a key must be a string or an integer" \
  "idem: line 9: the value at '/id' is null; a key must be a string or an integer" \
  "idem: line 10: key is empty")" "$(reports mixed)" "malformed-line reports"
assert_lines 6 "$T/mixed.err"
assert_summary mixed 10 4 0 1 0 5
assert_status a succeeded
assert_status 7 succeeded
assert_eq "each 1 1" "$(idem show a --json | jsonq /kind /attempt /request/line | tr '\t' ' ')" \
  "kind, attempt and line of a's record"

# Second pass: every key is done, nothing runs; the malformed lines still make it exit 1.
each_from mixed2 "$T/mixed.jsonl" --key-field /id -- "${handler[@]}"
expect_rc 1
assert_empty "$T/mixed2.out"
assert_bytes "$T/counter" 'a\nb\n7\nc\n'
assert_lines 6 "$T/mixed2.err"
assert_summary mixed2 10 0 0 5 0 5

# A clean stream exits 0; handler stderr passes through; only the summary is idem's.
printf '%s\n' '{"id":"x1"}' '{"id":"x2"}' '{"id":"x1"}' >"$T/clean.jsonl"
warn=(sh -c 'echo "warn $IDEM_KEY" >&2; echo "done $IDEM_KEY"')
each_from clean "$T/clean.jsonl" --key-field /id -- "${warn[@]}"
expect_rc 0
assert_bytes "$T/clean.out" 'done x1\ndone x2\n'
assert_bytes "$T/clean.err" 'warn x1\nwarn x2\nidem each: 3 messages: 2 ran, 0 failed, 1 skipped (already done), 0 refused, 0 malformed\n'
# -v names every skipped message; nothing runs.
each_from clean-v "$T/clean.jsonl" --key-field /id -v -- "${warn[@]}"
expect_rc 0
assert_empty "$T/clean-v.out"
assert_bytes "$T/clean-v.err" "idem: line 1, key 'x1': already done, skipped\nidem: line 2, key 'x2': already done, skipped\nidem: line 3, key 'x1': already done, skipped\nidem each: 3 messages: 0 ran, 0 failed, 3 skipped (already done), 0 refused, 0 malformed\n"
# An empty stream is clean.
each_from empty /dev/null --key-field /id -- "${warn[@]}"
expect_rc 0
assert_empty "$T/empty.out"
assert_bytes "$T/empty.err" 'idem each: 0 messages: 0 ran, 0 failed, 0 skipped (already done), 0 refused, 0 malformed\n'
# The pointer follows RFC 6901 (~1 is '/'); an integer key is its decimal text.
printf '%s\n' '{"a":{"b/c":[{"k":5}]}}' >"$T/deep.jsonl"
each_from deep "$T/deep.jsonl" --key-field '/a/b~1c/0/k' -- sh -c 'printf "%s" "$IDEM_KEY"'
expect_rc 0
assert_bytes "$T/deep.out" '5'
assert_status 5 succeeded

# --- Failures: reported, run again on the next pass, final with --replay-failures ---------------
printf '%s\n' '{"id":"f"}' '{"id":"ok"}' >"$T/fail.jsonl"
fhandler=(sh -c 'echo "$IDEM_KEY $IDEM_ATTEMPT" >> "$1/attempts"
  [ "$IDEM_KEY" != f ] || { echo "fail $IDEM_ATTEMPT" >&2; exit 3; }' sh "$T")
each_from fail1 "$T/fail.jsonl" --key-field /id -- "${fhandler[@]}"
expect_rc 1
assert_empty "$T/fail1.out"
assert_bytes "$T/fail1.err" "fail 1\nidem: line 1, key 'f': handler exited 3\nidem each: 2 messages: 1 ran, 1 failed, 0 skipped (already done), 0 refused, 0 malformed\n"
assert_status f failed
each_from fail2 "$T/fail.jsonl" --key-field /id -- "${fhandler[@]}"
expect_rc 1
assert_bytes "$T/fail2.err" "fail 2\nidem: line 1, key 'f': handler exited 3\nidem each: 2 messages: 0 ran, 1 failed, 1 skipped (already done), 0 refused, 0 malformed\n"
each_from fail3 "$T/fail.jsonl" --key-field /id --replay-failures -- "${fhandler[@]}"
expect_rc 0
assert_empty "$T/fail3.out"
assert_bytes "$T/fail3.err" 'idem each: 2 messages: 0 ran, 0 failed, 2 skipped (already done), 0 refused, 0 malformed\n'
assert_bytes "$T/attempts" 'f 1\nok 1\nf 2\n'
assert_eq "failed 3 2" "$(idem show f --json | jsonq /status /exit_code /attempt | tr '\t' ' ')" "record of f"
# With --replay-failures from the first pass the failure is final at once.
printf '%s\n' '{"id":"f2"}' >"$T/f2.jsonl"
f2handler=(sh -c 'echo "$IDEM_KEY $IDEM_ATTEMPT" >> "$1/attempts2"; exit 4' sh "$T")
each_from f2a "$T/f2.jsonl" --key-field /id --replay-failures -- "${f2handler[@]}"
expect_rc 1
assert_bytes "$T/f2a.err" "idem: line 1, key 'f2': handler exited 4\nidem each: 1 message: 0 ran, 1 failed, 0 skipped (already done), 0 refused, 0 malformed\n"
each_from f2b "$T/f2.jsonl" --key-field /id --replay-failures -- "${f2handler[@]}"
expect_rc 0
assert_bytes "$T/f2b.err" 'idem each: 1 message: 0 ran, 0 failed, 1 skipped (already done), 0 refused, 0 malformed\n'
assert_bytes "$T/attempts2" 'f2 1\n'
# The policy is recorded with the outcome: a later run without the flag skips it too.
each_from f2c "$T/f2.jsonl" --key-field /id -- "${f2handler[@]}"
expect_rc 0
assert_bytes "$T/f2c.err" 'idem each: 1 message: 0 ran, 0 failed, 1 skipped (already done), 0 refused, 0 malformed\n'
assert_bytes "$T/attempts2" 'f2 1\n'
assert_eq "failed true" "$(idem show f2 --json | jsonq /status /replay_failures | tr '\t' ' ')" "record of f2"
# -q: no per-message reports, still the handler's own stderr, malformed lines and the summary.
printf '%s\n' '{"id":"q1"}' '{oops' >"$T/q.jsonl"
each_from q "$T/q.jsonl" --key-field /id -q -- sh -c 'echo "q says no" >&2; exit 2'
expect_rc 1
assert_eq "idem: line 2: not JSON" "$(reports q)" "reports with -q"
assert_eq "q says no" "$(grep -v '^idem' "$T/q.err")" "handler stderr with -q"
assert_summary q 2 0 1 0 0 1
# A handler killed by a signal counts as failed (128+N); one that cannot start too (127).
printf '%s\n' '{"id":"sig"}' >"$T/sig.jsonl"
each_from sig "$T/sig.jsonl" --key-field /id -- sh -c 'kill -KILL $$'
expect_rc 1
assert_bytes "$T/sig.err" "idem: line 1, key 'sig': handler exited 137\nidem each: 1 message: 0 ran, 1 failed, 0 skipped (already done), 0 refused, 0 malformed\n"
printf '%s\n' '{"id":"nx"}' >"$T/nx.jsonl"
each_from nx "$T/nx.jsonl" --key-field /id -- "$T/no-such-handler"
expect_rc 1
assert_bytes "$T/nx.err" "idem: line 1, key 'nx': handler could not start: No such file or directory\nidem each: 1 message: 0 ran, 1 failed, 0 skipped (already done), 0 refused, 0 malformed\n"
assert_eq "failed 127" "$(idem show nx --json | jsonq /status /exit_code | tr '\t' ' ')" "record of nx"

# --- Conflicts: a key already used with another message, or another handler, is refused ---------
printf '%s\n' '{"id":"a","n":2}' '{"id":"b"}' >"$T/conflict.jsonl"
each_from conflict "$T/conflict.jsonl" --key-field /id -- "${handler[@]}"
expect_rc 1
assert_empty "$T/conflict.out"
assert_bytes "$T/conflict.err" "idem: line 1, key 'a': the key was used with another message or command\nidem each: 2 messages: 0 ran, 0 failed, 1 skipped (already done), 1 refused, 0 malformed\n"
each_from conflict2 "$T/clean.jsonl" --key-field /id -- sh -c 'echo another handler'
expect_rc 1
assert_empty "$T/conflict2.out"
assert_summary conflict2 3 0 0 0 3 0
assert_bytes "$T/counter" 'a\nb\n7\nc\n'

# --- TTL: a done key runs again once it expired ----------------------------------------------
printf '%s\n' '{"id":"short"}' >"$T/ttl.jsonl"
thandler=(sh -c 'echo "$IDEM_KEY" >> "$1/ttl-runs"' sh "$T")
each_from ttl1 "$T/ttl.jsonl" --key-field /id --ttl 1s -- "${thandler[@]}"
expect_rc 0
each_from ttl2 "$T/ttl.jsonl" --key-field /id --ttl 1s -- "${thandler[@]}"
assert_summary ttl2 1 0 0 1 0 0
wait_until "the record of 'short' expires" status_is short expired
each_from ttl3 "$T/ttl.jsonl" --key-field /id --ttl 1s -- "${thandler[@]}"
expect_rc 0
assert_summary ttl3 1 1 0 0 0 0
assert_bytes "$T/ttl-runs" 'short\nshort\n'

# --- --jobs 4: 40 messages over 10 keys; every key once, never two handlers of one key at once ---
# The handler logs "start KEY ATTEMPT" and "end KEY" under flock. Its first argument is how many
# handlers must have started before it goes on: 4 proves that four ran at once (with fewer in
# parallel it gives up and fails). It prints two lines a moment apart: each message's output must
# come out whole.
cat >"$T/jobs-handler.sh" <<'EOF'
#!/bin/sh
log=$1 barrier=$2 code=$3
{ flock 9; echo "start $IDEM_KEY $IDEM_ATTEMPT" >> "$log"; } 9>>"$log.lock"
n=0
while [ "$(grep -c '^start' "$log")" -lt "$barrier" ]; do
  n=$((n + 1))
  if [ "$n" -gt 2000 ]; then echo "fewer than $barrier handlers ran at once" >&2; exit 9; fi
  sleep 0.01
done
echo "$IDEM_KEY a"
sleep 0.01  # not synchronisation: a gap inside one message's output
echo "$IDEM_KEY b"
{ flock 9; echo "end $IDEM_KEY" >> "$log"; } 9>>"$log.lock"
exit "$code"
EOF
# check_log LOG: per key, starts and ends alternate, and nothing is left open.
check_log() {
  awk '$1 == "start" { if (open[$2]) { print "line " NR ": " $2 " started while running"; bad = 1 }; open[$2] = 1 }
       $1 == "end" { if (!open[$2]) { print "line " NR ": " $2 " ended without a start"; bad = 1 }; open[$2] = 0 }
       END { for (k in open) if (open[k]) { print k " never ended"; bad = 1 }; exit bad }' "$1" >"$T/check.txt" ||
    fail "$1: $(head -n 5 "$T/check.txt")"
}
# check_whole NAME: stdout holds each message's two lines together.
check_whole() {
  awk 'NR % 2 == 1 { k = $1; if ($2 != "a") bad = 1 } NR % 2 == 0 { if ($1 != k || $2 != "b") bad = 1 }
       END { exit bad || NR % 2 }' "$T/$1.out" || fail "output of '$1' is interleaved: $(head -c 500 "$T/$1.out")"
}
for ((i = 0; i < 40; i++)); do printf '{"id":"k%d","seq":"same"}\n' $((i % 10)); done >"$T/jobs.jsonl"
each_from jobs "$T/jobs.jsonl" --key-field /id --jobs 4 -- sh "$T/jobs-handler.sh" "$T/jobs.log" 4 0
expect_rc 0
assert_bytes "$T/jobs.err" 'idem each: 40 messages: 10 ran, 0 failed, 30 skipped (already done), 0 refused, 0 malformed\n'
check_log "$T/jobs.log"
assert_eq "$(for k in {0..9}; do echo "k$k 1"; done)" \
  "$(awk '$1 == "start" { print $2, $3 }' "$T/jobs.log" | sort)" "keys started (each exactly once)"
assert_lines 20 "$T/jobs.out"
check_whole jobs
assert_eq "$(for k in {0..9}; do echo "k$k"; done)" "$(awk '{ print $1 }' "$T/jobs.out" | sort -u)" \
  "keys in the output"
# Second pass: all skipped, nothing runs.
each_from jobs2 "$T/jobs.jsonl" --key-field /id --jobs 4 -- sh "$T/jobs-handler.sh" "$T/jobs.log" 4 0
expect_rc 0
assert_empty "$T/jobs2.out"
assert_bytes "$T/jobs2.err" 'idem each: 40 messages: 0 ran, 0 failed, 40 skipped (already done), 0 refused, 0 malformed\n'
assert_lines 20 "$T/jobs.log"

# Four copies of each key in a row and a handler that always fails: every copy runs (a failure is
# not done), but the four workers holding the same key take turns: attempts 1, 2, 3, 4 in order.
for ((i = 0; i < 40; i++)); do printf '{"id":"r%d"}\n' $((i / 4)); done >"$T/rows.jsonl"
each_from rows "$T/rows.jsonl" --key-field /id --jobs 4 -- sh "$T/jobs-handler.sh" "$T/rows.log" 0 5
expect_rc 1
assert_summary rows 40 0 40 0 0 0
assert_eq 40 "$(grep -c "handler exited 5$" "$T/rows.err")" "failure reports"
check_log "$T/rows.log"
for ((k = 0; k < 10; k++)); do
  assert_eq "1 2 3 4" "$(awk -v k="r$k" '$1 == "start" && $2 == k { printf "%s%s", sep, $3; sep = " " }' "$T/rows.log")" \
    "attempts of r$k in order"
done
assert_lines 80 "$T/rows.out"
check_whole rows

# --- A crash mid-stream ---------------------------------------------------------------------------
# One worker; the handler of "block" waits on a FIFO while its gate file exists.
printf '%s\n' '{"id":"c1"}' '{"id":"c2"}' '{"id":"block"}' '{"id":"c4"}' '{"id":"c5"}' >"$T/crash.jsonl"
mkfifo "$T/gate"
chandler=(sh -c 'echo "$IDEM_KEY $IDEM_ATTEMPT" >> "$1/crash.log"
  if [ "$IDEM_KEY" = block ] && [ -p "$1/gate" ]; then echo $$ > "$1/block.pid"; read x < "$1/gate"; fi' sh "$T")
track_pid_file "$T/block.pid"
bg crash sh -c 'exec "$@" < "$0"' "$T/crash.jsonl" "$IDEM_BIN" each --key-field /id -- "${chandler[@]}"
wait_until "the handler of 'block' waits" test -s "$T/block.pid"
assert_status block running
# Another consumer meanwhile: the key runs in another live process, refused, not run.
printf '%s\n' '{"id":"block"}' >"$T/block.jsonl"
each_from other "$T/block.jsonl" --key-field /id -- "${chandler[@]}"
expect_rc 1
assert_bytes "$T/other.err" "idem: line 1, key 'block': running in another process; not run\nidem each: 1 message: 0 ran, 0 failed, 0 skipped (already done), 1 refused, 0 malformed\n"
kill -KILL "$(bg_pid crash)"
bg_wait crash
expect_rc 137
wait_until "the handler dies with idem each" pid_gone "$(cat "$T/block.pid")"
rm "$T/gate"
assert_status c1 succeeded
assert_status c2 succeeded
await_abandoned block
assert_status c4 none
assert_status c5 none
# Restart: the abandoned message is refused and not run, the finished ones skipped, the rest run.
each_from restart "$T/crash.jsonl" --key-field /id -- "${chandler[@]}"
expect_rc 1
assert_bytes "$T/restart.err" "idem: line 3, key 'block': an earlier attempt was abandoned mid-run; not run (see --retry-abandoned)\nidem each: 5 messages: 2 ran, 0 failed, 2 skipped (already done), 1 refused, 0 malformed\n"
assert_bytes "$T/crash.log" 'c1 1\nc2 1\nblock 1\nc4 1\nc5 1\n'
each_from restart2 "$T/crash.jsonl" --key-field /id -- "${chandler[@]}"
expect_rc 1
assert_summary restart2 5 0 0 4 1 0
# --retry-abandoned runs it again, as attempt 2.
each_from restart3 "$T/crash.jsonl" --key-field /id --retry-abandoned -- "${chandler[@]}"
expect_rc 0
assert_summary restart3 5 1 0 4 0 0
assert_bytes "$T/crash.log" 'c1 1\nc2 1\nblock 1\nc4 1\nc5 1\nblock 2\n'
assert_eq "succeeded 2" "$(idem show block --json | jsonq /status /attempt | tr '\t' ' ')" "record of block"
# idem rm is the other way out: the message runs again, as a new key.
idem rm block >/dev/null
each_from restart4 "$T/crash.jsonl" --key-field /id -- "${chandler[@]}"
expect_rc 0
assert_summary restart4 5 1 0 4 0 0
assert_bytes "$T/crash.log" 'c1 1\nc2 1\nblock 1\nc4 1\nc5 1\nblock 2\nblock 1\n'
integrity_ok

# --retry-abandoned never overlaps what the abandoned handler left running in its process group.
printf '%s\n' '{"id":"left"}' >"$T/left.jsonl"
mkfifo "$T/left-gate"
lhandler=(sh -c 'if [ -p "$1/left-gate" ]; then sleep 1000 & echo $! > "$1/left-child.pid"
  echo $$ > "$1/left.pid"; read x < "$1/left-gate"; fi; echo "left $IDEM_ATTEMPT"' sh "$T")
track_pid_file "$T/left-child.pid"
track_pid_file "$T/left.pid"
bg left sh -c 'exec "$@" < "$0"' "$T/left.jsonl" "$IDEM_BIN" each --key-field /id -- "${lhandler[@]}"
wait_until "the handler of 'left' waits" test -s "$T/left.pid"
kill -KILL "$(bg_pid left)"
bg_wait left
wait_until "the handler dies with idem each" pid_gone "$(cat "$T/left.pid")"
rm "$T/left-gate"
pid_gone "$(cat "$T/left-child.pid")" && fail "the handler's background child should outlive it"
await_abandoned left
each_from left2 "$T/left.jsonl" --key-field /id --retry-abandoned -- "${lhandler[@]}"
expect_rc 1
assert_bytes "$T/left2.err" "idem: line 1, key 'left': an earlier attempt was abandoned mid-run and processes of it are still alive; not run\nidem each: 1 message: 0 ran, 0 failed, 0 skipped (already done), 1 refused, 0 malformed\n"
pid_gone "$(cat "$T/left-child.pid")" && fail "a refused retry must not touch the child"
await_abandoned left
kill -KILL "$(cat "$T/left-child.pid")"
wait_until "the child is gone" pid_gone "$(cat "$T/left-child.pid")"
each_from left3 "$T/left.jsonl" --key-field /id --retry-abandoned -- "${lhandler[@]}"
expect_rc 0
assert_bytes "$T/left3.out" 'left 2\n'
assert_status left succeeded

# --- --timeout, --kill-after, --max-output: as for idem run, per message -------------------------
printf '%s\n' '{"id":"slow"}' '{"id":"quick"}' >"$T/slow.jsonl"
shandler=(sh -c '[ "$IDEM_KEY" = quick ] || exec sleep 1000; echo quick' sh)
each_from slow "$T/slow.jsonl" --key-field /id --timeout 300ms -- "${shandler[@]}"
expect_rc 1
assert_bytes "$T/slow.out" 'quick\n'
assert_bytes "$T/slow.err" "idem: line 1, key 'slow': handler timed out after 300ms (exit 124)\nidem each: 2 messages: 1 ran, 1 failed, 0 skipped (already done), 0 refused, 0 malformed\n"
assert_eq "failed true stopped by its timeout" \
  "$(idem show slow --json | jsonq /status /timed_out /note | tr '\t' ' ')" "record of slow"
# A handler that ignores TERM is killed --kill-after later; the message failed by its timeout.
printf '%s\n' '{"id":"stubborn"}' >"$T/stubborn.jsonl"
each_from stubborn "$T/stubborn.jsonl" --key-field /id --timeout 200ms --kill-after 100ms -- \
  sh -c 'trap "" TERM; while :; do sleep 1; done'
expect_rc 1
assert_bytes "$T/stubborn.err" "idem: line 1, key 'stubborn': handler timed out after 200ms (exit 124)\nidem each: 1 message: 0 ran, 1 failed, 0 skipped (already done), 0 refused, 0 malformed\n"
assert_eq "failed true" "$(idem show stubborn --json | jsonq /status /timed_out | tr '\t' ' ')" "record of stubborn"
# --max-output caps what is stored; the handler's output is still written whole.
printf '%s\n' '{"id":"big"}' >"$T/big.jsonl"
each_from big "$T/big.jsonl" --key-field /id --max-output 10 -- sh -c 'printf 0123456789abcdef; printf xyz >&2'
expect_rc 0
assert_bytes "$T/big.out" '0123456789abcdef'
assert_bytes "$T/big.err" 'xyzidem each: 1 message: 1 ran, 0 failed, 0 skipped (already done), 0 refused, 0 malformed\n'
assert_eq "true 10" "$(idem show big --json | jsonq /truncated /output_bytes | tr '\t' ' ')" "record of big"
idem show big --stdout >"$T/big.stored"
assert_bytes "$T/big.stored" '0123456789'
# The default cap is run's, 16MiB: a smaller output is stored whole.
printf '%s\n' '{"id":"small"}' >"$T/small.jsonl"
each_from small "$T/small.jsonl" --key-field /id -- sh -c 'printf 0123456789abcdef'
assert_eq "false 16" "$(idem show small --json | jsonq /truncated /output_bytes | tr '\t' ' ')" "record of small"

# --- Usage and store errors: one "idem:" line, nothing runs --------------------------------------
usage() {  # usage NAME WANT_MESSAGE ARG...
  local name=$1 want=$2
  shift 2
  each_from "$name" "$T/clean.jsonl" "$@"
  expect_rc 64
  assert_idem_error
  assert_bytes "$T/$name.err" '%s\n' "$want"
}
ran=(sh -c 'echo x >> "$1/usage-ran"' sh "$T")
usage u-pointer "idem: bad --key-field 'id': a JSON Pointer starts with '/'" --key-field id -- "${ran[@]}"
usage u-nocmd "idem: missing command: idem each --key-field POINTER -- COMMAND [ARG...]" --key-field /id
usage u-nocmd2 "idem: missing command: idem each --key-field POINTER -- COMMAND [ARG...]" --key-field /id --
usage u-nofield "idem: --key-field is required (see idem --help)" -- "${ran[@]}"
usage u-jobs "idem: --jobs: Value 0 not in range 1 to 256 (see idem --help)" --key-field /id --jobs 0 -- "${ran[@]}"
usage u-ttl "idem: bad duration for --ttl: 'soon' (use e.g. 90s, 15m, 24h, 7d or seconds)" --key-field /id --ttl soon -- "${ran[@]}"
usage u-timeout "idem: bad duration for --timeout: 'soon' (use e.g. 90s, 15m, 24h, 7d or seconds)" --key-field /id --timeout soon -- "${ran[@]}"
usage u-timeout0 "idem: --timeout must be above zero" --key-field /id --timeout 0 -- "${ran[@]}"
usage u-ttl0 "idem: --ttl must be above zero" --key-field /id --ttl 0 -- "${ran[@]}"
usage u-kill "idem: bad duration for --kill-after: 'x' (use e.g. 90s, 15m, 24h, 7d or seconds)" --key-field /id --kill-after x -- "${ran[@]}"
[[ ! -e $T/usage-ran ]] || fail "a usage error ran the handler"
each_from u-max "$T/clean.jsonl" --key-field /id --max-output lots -- "${ran[@]}"
expect_rc 64
assert_idem_error
each_from u-max2 "$T/clean.jsonl" --key-field /id --max-output 2GiB -- "${ran[@]}"
expect_rc 64
assert_idem_error
[[ ! -e $T/usage-ran ]] || fail "a usage error ran the handler"
printf 'not a directory' >"$T/plain"
# A store that cannot be opened: a file for a folder, or on PostgreSQL a server nobody listens on.
unusable=(IDEM_DB="$T/plain/idem.db")
[[ -z ${IDEM_STORE:-} ]] || unusable=("IDEM_STORE=postgresql://idem@127.0.0.1:1/none?connect_timeout=5")
capture store env "${unusable[@]}" "$IDEM_BIN" each --key-field /id -- "${ran[@]}" <"$T/clean.jsonl"
expect_rc 74
assert_idem_error
[[ ! -e $T/usage-ran ]] || fail "a store error ran the handler"
