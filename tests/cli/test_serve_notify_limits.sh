#!/usr/bin/env bash
# The daemon's notify commands are bounded: at most "notifications.max_running" run at once, at
# most max_queue wait, the rest are dropped (logged, counted in /metrics); what a notify command
# leaves running ends with it at its timeout; one that starts during the SIGTERM drain is stopped
# before the grace runs out, with its log line; the proxy tells an upstream's 5xx it does not
# store.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

# Each slow notify command holds a directory of its own in LIVE while it runs, notes in SEEN how
# many it found there (itself included), and waits until RELEASE exists.
export LIVE=$T/live SEEN=$T/seen RELEASE=$T/release PROXY_NOTES=$T/proxy_notes
mkdir "$LIVE" "$PROXY_NOTES"
cat >"$T/slow.sh" <<'EOF2'
#!/bin/sh
me=$(mktemp -d "$LIVE/n.XXXXXX")
ls "$LIVE" | wc -l >>"$SEEN"
while [ ! -e "$RELEASE" ]; do sleep 0.02; done
rmdir "$me"
EOF2
chmod +x "$T/slow.sh"
# A notify command that ignores TERM and leaves a child that ignores it too (its pid in
# BG_PIDS.<its argument>), then exits.
export BG_PIDS=$T/bg.pid
cat >"$T/stubborn.sh" <<'EOF2'
#!/bin/sh
trap "" TERM
sleep 60 &
echo $! >"$BG_PIDS.$1.tmp"
mv "$BG_PIDS.$1.tmp" "$BG_PIDS.$1"
echo bg
EOF2
chmod +x "$T/stubborn.sh"
# The late hook's handler fails once GO exists (its pid in late.pid).
cat >"$T/late.sh" <<'EOF2'
#!/bin/sh
echo $$ >"$LATE_PID"
while [ ! -e "$GO" ]; do sleep 0.02; done
exit 1
EOF2
chmod +x "$T/late.sh"
export GO=$T/go LATE_PID=$T/late.pid
track_pid_file "$T/late.pid"
start_upstream up
cat >"$T/serve.json" <<EOF2
{"notifications": {"max_running": 2, "max_queue": 3},
 "hooks": [
  {"path": "/hooks/many", "command": ["false"], "key": {"header": "X-Key"},
   "notify": {"command": ["$T/slow.sh"], "timeout": "20s"}},
  {"path": "/hooks/bg", "command": ["false"], "key": {"header": "X-Key"},
   "notify": {"command": ["$T/stubborn.sh", "bg"], "timeout": "1s"}},
  {"path": "/hooks/late", "command": ["$T/late.sh"], "key": {"header": "X-Key"},
   "notify": {"command": ["$T/stubborn.sh", "late"]}}
 ],
 "proxy": {"upstream": "$UURL",
           "notify": {"command": "cat > \"\$PROXY_NOTES/\$(ls \"\$PROXY_NOTES\" | wc -l)\""}}}
EOF2
start_daemon "$T/serve.json" --grace 4s
log=$T/$DAEMON.err
count_log() { grep -c "$1" "$log" || true; }

# The proxy: upstream answers of 502 and 500, not stored (the key is released), are told.
post /pay '{"amount": 1}' "Idempotency-Key: p502" "X-Answer-Status: 502"
expect_http 502
post /pay '{"amount": 2}' "Idempotency-Key: p500" "X-Answer-Status: 500"
expect_http 500
wait_until "both are told" test -s "$PROXY_NOTES/1"
wait_until "both are logged" eval '(( $(count_log "\"event\":\"notified\"") == 2 ))'
assert_eq "failed	proxy#-#p502	502	failed
failed	proxy#-#p500	500	failed" \
  "$(cat "$PROXY_NOTES/0" "$PROXY_NOTES/1" | jsonq /event /key /attempt/http_status /record/status)" \
  "the proxy's released failures"

# Ten failing deliveries at once: two notify commands run, three wait, five are dropped.
for i in 0 1 2 3 4 5 6 7 8 9; do
  post /hooks/many "job $i" "X-Key: m$i"
  expect_http 500
done
live_count() { find "$LIVE" -mindepth 1 -maxdepth 1 | wc -l; }
wait_until "two notify commands run" eval '(( $(live_count) == 2 ))'
wait_until "five drops are logged" eval '(( $(count_log "dropped: the queue is full") == 5 ))'
get /metrics
expect_http 200
grep -qx 'idem_notify_running 2' "$T/resp.body" || fail "running: $(grep notify "$T/resp.body")"
grep -qx 'idem_notify_queued 3' "$T/resp.body" || fail "queued: $(grep notify "$T/resp.body")"
grep -qx 'idem_notify_dropped_total 5' "$T/resp.body" ||
  fail "dropped: $(grep notify "$T/resp.body")"
line=$(grep -m1 'dropped: the queue is full' "$log")
assert_eq "notify_failed	failed" "$(jsonq /event /notify_event <<<"$line")" "a drop's log line"
touch "$RELEASE"
wait_until "the five are done" eval '(( $(count_log "\"event\":\"notified\"") == 7 ))'
assert_lines 5 "$SEEN"
assert_eq 2 "$(sort -n "$SEEN" | tail -1)" "the most notify commands running at once"

# A notify command that ignores TERM, with a child that ignores it too: both end at its timeout.
post /hooks/bg 'job' "X-Key: b1"
expect_http 500
track_pid_file "$BG_PIDS.bg"
wait_until "the timed-out notify is logged" file_has "$log" "(failed) timed out after"
bg_child=$(cat "$BG_PIDS.bg")
# The group's KILL is sent before the line is logged, but a killed process ends when it is next
# scheduled: on a busy machine it may still be there a moment after the line. Its `sleep 60` would
# be there for a minute had it not been killed.
WAIT_SECONDS=5 wait_until "the notify command's child ends with it" pid_gone "$bg_child"

# A notify that starts during the drain (its delivery fails then) is stopped before the grace
# ends, its child with it, and logged; the daemon stops cleanly within the grace.
bg late curl -sS --max-time 20 -X POST -H 'X-Key: l1' --data-binary 'job' "$URL/hooks/late"
wait_until "the late handler runs" test -s "$T/late.pid"
kill -TERM "$(bg_pid "$DAEMON")"
wait_until "the drain begins" file_has "$log" '"event":"draining"'
touch "$GO"
track_pid_file "$BG_PIDS.late"
wait_until "the late notify starts" test -s "$BG_PIDS.late"
bg_wait "$DAEMON"
expect_rc 0
file_has "$log" "(failed) was stopped after" || fail "no log line of the cut notify: $(cat "$log")"
! file_has "$log" '"event":"grace_expired"' || fail "the grace ran out"
pid_gone "$(cat "$BG_PIDS.late")" || fail "the cut notify's child outlived the daemon"
bg_wait late
