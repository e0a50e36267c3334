#!/usr/bin/env bash
# The Idempotency-Key proxy (contract §7) in front of a real upstream: keys (missing, bare, quoted,
# malformed, over-long), replays byte for byte with Idempotent-Replayed, the headers stored and
# not (Set-Cookie), 422 for another request under a used key, keys scoped by Authorization,
# other methods passed through, and /metrics.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

start_upstream up
start_serve --upstream "$UURL"

# No key, a malformed one, an over-long one: 400 with the draft's titles; nothing forwarded.
post /orders '{"amount":1}'
expect_idempotency_problem 400 "Idempotency-Key is missing"
post /orders '{"amount":1}' 'Idempotency-Key: "unterminated'
expect_idempotency_problem 400 "Idempotency-Key is malformed"
post /orders '{"amount":1}' "Idempotency-Key: $(printf 'k%.0s' {1..256})"
expect_idempotency_problem 400 "Idempotency-Key is malformed"
jsonq /detail <"$T/resp.body" | grep -q '256 bytes' || fail "detail: $(cat "$T/resp.body")"
request PATCH /orders/1 '{}'
expect_idempotency_problem 400 "Idempotency-Key is missing"
assert_eq 0 "$(upstream_count)" "requests that reached the upstream"

# A 255-byte key is accepted.
post /long '{"amount":255}' "Idempotency-Key: $(printf 'k%.0s' {1..255})" 'X-Answer-Status: 201'
expect_http 201

# The first answer: the upstream's, Set-Cookie included.
answer=(X-Answer-Status:\ 201 "X-Answer-Header: Location: /orders/7"
        'X-Answer-Header: ETag: "v7"' "X-Answer-Header: Set-Cookie: session=abc"
        "X-Answer-Header: Cache-Control: no-store")
RESP=first post '/orders?currency=eur' '{"amount":7}' 'Idempotency-Key: order-7' "${answer[@]}"
RESP=first expect_http 201
RESP=first assert_header Location /orders/7
RESP=first assert_header ETag '"v7"'
RESP=first assert_header Set-Cookie session=abc
RESP=first assert_header Content-Type application/json
RESP=first assert_no_header Idempotent-Replayed
assert_eq 1 "$(upstream_count /orders)" "calls after the first of order-7"

# Duplicates, bare and as a structured-field string: the stored answer, byte for byte, without
# Set-Cookie, with Idempotent-Replayed. The upstream is not called again.
for key in 'order-7' '"order-7"'; do
  RESP=again post '/orders?currency=eur' '{"amount":7}' "Idempotency-Key: $key"
  RESP=again expect_http 201
  assert_same "$T/first.body" "$T/again.body"
  RESP=again assert_header Idempotent-Replayed true
  RESP=again assert_header Location /orders/7
  RESP=again assert_header ETag '"v7"'
  RESP=again assert_header Cache-Control no-store
  RESP=again assert_header Content-Type application/json
  RESP=again assert_no_header Set-Cookie
done
assert_eq 1 "$(upstream_count /orders)" "calls after the duplicates of order-7"
# An escaped quote in a structured-field string is part of the key.
post /quoted '{"amount":8}' 'Idempotency-Key: "a\"b"'
expect_http 200
post /quoted '{"amount":8}' 'Idempotency-Key: "a\"b"'
assert_header Idempotent-Replayed true

# Same key, another request: 422 (body, query, path, method each count).
post '/orders?currency=eur' '{"amount":70}' 'Idempotency-Key: order-7'
expect_idempotency_problem 422 "Idempotency-Key is already used"
post '/orders?currency=usd' '{"amount":7}' 'Idempotency-Key: order-7'
expect_idempotency_problem 422 "Idempotency-Key is already used"
post '/refunds?currency=eur' '{"amount":7}' 'Idempotency-Key: order-7'
expect_idempotency_problem 422 "Idempotency-Key is already used"
request PATCH '/orders?currency=eur' '{"amount":7}' 'Idempotency-Key: order-7'
expect_idempotency_problem 422 "Idempotency-Key is already used"
assert_eq 1 "$(upstream_count /orders)" "calls after the conflicts"

# Keys are scoped by Authorization: client B never gets A's answer, nor A B's.
RESP=a post /charges '{"c":1}' 'Idempotency-Key: shared' 'Authorization: Bearer client-a'
RESP=b post /charges '{"c":1}' 'Idempotency-Key: shared' 'Authorization: Bearer client-b'
RESP=b assert_no_header Idempotent-Replayed
[[ $(jsonq /n <"$T/a.body") != "$(jsonq /n <"$T/b.body")" ]] || fail "B got A's answer"
RESP=a2 post /charges '{"c":1}' 'Idempotency-Key: shared' 'Authorization: Bearer client-a'
assert_same "$T/a.body" "$T/a2.body"
RESP=a2 assert_header Idempotent-Replayed true
RESP=n post /charges '{"c":1}' 'Idempotency-Key: shared'
RESP=n assert_no_header Idempotent-Replayed
assert_eq 3 "$(upstream_count /charges)" "one call per scope"
# The stored request keeps Authorization by name only; show reads the proxy's record names.
scoped=$(idem ls --json | grep -o '"key":"proxy#[0-9a-f]\{16\}#shared"' | head -1)
[[ -n $scoped ]] || fail "no scoped record: $(idem ls)"
scoped=${scoped#\"key\":\"}
scoped=${scoped%\"}
idem show --request "$scoped" >"$T/request.json"
file_has "$T/request.json" '[redacted]' || fail "stored request: $(cat "$T/request.json")"
! file_has "$T/request.json" client-a || fail "the token was stored: $(cat "$T/request.json")"
idem show --stdout proxy#-#order-7 >"$T/stored.body"
assert_same "$T/first.body" "$T/stored.body"

# Other methods pass through untouched, each call reaching the upstream; no key needed.
before=$(upstream_count /things)
for method in GET HEAD OPTIONS PUT DELETE; do
  if [[ $method == HEAD ]]; then  # curl -I: a HEAD's answer announces a body that never comes
    curl -sS -I -H 'X-Answer-Status: 203' -H 'X-Answer-Header: Set-Cookie: p=1' \
      -o /dev/null -D "$T/p.rawheaders" -w '%{http_code}' "$URL/things" >"$T/p.status"
    tr -d '\r' <"$T/p.rawheaders" >"$T/p.headers"
  else
    RESP=p request "$method" /things '' 'X-Answer-Status: 203' 'X-Answer-Header: Set-Cookie: p=1'
  fi
  RESP=p expect_http 203
  [[ $(head -n 1 "$T/p.headers") == "HTTP/1.1 203 Non-Authoritative Information" ]] ||
    fail "$method: status line $(head -n 1 "$T/p.headers")"
  RESP=p assert_header Set-Cookie p=1
  RESP=p assert_no_header Idempotent-Replayed
done
assert_eq $((before + 5)) "$(upstream_count /things)" "passed-through calls"
RESP=g request GET '/things?x=1' '' 'X-Custom: kept'
[[ $(jsonq /url <"$T/g.body") == '/things?x=1' ]] || fail "target: $(cat "$T/g.body")"
grep -q '"X-Custom","kept"' "$T/g.body" || fail "header not forwarded: $(cat "$T/g.body")"
grep -q '"X-Forwarded-For","127.0.0.1"' "$T/g.body" || fail "no X-Forwarded-For: $(cat "$T/g.body")"
grep -q "\"Host\",\"127.0.0.1:$UPORT\"" "$T/g.body" || fail "Host: $(cat "$T/g.body")"

# /metrics: the proxy's family, by outcome.
RESP=m get /metrics
for outcome in forwarded replayed conflict missing_key bad_key passed_through; do
  grep -q "^idem_proxy_requests_total{outcome=\"$outcome\"} [1-9]" "$T/m.body" ||
    fail "no $outcome in /metrics: $(grep proxy "$T/m.body")"
done
file_has "$T/$DAEMON.err" '"family":"proxy"' || fail "no proxy log lines"
stop_daemon
