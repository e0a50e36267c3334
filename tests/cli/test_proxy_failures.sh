#!/usr/bin/env bash
# What the proxy stores and what it gives up (contract §7): an upstream that is down (502) or that
# answers 5xx (not stored unless store_server_errors): the key is released and the client's retry
# goes through. One that breaks off its answer (502) keeps the outcome as unknown, one that
# answers too late (504) has its late answer stored (test_proxy_outcomes.sh says more). A client
# that gives up waiting does not cancel the forward: its retry gets the stored answer. Bodies
# over max_body are refused (413); answers over max_response reach the first client whole and
# are not replayed (409); large ones within it are stored byte-exact.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

# An upstream that is down: 502, nothing stored; once it is back, the retry goes through.
start_upstream up
port=$UPORT
kill -TERM "$(bg_pid up)"
bg_wait up
cat >"$T/proxy.json" <<EOF
{"proxy": {"upstream": "http://127.0.0.1:$port", "timeout": "2s", "max_body": "4MiB",
           "max_response": 1000,
           "routes": [{"prefix": "/stored", "store_server_errors": true},
                      {"prefix": "/big", "max_body": "1KiB"},
                      {"prefix": "/large", "max_body": "8MiB", "timeout": "60s"}]}}
EOF
start_serve --config "$T/proxy.json"
post /pay '{"p":1}' 'Idempotency-Key: down-1'
expect_problem 502
assert_eq api_error "$(jsonq /error/type <"$T/resp.body")" "error.type of a 502"
assert_eq "" "$(record_status proxy#-#down-1)" "record after a 502"
file_has "$T/$DAEMON.err" '"outcome":"upstream_error"' || fail "no upstream_error logged"
start_upstream up --port "$port"
post /pay '{"p":1}' 'Idempotency-Key: down-1'
expect_http 200
assert_eq succeeded "$(record_status proxy#-#down-1)" "record after the retry"

# A 5xx is passed on and not stored: the retry reaches the upstream again.
RESP=e1 post /fail '{"f":1}' 'Idempotency-Key: five-1' 'X-Answer-Status: 503'
RESP=e1 expect_http 503
RESP=e1 assert_no_header Idempotent-Replayed
assert_eq "" "$(record_status proxy#-#five-1)" "record after a 503"
RESP=e2 post /fail '{"f":1}' 'Idempotency-Key: five-1' 'X-Answer-Status: 201'
RESP=e2 expect_http 201
assert_eq 2 "$(upstream_count /fail)" "calls of five-1"
# Under a route with store_server_errors it is stored and replayed like any answer.
RESP=s1 post /stored/x '{"s":1}' 'Idempotency-Key: five-2' 'X-Answer-Status: 500'
RESP=s1 expect_http 500
RESP=s2 post /stored/x '{"s":1}' 'Idempotency-Key: five-2'
RESP=s2 expect_http 500
RESP=s2 assert_header Idempotent-Replayed true
assert_same "$T/s1.body" "$T/s2.body"
assert_eq 1 "$(upstream_count /stored/x)" "calls of five-2"

# An answer broken off mid-body: 502, kept as an unknown outcome (the upstream may have acted).
post /broken '{"b":1}' 'Idempotency-Key: broken-1' 'X-Answer-Break: 1'
expect_problem 502
assert_eq failed "$(record_status proxy#-#broken-1)" "record after a broken answer"

# Past the timeout: 504; the upstream's late answer is stored all the same.
mkfifo "$T/late"
post /slow '{"t":1}' 'Idempotency-Key: slow-1' "X-Answer-Hold: $T/late"
expect_problem 504
assert_eq running "$(record_status proxy#-#slow-1)" "record after a 504"
file_has "$T/$DAEMON.err" '"outcome":"upstream_timeout"' || fail "no upstream_timeout logged"
release_fifo "$T/late"
late_stored() { [[ $(record_status proxy#-#slow-1) == succeeded ]]; }
wait_until "the late answer is stored" late_stored

# A client that gives up before the answer: the forward goes on and its answer is stored.
mkfifo "$T/hold"
rc=0
curl -sS --max-time 0.5 -X POST -H 'Idempotency-Key: gave-up' -H "X-Answer-Hold: $T/hold" \
  -H 'X-Answer-Status: 201' --data-binary '{"g":1}' -o /dev/null "$URL/gaveup" 2>/dev/null || rc=$?
assert_eq 28 "$rc" "curl's exit when it gives up"
assert_eq running "$(record_status proxy#-#gave-up)" "record while the upstream holds"
RESP=busy post /gaveup '{"g":1}' 'Idempotency-Key: gave-up'
RESP=busy expect_idempotency_problem 409 "A request is outstanding for this Idempotency-Key"
RESP=busy assert_header Retry-After 1
release_fifo "$T/hold"
stored() { [[ $(record_status proxy#-#gave-up) == succeeded ]]; }
wait_until "the given-up request's answer is stored" stored
post /gaveup '{"g":1}' 'Idempotency-Key: gave-up'
expect_http 201
assert_header Idempotent-Replayed true
assert_eq 1 "$(upstream_count /gaveup)" "calls of gave-up"

# Bodies over max_body: 413, announced or not; nothing forwarded.
head -c 2000 /dev/zero | tr '\0' 'x' >"$T/2k"
post /big/x "$(cat "$T/2k")" 'Idempotency-Key: big-1'
expect_problem 413
rc=0
curl -sS -X POST -H 'Idempotency-Key: big-2' -H 'Transfer-Encoding: chunked' \
  --data-binary "@$T/2k" -o "$T/chunked.body" -w '%{http_code}' "$URL/big/x" >"$T/chunked.status" ||
  rc=$?
assert_eq 413 "$(cat "$T/chunked.status")" "status of a chunked body over max_body"
assert_eq 0 "$(upstream_count /big/x)" "calls with bodies over max_body"

# An answer over max_response: the first client gets it whole, a duplicate a 409.
RESP=t1 post /cut '{"c":1}' 'Idempotency-Key: cut-1' 'X-Answer-Bytes: 5000'
RESP=t1 expect_http 200
RESP=t1 assert_no_header Idem-Output-Truncated
assert_eq 5000 "$(wc -c <"$T/t1.body")" "bytes of the first answer"
RESP=t2 post /cut '{"c":1}' 'Idempotency-Key: cut-1'
RESP=t2 expect_idempotency_problem 409 "Answer too large to replay"
# One byte within the limit is stored and replayed as it came.
RESP=t3 post /fit '{"c":1}' 'Idempotency-Key: fit-1' 'X-Answer-Bytes: 1000'
RESP=t4 post /fit '{"c":1}' 'Idempotency-Key: fit-1'
RESP=t4 assert_header Idempotent-Replayed true
assert_same "$T/t3.body" "$T/t4.body"
assert_eq 1000 "$(wc -c <"$T/t4.body")" "bytes of an answer at max_response"

# A large request (5 MiB) within its route's limit reaches the upstream whole, once. Its route
# waits long enough for 5 MiB through a sanitizer build on a busy machine (the 2s above is for
# the timeout's own test).
head -c 3932160 /dev/urandom | base64 -w0 >"$T/5m"  # 5 MiB of text
RESP=l1 post /large/x "$(cat "$T/5m")" 'Idempotency-Key: large-1' 'X-Answer-Bytes: 500'
RESP=l1 expect_http 200
assert_eq $((5 << 20)) "$(jsonq /body_bytes < <(tail -1 "$T/up.log"))" "bytes the upstream got"
RESP=l2 post /large/x "$(cat "$T/5m")" 'Idempotency-Key: large-1'
RESP=l2 assert_header Idempotent-Replayed true
assert_same "$T/l1.body" "$T/l2.body"
assert_eq 1 "$(upstream_count /large/x)" "calls of large-1"
stop_daemon
