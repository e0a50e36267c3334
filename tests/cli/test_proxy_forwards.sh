#!/usr/bin/env bash
# The proxy's bound on keyed forwards under way (max_forwards): a forward whose answer is still
# awaited after its client's 504 holds its slot; one more keyed request gets 503 "Proxy busy" with
# Retry-After, nothing sent and its key released, and goes through once the slot is given back.
# Duplicates are answered from the store meanwhile.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

start_upstream up
cat >"$T/proxy.json" <<JSON
{"proxy": {"upstream": "$UURL", "timeout": "1s", "late_answer": "60s", "max_forwards": 1}}
JSON
start_serve --config "$T/proxy.json"

# A stored answer, to be replayed while the slot is taken.
RESP=first post /done '{"d":1}' 'Idempotency-Key: done-1'
RESP=first expect_http 200

# The one slot: a slow upstream's answer, awaited past the client's 504.
mkfifo "$T/hold"
post /slow '{"s":1}' 'Idempotency-Key: slow-1' "X-Answer-Hold: $T/hold"
expect_problem 504
assert_eq running "$(record_status proxy#-#slow-1)" "the slow request's record"

# A duplicate meanwhile is replayed: it sends nothing, so it needs no slot.
RESP=dup post /done '{"d":1}' 'Idempotency-Key: done-1'
RESP=dup expect_http 200
RESP=dup assert_header Idempotent-Replayed true
assert_eq 1 "$(upstream_count /done)" "executions of done-1"

# Another key meanwhile: refused, nothing sent, the key released.
RESP=busy post /other '{"o":1}' 'Idempotency-Key: other-1'
RESP=busy expect_problem 503
RESP=busy assert_header Retry-After 1
assert_eq "Proxy busy" "$(jsonq /title <"$T/busy.body")" "the 503's title"
assert_eq api_error "$(jsonq /error/type <"$T/busy.body")" "the 503's error member"
assert_eq "" "$(record_status proxy#-#other-1)" "a record for the refused request"
assert_eq 0 "$(upstream_count /other)" "requests of other-1 sent"
# Requests that are not keyed are passed through, whatever the bound.
RESP=get get /other
RESP=get expect_http 200

# The late answer comes: it is stored and the slot given back; the refused key then goes through.
release_fifo "$T/hold"
other_through() {
  RESP=retry post /other '{"o":1}' 'Idempotency-Key: other-1'
  [[ $(RESP=retry http_status) == 200 ]]
}
wait_until "other-1 goes through once the slot is free" other_through
assert_eq succeeded "$(record_status proxy#-#slow-1)" "the slow request's record"
assert_eq 1 "$(upstream_count /slow)" "executions of slow-1"
# The upstream's count includes the GET that was passed through.
assert_eq 2 "$(upstream_count /other)" "requests to /other (the GET and other-1 once)"
file_has "$T/$DAEMON.err" '"outcome":"busy"' || fail "no busy outcome logged"
