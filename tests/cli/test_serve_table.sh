#!/usr/bin/env bash
# contract §6, the per-delivery table row by row, in its order: 404/405, 413, 401 (see
# test_serve_signatures.sh), 400, 422, 409 running, replay, failed-then-rerun, a new key's run
# (200/500/504, stdin and environment), async 202, the concurrency queue's 503, /healthz,
# /metrics, and keys scoped per hook.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

mkfifo "$T/gate"
# What the handler does is chosen by the X-Mode header (headers are not part of the fingerprint).
# Every run is logged, with its stdin and environment kept per key.
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
d=$IDEM_TEST_DIR
cat > "$d/stdin.$IDEM_KEY"
env | grep '^IDEM_' | sort > "$d/env.$IDEM_KEY"
echo "$IDEM_HOOK $IDEM_KEY $IDEM_ATTEMPT" >> "$d/handler.log"
case $IDEM_HEADER_X_MODE in
  json) printf '{"ok":true,"key":"%s"}' "$IDEM_KEY" ;;
  array) printf '[1,2,3]\n' ;;
  number) printf '42\n' ;;
  text) printf 'plain text\nsecond line' ;;
  empty) ;;
  fail) echo "partial output"; echo "oops" >&2; exit 3 ;;
  failonce) if [ "$IDEM_ATTEMPT" = 1 ]; then exit 1; fi; printf 'second attempt\n' ;;
  sleep) echo $$ > "$d/sleep.pid"; exec sleep 30 ;;
  block) echo $$ > "$d/block.$IDEM_KEY.pid"; read x < "$d/gate"; printf 'released %s\n' "$IDEM_KEY" ;;
  *) echo "unknown mode '$IDEM_HEADER_X_MODE'"; exit 9 ;;
esac
EOF
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF
{"hooks": [
  {"path": "/hooks/x", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "max_body": 64, "timeout": "1s"},
  {"path": "/hooks/y", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "methods": ["POST", "PUT"]},
  {"path": "/hooks/orders", "command": ["$T/handler.sh"], "key": {"json": "/order/id"}},
  {"path": "/hooks/async", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "async": true},
  {"path": "/hooks/limited", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "max_concurrency": 1, "max_queue": 0},
  {"path": "/hooks/queued", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "max_concurrency": 1, "max_queue": 1},
  {"path": "/hooks/m", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}}
]}
EOF
start_daemon "$T/serve.json"
runs() { log_count "$T/handler.log" "$1 $2 "; }  # runs HOOK KEY

# --- 404 unknown path ---------------------------------------------------------------------------
for p in /nope /hooks /hooks/x/ /hooks/X /HOOKS/x /hooks/xx; do
  post "$p" 'x' 'X-Key: k404' 'X-Mode: json'
  expect_problem 404
done
request GET /nope ''
expect_problem 404
request DELETE /nope ''
expect_problem 404

# --- 405 wrong method, with Allow ---------------------------------------------------------------
for m in GET PUT PATCH DELETE; do
  request "$m" /hooks/x 'x' 'X-Key: k405' 'X-Mode: json'
  expect_problem 405
  assert_header Allow POST
done
request GET /hooks/y ''
expect_problem 405
assert_header Allow 'POST, PUT'
request POST /healthz ''
expect_problem 405
assert_header Allow 'GET, HEAD'

# --- 413 body over max_body (64 bytes on /hooks/x) ----------------------------------------------
big=$(printf '%065d' 0)
post /hooks/x "$big" 'X-Key: k413' 'X-Mode: json'
expect_problem 413
# Also without Content-Length (chunked): the body is counted as it arrives.
post /hooks/x "$big" 'X-Key: k413' 'X-Mode: json' 'Transfer-Encoding: chunked'
expect_problem 413
# 413 comes before 400: no key either.
post /hooks/x "$big"
expect_problem 413
# Exactly max_body is accepted.
post /hooks/x "$(printf '%064d' 0)" 'X-Key: k64' 'X-Mode: json'
expect_http 200
assert_body '{"ok":true,"key":"k64"}'
assert_same "$T/resp.sent" "$T/stdin.k64"

# --- 400 no key ---------------------------------------------------------------------------------
post /hooks/x 'body' 'X-Mode: json'
expect_problem 400
post /hooks/x 'body' 'X-Mode: json' 'X-Key;'  # present but empty
expect_problem 400
post /hooks/x 'body' 'X-Mode: json' "X-Key: $(printf 'k%.0s' {1..256})"  # 256 bytes: too long
expect_problem 400
post /hooks/orders '{"order":{"number":7}}' 'X-Mode: json'
expect_problem 400
post /hooks/orders 'not json' 'X-Mode: json'
expect_problem 400
post /hooks/orders '{"order":{"id":{"nested":1}}}' 'X-Mode: json'
expect_problem 400
assert_bytes "$T/handler.log" '/hooks/x k64 1\n'
assert_eq '/hooks/x#k64' "$(ls_keys)" "keys stored after 404/405/413/400"

# A JSON key: a string or a number.
post /hooks/orders '{"order":{"id":"ord-7"}}' 'X-Mode: json'
expect_http 200
assert_body '{"ok":true,"key":"ord-7"}'
post /hooks/orders '{"order":{"id":42}}' 'X-Mode: json'
expect_http 200
assert_body '{"ok":true,"key":"42"}'

# --- 422 same key, different body ---------------------------------------------------------------
post /hooks/x 'first body' 'X-Key: k422' 'X-Mode: json'
expect_http 200
post /hooks/x 'other body' 'X-Key: k422' 'X-Mode: json'
expect_problem 422
post /hooks/x 'first body ' 'X-Key: k422' 'X-Mode: json'  # one byte more
expect_problem 422
assert_eq 1 "$(runs /hooks/x k422)" "runs of k422"
post /hooks/orders '{"order":{"id":"ord-7"},"changed":true}' 'X-Mode: json'
expect_problem 422

# --- 409 + Retry-After while the same key runs --------------------------------------------------
# On /hooks/y, which has no timeout: the handler must outlive every step below, however slow the
# machine (x kills its handlers after 1 s).
RESP=blocked bg blocked post /hooks/y 'slow body' 'X-Key: k409' 'X-Mode: block'
track_pid_file "$T/block.k409.pid"
wait_until "the blocking handler starts" test -s "$T/block.k409.pid"
assert_status '/hooks/y#k409' running
post /hooks/y 'slow body' 'X-Key: k409' 'X-Mode: block'
expect_problem 409
[[ $(header_value Retry-After) =~ ^[1-9][0-9]*$ ]] ||
  fail "409 while running: Retry-After should be a positive number of seconds, got '$(header_value Retry-After)'"
# Another body under the running key is a conflict, not "running".
post /hooks/y 'slow body 2' 'X-Key: k409' 'X-Mode: block'
expect_problem 422
# Other keys are not held up by it.
post /hooks/x 'meanwhile' 'X-Key: k-meanwhile' 'X-Mode: text'
expect_http 200
release_fifo "$T/gate"
bg_wait blocked
expect_rc 0
RESP=blocked expect_http 200
RESP=blocked assert_body 'released k409\n'
assert_eq 1 "$(runs /hooks/y k409)" "runs of k409"

# --- 200: stdout, content type by shape ----------------------------------------------------------
post /hooks/x 'j' 'X-Key: k-json' 'X-Mode: json'
expect_http 200
assert_header Content-Type application/json
assert_no_header Idempotent-Replayed
assert_body '{"ok":true,"key":"k-json"}'
post /hooks/x 'a' 'X-Key: k-array' 'X-Mode: array'
expect_http 200
assert_header Content-Type application/json
assert_body '[1,2,3]\n'
post /hooks/x 'n' 'X-Key: k-number' 'X-Mode: number'
expect_http 200
assert_header Content-Type 'text/plain; charset=utf-8'
assert_body '42\n'
post /hooks/x 't' 'X-Key: k-text' 'X-Mode: text'
expect_http 200
assert_header Content-Type 'text/plain; charset=utf-8'
assert_body 'plain text\nsecond line'
post /hooks/x 'e' 'X-Key: k-empty' 'X-Mode: empty'
expect_http 200
assert_header Content-Type 'text/plain; charset=utf-8'
assert_body ''
# --- 500: non-zero exit; the handler's output is not the answer ----------------------------------
post /hooks/x 'f' 'X-Key: k-fail' 'X-Mode: fail'
expect_problem 500
if grep -q 'partial output\|oops' "$T/resp.body"; then fail "500 answer leaks handler output"; fi
assert_status '/hooks/x#k-fail' failed
# --- 504: timeout (1s) --------------------------------------------------------------------------
start=$(now_ms)
post /hooks/x 's' 'X-Key: k-slow' 'X-Mode: sleep'
elapsed=$(($(now_ms) - start))
expect_problem 504
((elapsed >= 1000 && elapsed < 10000)) || fail "504 after ${elapsed} ms, want about 1 s"
track_pid_file "$T/sleep.pid"
wait_until "the timed-out handler is gone" pid_gone "$(cat "$T/sleep.pid")"
assert_status '/hooks/x#k-slow' failed

# --- replay of a succeeded key: same status, content type, body ---------------------------------
declare -A first_type=([json]=application/json [array]=application/json
  [number]='text/plain; charset=utf-8' [text]='text/plain; charset=utf-8'
  [empty]='text/plain; charset=utf-8')
declare -A first_body=([json]='{"ok":true,"key":"k-json"}' [array]='[1,2,3]\n' [number]='42\n'
  [text]='plain text\nsecond line' [empty]='')
for k in json array number text empty; do
  post /hooks/x "${k:0:1}" "X-Key: k-$k" "X-Mode: $k"
  expect_http 200
  assert_header Idempotent-Replayed true
  assert_header Content-Type "${first_type[$k]}"
  assert_body "${first_body[$k]}"
  assert_eq 1 "$(runs /hooks/x "k-$k")" "runs of k-$k after its replay"
done
post /hooks/x 'j' 'X-Key: k-json' 'X-Mode: text'  # the mode header is not what is replayed on
assert_header Content-Type application/json
assert_body '{"ok":true,"key":"k-json"}'
post /hooks/x 't' 'X-Key: k-text' 'X-Mode: json'
assert_header Idempotent-Replayed true
assert_header Content-Type 'text/plain; charset=utf-8'
assert_body 'plain text\nsecond line'
post /hooks/orders '{"order":{"id":"ord-7"}}' 'X-Mode: json'
expect_http 200
assert_header Idempotent-Replayed true
assert_body '{"ok":true,"key":"ord-7"}'

# --- failed earlier: runs again, IDEM_ATTEMPT 2 --------------------------------------------------
post /hooks/x 'fo' 'X-Key: k-retry' 'X-Mode: failonce'
expect_problem 500
post /hooks/x 'fo' 'X-Key: k-retry' 'X-Mode: failonce'
expect_http 200
assert_no_header Idempotent-Replayed
assert_body 'second attempt\n'
grep -qx 'IDEM_ATTEMPT=2' "$T/env.k-retry" || fail "attempt 2 saw: $(cat "$T/env.k-retry")"
post /hooks/x 'fo' 'X-Key: k-retry' 'X-Mode: failonce'
expect_http 200
assert_header Idempotent-Replayed true
assert_body 'second attempt\n'
assert_eq "/hooks/x k-retry 1|/hooks/x k-retry 2" "$(grep ' k-retry ' "$T/handler.log" | paste -sd'|')" \
  "runs of k-retry"
# A timed-out delivery is a failure too: the provider's retry runs it again.
post /hooks/x 's' 'X-Key: k-slow' 'X-Mode: json'
expect_http 200
assert_body '{"ok":true,"key":"k-slow"}'
grep -qx 'IDEM_ATTEMPT=2' "$T/env.k-slow" || fail "retry of k-slow saw: $(cat "$T/env.k-slow")"
post /hooks/x 'f' 'X-Key: k-fail' 'X-Mode: fail'
expect_problem 500
assert_eq 2 "$(runs /hooks/x k-fail)" "runs of k-fail (failed twice)"

# --- a new key: stdin byte for byte, environment ------------------------------------------------
body=$'line 1\n"quoted" $HOME `x` \\ \t\xc3\xa9\xff\nno final newline'
request PUT /hooks/y "$body" 'X-Key: env key 1' 'X-Mode: json' 'X-GitHub-Event: push' \
  'x-custom.header-2: a value  with  spaces' 'Content-Type: application/octet-stream'
expect_http 200
assert_same "$T/resp.sent" "$T/stdin.env key 1"
for line in 'IDEM_KEY=env key 1' IDEM_ATTEMPT=1 IDEM_HOOK=/hooks/y IDEM_METHOD=PUT IDEM_PATH=/hooks/y \
  IDEM_HEADER_X_GITHUB_EVENT=push 'IDEM_HEADER_X_CUSTOM_HEADER_2=a value  with  spaces' \
  IDEM_HEADER_CONTENT_TYPE=application/octet-stream IDEM_HEADER_X_MODE=json; do
  grep -qxF -- "$line" "$T/env.env key 1" || fail "the handler's environment lacks '$line': $(cat "$T/env.env key 1")"
done
post /hooks/x '' 'X-Key: k-nobody' 'X-Mode: json'  # an empty body is a body
expect_http 200
assert_empty "$T/stdin.k-nobody"
grep -qx 'IDEM_METHOD=POST' "$T/env.k-nobody" || fail "IDEM_METHOD of a POST: $(cat "$T/env.k-nobody")"

# --- async: 202 once the claim is durable; duplicates, running or finished, 202 too ---------------
post /hooks/async 'async body' 'X-Key: k-async' 'X-Mode: block'
expect_http 202
assert_no_header Idempotent-Replayed
track_pid_file "$T/block.k-async.pid"
wait_until "the async handler starts" test -s "$T/block.k-async.pid"
assert_status '/hooks/async#k-async' running
post /hooks/async 'async body' 'X-Key: k-async' 'X-Mode: block'
expect_http 202
post /hooks/async 'another body' 'X-Key: k-async' 'X-Mode: block'
expect_problem 422
release_fifo "$T/gate"
wait_until "the async handler finishes" status_is '/hooks/async#k-async' succeeded
post /hooks/async 'async body' 'X-Key: k-async' 'X-Mode: block'
expect_http 202
assert_eq 1 "$(runs /hooks/async k-async)" "runs of the async key"
assert_eq 'released k-async' "$(idem show '/hooks/async#k-async' --stdout)" "stored stdout of the async run"
# A failed async delivery runs again on the next attempt.
post /hooks/async 'af' 'X-Key: k-async-fail' 'X-Mode: failonce'
expect_http 202
wait_until "the failing async handler finishes" status_is '/hooks/async#k-async-fail' failed
post /hooks/async 'af' 'X-Key: k-async-fail' 'X-Mode: failonce'
expect_http 202
wait_until "the async retry finishes" status_is '/hooks/async#k-async-fail' succeeded
assert_eq 2 "$(runs /hooks/async k-async-fail)" "runs of the failed async key"

# --- 503 + Retry-After over max_concurrency + max_queue -------------------------------------------
post /hooks/limited 'pre' 'X-Key: k-pre' 'X-Mode: json'
expect_http 200
RESP=held bg held post /hooks/limited 'held' 'X-Key: k-held' 'X-Mode: block'
track_pid_file "$T/block.k-held.pid"
wait_until "the limited hook's handler starts" test -s "$T/block.k-held.pid"
post /hooks/limited 'other' 'X-Key: k-other' 'X-Mode: json'
expect_problem 503
[[ $(header_value Retry-After) =~ ^[1-9][0-9]*$ ]] ||
  fail "503: Retry-After should be a positive number of seconds, got '$(header_value Retry-After)'"
assert_status '/hooks/limited#k-other' none
# Duplicates need no handler slot: at the limit they still get their row of the table.
dup_of_running_at_limit() {
  post /hooks/limited 'held' 'X-Key: k-held' 'X-Mode: block'
  [[ $(http_status) == 409 ]] || fail "duplicate of the running key k-held while the hook is at" \
    "its limit: want 409 (same key running), got $(http_status): $(cat "$T/resp.body")"
  expect_problem 409
}
dup_of_succeeded_at_limit() {
  post /hooks/limited 'pre' 'X-Key: k-pre' 'X-Mode: json'
  [[ $(http_status) == 200 ]] || fail "duplicate of the succeeded key k-pre while the hook is at" \
    "its limit: want its replay (200), got $(http_status): $(cat "$T/resp.body")"
  assert_header Idempotent-Replayed true
  assert_body '{"ok":true,"key":"k-pre"}'
}
soft dup_of_running_at_limit
soft dup_of_succeeded_at_limit
# Other hooks are not limited by it.
post /hooks/x 'free' 'X-Key: k-free' 'X-Mode: json'
expect_http 200
release_fifo "$T/gate"
bg_wait held
expect_rc 0
RESP=held expect_http 200
RESP=held assert_body 'released k-held\n'
post /hooks/limited 'other' 'X-Key: k-other' 'X-Mode: json'
expect_http 200
assert_body '{"ok":true,"key":"k-other"}'
# With a queue of 1: the second delivery waits for the slot, the third gets 503.
RESP=q1 bg q1 post /hooks/queued 'q1' 'X-Key: q1' 'X-Mode: block'
track_pid_file "$T/block.q1.pid"
wait_until "the queued hook's first handler starts" test -s "$T/block.q1.pid"
RESP=q2 bg q2 post /hooks/queued 'q2' 'X-Key: q2' 'X-Mode: block'
track_pid_file "$T/block.q2.pid"
in_flight_is() { get /metrics; grep -qxF "idem_in_flight{hook=\"/hooks/queued\"} $1" "$T/resp.body"; }
wait_until "the second delivery waits in the queue" in_flight_is 2
post /hooks/queued 'q3' 'X-Key: q3' 'X-Mode: json'
expect_problem 503
[[ ! -e $T/block.q2.pid ]] || fail "the queued delivery ran while the slot was taken"
release_fifo "$T/gate"
bg_wait q1
RESP=q1 expect_http 200
wait_until "the queued delivery runs" test -s "$T/block.q2.pid"
release_fifo "$T/gate"
bg_wait q2
RESP=q2 expect_http 200
RESP=q2 assert_body 'released q2\n'
assert_status '/hooks/queued#q3' none

# --- /healthz ------------------------------------------------------------------------------------
get /healthz
expect_http 200
assert_eq ok "$(cat "$T/resp.body")" "/healthz body"

# --- /metrics: deliveries by hook and outcome -----------------------------------------------------
for k in m1 m2; do post /hooks/m "$k" "X-Key: $k" 'X-Mode: json'; expect_http 200; done
for k in m1 m1 m2; do post /hooks/m "$k" "X-Key: $k" 'X-Mode: json'; expect_http 200; done
post /hooks/m 'mf' 'X-Key: mf' 'X-Mode: fail'
expect_http 500
post /hooks/m 'other' 'X-Key: m1' 'X-Mode: json'
expect_http 422
post /hooks/m 'nokey' 'X-Mode: json'
expect_http 400
# The counters are updated as each answer is logged: poll until the last one is in.
metrics_has() { get /metrics; grep -qxF "$1" "$T/resp.body"; }
wait_until "the 400 is counted" metrics_has 'idem_deliveries_total{hook="/hooks/m",outcome="no_key"} 1'
expect_http 200
[[ $(header_value Content-Type) == text/plain* ]] || fail "/metrics Content-Type: $(header_value Content-Type)"
grep '^idem_deliveries_total{hook="/hooks/m",' "$T/resp.body" >"$T/m.lines"
printf '%s\n' 'idem_deliveries_total{hook="/hooks/m",outcome="conflict"} 1' \
  'idem_deliveries_total{hook="/hooks/m",outcome="failed"} 1' \
  'idem_deliveries_total{hook="/hooks/m",outcome="no_key"} 1' \
  'idem_deliveries_total{hook="/hooks/m",outcome="ran"} 2' \
  'idem_deliveries_total{hook="/hooks/m",outcome="replayed"} 3' | sort >"$T/m.want"
sort "$T/m.lines" >"$T/m.got"
assert_same "$T/m.want" "$T/m.got"
grep -qxF 'idem_replays_total{hook="/hooks/m"} 3' "$T/resp.body" ||
  fail "/metrics lacks idem_replays_total 3 for /hooks/m: $(grep replays "$T/resp.body")"
grep -qxF 'idem_in_flight{hook="/hooks/m"} 0' "$T/resp.body" || fail "/metrics: in flight of /hooks/m"
grep -qF 'idem_delivery_duration_seconds_count{hook="/hooks/m"} 8' "$T/resp.body" ||
  fail "/metrics: duration count of /hooks/m: $(grep duration "$T/resp.body")"
for want in 'outcome="too_large"} 3' 'outcome="timeout"} 1' 'outcome="bad_method"} 4'; do
  grep -qF "idem_deliveries_total{hook=\"/hooks/x\",$want" "$T/resp.body" ||
    fail "/metrics lacks /hooks/x $want: $(grep '/hooks/x' "$T/resp.body")"
done
grep -qF 'idem_deliveries_total{hook="/hooks/limited",outcome="overloaded"} ' "$T/resp.body" ||
  fail "/metrics lacks the 503 of /hooks/limited"

# --- keys are scoped per hook -----------------------------------------------------------------
post /hooks/x 'same' 'X-Key: shared' 'X-Mode: json'
expect_http 200
assert_no_header Idempotent-Replayed
post /hooks/y 'same' 'X-Key: shared' 'X-Mode: json'
expect_http 200
assert_no_header Idempotent-Replayed
post /hooks/m 'a different body' 'X-Key: shared' 'X-Mode: json'  # no 422 across hooks
expect_http 200
assert_eq 1 "$(runs /hooks/x shared)" "runs of shared on /hooks/x"
assert_eq 1 "$(runs /hooks/y shared)" "runs of shared on /hooks/y"
assert_eq 1 "$(runs /hooks/m shared)" "runs of shared on /hooks/m"
assert_status '/hooks/x#shared' succeeded
assert_status '/hooks/y#shared' succeeded

# One JSON log line per request, each with the fields the log promises.
get /healthz
wait_until "the last request is logged" file_has "$T/daemon.err" '"path":"/healthz"'
grep -v '"event":' "$T/daemon.err" >"$T/access.log"
while IFS= read -r line; do
  keys=$(printf '%s\n' "$line" | jsonq --keys)
  for f in time remote method path status duration_ms; do
    [[ " $keys " == *" $f "* ]] || fail "log line lacks $f: $line"
  done
done <"$T/access.log"
grep -qF '"hook":"/hooks/x","key":"k-json","method":"POST","outcome":"ran","path":"/hooks/x","remote":"127.0.0.1","status":200' \
  "$T/access.log" || fail "no access log line for k-json's run"
stop_daemon

# A request that is not HTTP is no delivery: it must not be logged or counted as one, even when
# it follows a delivery on the same connection (so on the same worker thread).
DAEMON=daemon1
start_daemon "$T/serve.json" --request-timeout 2s
raw_connect garbage
raw_send 'POST /hooks/m HTTP/1.1\r\nHost: t\r\nX-Key: one\r\nX-Mode: json\r\nContent-Length: 3\r\n\r\none'
wait_until "the delivery on the raw connection is answered" file_has "$T/garbage.out" '{"ok":true,"key":"one"}'
raw_send 'NOT HTTP AT ALL\r\n\r\n'
raw_close
wait_until "the server closes the connection" bg_exited garbage
wait_until "the delivery is logged" file_has "$T/daemon1.err" '"key":"one"'
garbage_not_logged_as_delivery() {
  grep -v '"path":"/hooks/m"' "$T/daemon1.err" | grep -v '"event":' >"$T/garbage.log" || true
  if grep -q '"key":"one"\|"outcome":"ran"' "$T/garbage.log"; then
    fail "the log line of a request that is not HTTP names the previous delivery: $(head -1 "$T/garbage.log")"
  fi
}
garbage_not_counted() {
  get /metrics
  grep -qxF 'idem_deliveries_total{hook="/hooks/m",outcome="ran"} 1' "$T/resp.body" ||
    fail "one delivery ran, /metrics says: $(grep 'hook="/hooks/m"' "$T/resp.body" | grep deliveries)"
}
soft garbage_not_logged_as_delivery
soft garbage_not_counted
stop_daemon
integrity_ok
soft_done
