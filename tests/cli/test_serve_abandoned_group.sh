#!/usr/bin/env bash
# A hook with retry_abandoned never retries a delivery while processes of its abandoned attempt
# are still alive (contract §8.3): kill -9 of the daemon mid-handler leaves the handler's background
# job running; the redelivery gets 409 with Retry-After until that job ends, then runs attempt 2.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
# A killed owner is abandoned once its lease runs out on PostgreSQL (await_abandoned); SQLite
# takes no lease.
export IDEM_LEASE=2s

mkfifo "$T/gate" "$T/job-gate"
cat >"$T/handler.sh" <<'EOF2'
#!/bin/sh
d=$IDEM_TEST_DIR
echo "$IDEM_KEY $IDEM_ATTEMPT" >> "$d/handler.log"
if [ "$IDEM_ATTEMPT" = 1 ]; then
  # A background job in the handler's process group that outlives the handler.
  (trap '' TERM HUP; read x < "$d/job-gate") &
  echo $! > "$d/job.pid"
  echo $$ > "$d/handler.pid"
  read x < "$d/gate"
fi
echo "done $IDEM_ATTEMPT"
EOF2
chmod +x "$T/handler.sh"
printf '{"hooks": [{"path": "/hooks/r", "command": ["%s"], "key": {"header": "X-Key"}, "retry_abandoned": true}]}\n' \
  "$T/handler.sh" >"$T/serve.json"
start_daemon "$T/serve.json"

RESP=victim bg victim post /hooks/r 'cut off' 'X-Key: k1'
track_pid_file "$T/job.pid"
track_pid_file "$T/handler.pid"
wait_until "the handler starts its job" test -s "$T/handler.pid"
wait_until "the job's pid is written" test -s "$T/job.pid"
kill_daemon
bg_wait victim
wait_until "the handler is gone" pid_gone "$(cat "$T/handler.pid")"
pid_gone "$(cat "$T/job.pid")" && fail "the background job should have outlived the daemon"
await_abandoned '/hooks/r#k1'

start_daemon "$T/serve.json"
post /hooks/r 'cut off' 'X-Key: k1'
expect_problem 409
has_header Retry-After || fail "409 without Retry-After"
grep -q 'still running' "$T/resp.body" || fail "the 409 does not say processes are still running: $(cat "$T/resp.body")"
assert_eq 1 "$(log_count "$T/handler.log" "k1 ")" "runs while the job lives"
await_abandoned '/hooks/r#k1'

release_fifo "$T/job-gate"
wait_until "the background job ends" pid_gone "$(cat "$T/job.pid")"
post /hooks/r 'cut off' 'X-Key: k1'
expect_http 200
assert_body 'done 2\n'
assert_status '/hooks/r#k1' succeeded
assert_eq 2 "$(log_count "$T/handler.log" "k1 ")" "runs after the job ended"
stop_daemon

# A delivery whose handler failed but left a job running is not run again while the job lives
# either: 409 with Retry-After, then attempt 2 once the job has ended.
mkfifo "$T/job2-gate"
cat >"$T/failing.sh" <<'EOF2'
#!/bin/sh
d=$IDEM_TEST_DIR
echo "$IDEM_KEY $IDEM_ATTEMPT" >> "$d/failing.log"
if [ "$IDEM_ATTEMPT" = 1 ]; then
  (trap '' TERM HUP; read x < "$d/job2-gate") >/dev/null 2>&1 &
  echo $! > "$d/job2.pid"
  exit 1
fi
echo "done $IDEM_ATTEMPT"
EOF2
chmod +x "$T/failing.sh"
printf '{"hooks": [{"path": "/hooks/f", "command": ["%s"], "key": {"header": "X-Key"}}]}\n' \
  "$T/failing.sh" >"$T/failing.json"
start_daemon "$T/failing.json"
track_pid_file "$T/job2.pid"
post /hooks/f 'fails' 'X-Key: f1'
assert_status '/hooks/f#f1' failed
pid_gone "$(cat "$T/job2.pid")" && fail "the failed handler's job should outlive it"
post /hooks/f 'fails' 'X-Key: f1'
expect_problem 409
has_header Retry-After || fail "409 without Retry-After"
grep -q 'still running' "$T/resp.body" || fail "the 409 does not say processes are still running: $(cat "$T/resp.body")"
assert_eq 1 "$(log_count "$T/failing.log" "f1 ")" "runs while the failed handler's job lives"
release_fifo "$T/job2-gate"
wait_until "the failed handler's job ends" pid_gone "$(cat "$T/job2.pid")"
post /hooks/f 'fails' 'X-Key: f1'
expect_http 200
assert_body 'done 2\n'
assert_eq 2 "$(log_count "$T/failing.log" "f1 ")" "runs after the job ended"
stop_daemon
