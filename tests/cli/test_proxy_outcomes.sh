#!/usr/bin/env bash
# What the proxy does with an outcome it cannot know or keep (contract §7): once a request went out,
# a slow upstream's late answer is still awaited and stored (504 now, 409 to duplicates meanwhile)
# and a cut-off exchange is kept as an unknown outcome (409 to duplicates until `idem rm`): the
# upstream never runs the request twice. Answers meaning "not done, try again" (408, 409, 425,
# 429) are not stored unless store_statuses says so; an answer over max_response reaches the
# first client whole and duplicates get a 409. scope_header alone scopes keys. The proxy's own
# HTTP-layer refusals carry the error member, absolute-form targets among them.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

start_upstream up
cat >"$T/proxy.json" <<EOF
{"proxy": {"upstream": "$UURL", "timeout": "1s", "late_answer": "60s", "max_response": 1000,
           "scope_header": "X-Tenant",
           "routes": [{"prefix": "/late", "late_answer": "1s"},
                      {"prefix": "/brief", "ttl": "1s"},
                      {"prefix": "/statuses", "store_statuses": ["2xx", 429, "!204"]},
                      {"prefix": "/small", "max_body": 100}]}}
EOF
start_serve --config "$T/proxy.json" --request-timeout 1s

# expect_unknown NAME: a duplicate's 409 for a stored unknown outcome, which names `idem rm`.
expect_unknown() {
  RESP=$1 expect_idempotency_problem 409 "Outcome unknown"
  RESP=$1 assert_header X-Should-Retry false
  file_has "$T/$1.body" "idem rm" || fail "the 409 does not say how to clear the key: $(cat "$T/$1.body")"
}

# --- a slow upstream: 504 at the timeout, the late answer stored, one execution ----------------
mkfifo "$T/slow"
post /slow '{"s":1}' 'Idempotency-Key: slow-1' "X-Answer-Hold: $T/slow" 'X-Answer-Status: 201'
expect_problem 504
assert_eq api_error "$(jsonq /error/type <"$T/resp.body")" "error.type of a 504"
assert_eq running "$(record_status proxy#-#slow-1)" "record after the 504"
RESP=busy post /slow '{"s":1}' 'Idempotency-Key: slow-1'
RESP=busy expect_idempotency_problem 409 "A request is outstanding for this Idempotency-Key"
RESP=busy assert_header Retry-After 1
release_fifo "$T/slow"
late_stored() { [[ $(record_status proxy#-#slow-1) == succeeded ]]; }
wait_until "the late answer is stored" late_stored
RESP=again post /slow '{"s":1}' 'Idempotency-Key: slow-1'
RESP=again expect_http 201
RESP=again assert_header Idempotent-Replayed true
assert_eq 1 "$(upstream_count /slow)" "executions of slow-1"

# --- no answer within late_answer: the outcome is unknown for good ---------------------------
mkfifo "$T/never"
post /late/x '{"l":1}' 'Idempotency-Key: late-1' "X-Answer-Hold: $T/never"
expect_problem 504
late_unknown() { [[ $(record_status proxy#-#late-1) == failed ]]; }
wait_until "the unanswered request is kept as an unknown outcome" late_unknown
RESP=late2 post /late/x '{"l":1}' 'Idempotency-Key: late-1'
expect_unknown late2
assert_eq 1 "$(upstream_count /late/x)" "executions of late-1"
# Removing the record is how an operator who knows what happened lets the key run again.
idem rm 'proxy#-#late-1' >/dev/null || fail "idem rm of the unknown outcome failed"
RESP=late3 post /late/x '{"l":1}' 'Idempotency-Key: late-1'
RESP=late3 expect_http 200
assert_eq 2 "$(upstream_count /late/x)" "executions of late-1 after idem rm"
release_fifo "$T/never"

# --- an upstream that dies with the request: 502, then the unknown outcome -------------------
post /drop '{"d":1}' 'Idempotency-Key: drop-1' 'X-Answer-Drop: 1'
expect_problem 502
assert_eq failed "$(record_status proxy#-#drop-1)" "record after a cut exchange"
RESP=drop2 post /drop '{"d":1}' 'Idempotency-Key: drop-1'
expect_unknown drop2
RESP=brk post /broken '{"b":1}' 'Idempotency-Key: broken-1' 'X-Answer-Break: 1'
RESP=brk expect_problem 502
RESP=brk2 post /broken '{"b":1}' 'Idempotency-Key: broken-1'
expect_unknown brk2
assert_eq 1 "$(upstream_count /drop)" "executions of drop-1"
assert_eq 1 "$(upstream_count /broken)" "executions of broken-1"
file_has "$T/$DAEMON.err" '"outcome":"outcome_unknown"' || fail "no outcome_unknown logged"
# An unknown outcome never expires (as an abandoned record): past the route's 1 s TTL the request
# is still not sent again. A stored answer of the same route does expire.
RESP=b1 post /brief/x '{"b":1}' 'Idempotency-Key: brief-1' 'X-Answer-Drop: 1'
RESP=b1 expect_problem 502
RESP=b2 post /brief/y '{"b":2}' 'Idempotency-Key: brief-2'
RESP=b2 expect_http 200
assert_eq "null" "$(idem show 'proxy#-#brief-1' --json | jsonq /expires_at)" "expiry of an unknown outcome"
for name in brief-1 drop-1 broken-1; do
  [[ $(idem show "proxy#-#$name" --json | jsonq /expires_at) == null ]] ||
    fail "the unknown outcome $name has an expiry"
done
brief_expired() { [[ $(idem status 'proxy#-#brief-2') == expired ]]; }
wait_until "the stored answer's 1 s TTL runs out" brief_expired
assert_eq failed "$(idem status 'proxy#-#brief-1')" "the unknown outcome past its TTL"
RESP=b3 post /brief/x '{"b":1}' 'Idempotency-Key: brief-1'
expect_unknown b3
assert_eq 1 "$(upstream_count /brief/x)" "executions of brief-1 past the TTL"
# show names the upstream's answer, not an exit code, and says what a failure means here.
idem show 'proxy#-#brief-2' >"$T/show-proxy.txt"
file_has "$T/show-proxy.txt" "answer: HTTP 200" || fail "show of a proxy record: $(cat "$T/show-proxy.txt")"
! grep -q '^exit:' "$T/show-proxy.txt" || fail "show of a proxy record prints an exit code"
! file_has "$T/show-proxy.txt" "--replay-failures" || fail "show of a proxy record names --replay-failures"
idem gc >/dev/null || fail "idem gc failed"
assert_eq failed "$(idem status 'proxy#-#brief-1')" "the unknown outcome after gc"

# --- answers that mean "not done, try again" are not stored ----------------------------------
for status in 408 409 425 429; do
  RESP=n1 post /retry "{\"r\":$status}" "Idempotency-Key: again-$status" "X-Answer-First: $status"
  RESP=n1 expect_http "$status"
  assert_eq "" "$(record_status "proxy#-#again-$status")" "record after a $status"
  RESP=n2 post /retry "{\"r\":$status}" "Idempotency-Key: again-$status" "X-Answer-First: $status"
  RESP=n2 expect_http 200
  RESP=n2 assert_no_header Idempotent-Replayed
  assert_eq succeeded "$(record_status "proxy#-#again-$status")" "record after the retry of $status"
done
assert_eq 8 "$(upstream_count /retry)" "calls of the four keys (each answered twice)"
# Under store_statuses ["2xx", 429, "!204"]: a 429 is stored, a 404 and a 204 are not.
RESP=q1 post /statuses/a '{"q":1}' 'Idempotency-Key: st-429' 'X-Answer-Status: 429'
RESP=q2 post /statuses/a '{"q":1}' 'Idempotency-Key: st-429'
RESP=q2 expect_http 429
RESP=q2 assert_header Idempotent-Replayed true
for status in 404 204; do
  RESP=q3 post /statuses/b "{\"q\":$status}" "Idempotency-Key: st-$status" "X-Answer-Status: $status"
  RESP=q3 expect_http "$status"
  assert_eq "" "$(record_status "proxy#-#st-$status")" "record of a $status under store_statuses"
done

# --- an answer over max_response: the first client gets every byte, duplicates a 409 ---------
RESP=big post /big '{"b":1}' 'Idempotency-Key: big-1' 'X-Answer-Bytes: 200000' 'X-Answer-Header: ETag: "e1"'
RESP=big expect_http 200
RESP=big assert_no_header Idem-Output-Truncated
assert_eq 200000 "$(wc -c <"$T/big.body")" "bytes of the first answer"
node -e 'const u = "0123456789abcdefghijklmnopqrstuvwxyz\n";
  const b = require("fs").readFileSync(process.argv[1], "latin1");
  for (let i = 0; i < b.length; i++) if (b[i] !== u[i % u.length]) process.exit(1);' "$T/big.body" ||
  fail "the first answer's bytes are not the upstream's"
RESP=big2 post /big '{"b":1}' 'Idempotency-Key: big-1'
RESP=big2 expect_idempotency_problem 409 "Answer too large to replay"
RESP=big2 assert_header X-Should-Retry false
RESP=big2 assert_no_header ETag
assert_eq 1 "$(upstream_count /big)" "executions of big-1"

# --- scope_header alone scopes keys: a refreshed token is the same client -------------------
RESP=tok1 post /pay '{"p":1}' 'Idempotency-Key: tok-1' 'X-Tenant: acme' 'Authorization: Bearer old'
RESP=tok1 expect_http 200
RESP=tok2 post /pay '{"p":1}' 'Idempotency-Key: tok-1' 'X-Tenant: acme' 'Authorization: Bearer new'
RESP=tok2 assert_header Idempotent-Replayed true
RESP=tok3 post /pay '{"p":1}' 'Idempotency-Key: tok-1' 'X-Tenant: other' 'Authorization: Bearer new'
RESP=tok3 assert_no_header Idempotent-Replayed
assert_eq 2 "$(upstream_count /pay)" "executions of tok-1 for two tenants"

# --- the proxy's own refusals carry the error member -----------------------------------------
# raw_refusal NAME STATUS TEXT: TEXT sent on a connection of its own gets a STATUS problem with
# the error member.
raw_refusal() {
  raw_connect "$1"
  raw_send "$3" || true
  wait_until "the daemon answers and closes ($1)" bg_exited "$1"
  raw_close
  local out=$T/$1.out
  [[ $(head -1 "$out") == "HTTP/1.1 $2 "* ]] || fail "$1: want $2, got: $(head -c 600 "$out" | cat -v)"
  grep -qi '^content-type: application/problem+json' "$out" || fail "$1: not a problem: $(cat -v "$out")"
  sed '1,/^\r$/d' "$out" >"$T/$1.body"
  assert_eq "$2" "$(jsonq /status <"$T/$1.body")" "$1: status member"
  assert_eq invalid_request_error "$(jsonq /error/type <"$T/$1.body")" "$1: error.type"
  assert_eq "$(jsonq /detail <"$T/$1.body")" "$(jsonq /error/message <"$T/$1.body")" "$1: error.message"
}
raw_refusal framing 400 'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n'
raw_refusal slowbody 408 'POST /x HTTP/1.1\r\nHost: a\r\nIdempotency-Key: k\r\nContent-Length: 10\r\n\r\nab'
raw_refusal chunked 413 'POST /small HTTP/1.1\r\nHost: a\r\nIdempotency-Key: k\r\nTransfer-Encoding: chunked\r\n\r\n80\r\n'"$(printf 'x%.0s' {1..128})"'\r\n0\r\n\r\n'
raw_refusal fields 431 "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: $(head -c 70000 /dev/zero | tr '\0' 'b')\r\n\r\n"
raw_refusal expect 417 'POST /x HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx'
raw_refusal coding 501 'POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'
raw_refusal version 505 'GET /x HTTP/1.2\r\nHost: a\r\n\r\n'
raw_refusal absolute 400 "POST http://127.0.0.1:$PORT/pay HTTP/1.1\r\nHost: a\r\nIdempotency-Key: abs-1\r\nContent-Length: 2\r\n\r\n{}"
assert_eq 0 "$(upstream_count /x)" "refused requests forwarded"
assert_eq 2 "$(upstream_count /pay)" "absolute-form requests forwarded"
stop_daemon
