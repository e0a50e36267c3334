#!/usr/bin/env bash
# Where stdout and stderr are one file or pipe (`>log 2>&1`, `2>&1 | ...`) the command gets one
# pipe for both: its writes reach it, and the record, in the exact order it made them, stored as
# stdout. Apart, each stream keeps its own order. What a background process writes after the
# command exited is read until it closes its end, for --drain at most (default 5s); past that the
# pipes are closed and a writer that goes on gets SIGPIPE.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

# Many pairs written with no pause between them: read from two pipes in turn, they come out
# grouped by stream.
pieces=()
for i in $(seq 1 40); do interleave_pair "o$i\n" "e$i\n"; done
cmd=("$(helper interleave)" --no-wait "${pieces[@]}")

# --- One file for both (2>&1 into a file, and into a pipe): the exact order -------------------
rc=0
idem run -k file -- "${cmd[@]}" >"$T/file.live" 2>&1 || rc=$?
assert_eq 0 "$rc" "exit code under >file 2>&1"
assert_same "$T/want.combined" "$T/file.live"
idem show file --stdout >"$T/file.stored"
assert_same "$T/want.combined" "$T/file.stored"
idem show file --stderr >"$T/file.none"
assert_empty "$T/file.none"
rc=0
idem run -k file -- "${cmd[@]}" >"$T/file.replay" 2>&1 || rc=$?
assert_eq 0 "$rc" "exit code of the replay"
assert_same "$T/want.combined" "$T/file.replay"

rc=0
idem run -k pipe -- "${cmd[@]}" 2>&1 | cat >"$T/pipe.live" || rc=$?
assert_eq 0 "$rc" "exit code under 2>&1 | cat"
assert_same "$T/want.combined" "$T/pipe.live"
idem show pipe --stdout >"$T/pipe.stored"
assert_same "$T/want.combined" "$T/pipe.stored"

# Appending to one file (>>log 2>&1, as in a crontab) is the same open file too.
: >"$T/log"
idem run -k append -- "${cmd[@]}" >>"$T/log" 2>&1
assert_same "$T/want.combined" "$T/log"

# --- Apart: each stream in its own order, live, stored and replayed ------------------------------
for name in apart apart-replay; do
  capture "$name" idem run -k apart -- "${cmd[@]}"
  expect_rc 0
  assert_same "$T/want.out" "$T/$name.out"
  assert_same "$T/want.err" "$T/$name.err"
done
idem show apart --stderr >"$T/apart.stored.err"
assert_same "$T/want.err" "$T/apart.stored.err"

# --- A background writer after the command exited: captured, then replayed ---------------------
# It waits until idem has reaped the command (its parent), then writes and exits.
late=(sh -c 'parent=$$
  (while kill -0 "$parent" 2>/dev/null; do sleep 0.01; done; echo late; echo late-err >&2) &
  echo early')
capture late idem run -k late -- "${late[@]}"
expect_rc 0
assert_bytes "$T/late.out" 'early\nlate\n'
assert_bytes "$T/late.err" 'late-err\n'
capture late-replay idem run -k late -- "${late[@]}"
expect_rc 0
assert_bytes "$T/late-replay.out" 'early\nlate\n'
assert_bytes "$T/late-replay.err" 'late-err\n'

# --- The bound: a writer that never stops, and one that holds the pipe without writing --------
# idem returns about --drain after the command exited (asserted only to return, well within the
# test's patience), then closes the pipes: the endless writer dies of SIGPIPE.
forever=(sh -c 'echo $$ > "$1"; exec sh -c "while :; do echo tick; sleep 0.02; done"' sh
  "$T/writer.pid")
endless=(sh -c '"$@" & echo started' sh "${forever[@]}")
track_pid_file "$T/writer.pid"
rc=0
timeout 60 "$IDEM_BIN" run -k endless --drain 1s -- "${endless[@]}" >"$T/endless.out" 2>"$T/endless.err" ||
  rc=$?
assert_eq 0 "$rc" "exit code with a writer that never stops (124: idem did not return)"
grep -qx started "$T/endless.out" || fail "endless.out: $(head -c 200 "$T/endless.out")"
# The writer's lines, one each 20 ms, came on for about a second after the command exited.
(($(grep -cx tick "$T/endless.out") > 5)) || fail "the writer's lines were not kept after the exit"
idem show endless --stdout >"$T/endless.stored"
assert_same "$T/endless.out" "$T/endless.stored"
writer=$(<"$T/writer.pid")
wait_until "the endless writer dies once its pipe is closed" pid_gone "$writer"

silent=(sh -c 'sleep 1000 & echo $! > "$1"; echo started' sh)
track_pid_file "$T/sleeper.pid"
track_pid_file "$T/sleeper0.pid"
rc=0
timeout 60 "$IDEM_BIN" run -k silent --drain 200ms -- "${silent[@]}" "$T/sleeper.pid" \
  >"$T/silent.out" || rc=$?
assert_eq 0 "$rc" "exit code with a silent holder of the pipe (124: idem did not return)"
assert_bytes "$T/silent.out" 'started\n'
# --drain 0 stops at once, as before there was a drain.
rc=0
timeout 60 "$IDEM_BIN" run -k silent0 --drain 0 -- "${silent[@]}" "$T/sleeper0.pid" \
  >"$T/silent0.out" || rc=$?
assert_eq 0 "$rc" "exit code with --drain 0 (124: idem did not return)"
assert_bytes "$T/silent0.out" 'started\n'

capture bad idem run -k bad --drain soon -- true
expect_rc 64
assert_idem_error
