#!/usr/bin/env bash
# How the proxy is configured (contract §7, issue point 5): `--upstream URL`, a "proxy" section beside
# hooks in one config (hooks answer their paths, the proxy every other), the usage errors
# (nothing to serve, both --upstream and a proxy section, a bad URL, a bad field), per-route
# settings, and SIGHUP reloading the section.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

# Usage errors: one line, exit 64, before anything listens.
capture none idem serve --listen 127.0.0.1:0
expect_rc 64
assert_idem_error none
file_has "$T/none.err" 'nothing to serve: give --config FILE, --hooks FILE, --upstream URL, --ledger or --socket PATH' ||
  fail "$(cat "$T/none.err")"
capture badurl idem serve --upstream ftp://example --listen 127.0.0.1:0
expect_rc 64
assert_idem_error badurl
file_has "$T/badurl.err" '--upstream' || fail "$(cat "$T/badurl.err")"
echo '{"proxy": {"upstream": "http://127.0.0.1:1", "methods": ["GET"]}}' >"$T/get.json"
capture get idem serve --config "$T/get.json" --listen 127.0.0.1:0
expect_rc 64
assert_idem_error get
file_has "$T/get.err" "proxy.methods[0]: 'GET' is never keyed" || fail "$(cat "$T/get.err")"
echo '{"proxy": {"upstream": "http://127.0.0.1:1"}}' >"$T/both.json"
capture both idem serve --config "$T/both.json" --upstream http://127.0.0.1:2 --listen 127.0.0.1:0
expect_rc 64
assert_idem_error both
file_has "$T/both.err" 'give it or --upstream, not both' || fail "$(cat "$T/both.err")"

# Hooks beside a proxy in one config: the hook answers its path, the proxy the rest.
start_upstream up
cat >"$T/mixed.json" <<JSON
{"hooks": [{"path": "/hooks/echo", "command": ["cat"], "key": {"header": "X-Id"}}],
 "proxy": {"upstream": "$UURL", "scope_header": "X-Tenant",
           "routes": [{"prefix": "/v1/refunds", "methods": ["POST", "DELETE"]}]}}
JSON
start_serve --config "$T/mixed.json"
post /hooks/echo 'to the hook' 'X-Id: h1'
expect_http 200
assert_body 'to the hook'
assert_eq 0 "$(upstream_count)" "calls after the hook's delivery"
post /v1/orders '{"o":1}' 'Idempotency-Key: o1'
expect_http 200
assert_eq 1 "$(upstream_count /v1/orders)" "calls of the proxied POST"
# scope_header scopes keys like Authorization: tenant b does not get tenant a's answer.
RESP=ta post /v1/pay '{"p":1}' 'Idempotency-Key: t1' 'X-Tenant: a'
RESP=tb post /v1/pay '{"p":1}' 'Idempotency-Key: t1' 'X-Tenant: b'
RESP=tb assert_no_header Idempotent-Replayed
RESP=ta2 post /v1/pay '{"p":1}' 'Idempotency-Key: t1' 'X-Tenant: a'
RESP=ta2 assert_header Idempotent-Replayed true
assert_same "$T/ta.body" "$T/ta2.body"
assert_eq 2 "$(upstream_count /v1/pay)" "calls of t1 by two tenants"
# A route's methods: DELETE is keyed under /v1/refunds, passed through elsewhere.
request DELETE /v1/refunds/3 ''
expect_idempotency_problem 400 "Idempotency-Key is missing"
request DELETE /v1/orders/3 ''
expect_http 200
RESP=m get /metrics
grep -q '^idem_deliveries_total{hook="/hooks/echo",outcome="ran"} 1' "$T/m.body" ||
  fail "hook metrics: $(grep deliveries "$T/m.body")"
grep -q '^idem_proxy_requests_total{outcome="forwarded"} 3' "$T/m.body" ||
  fail "proxy metrics: $(grep proxy "$T/m.body")"

# SIGHUP reloads the section: PUT becomes keyed.
request PUT /v1/orders/4 ''
expect_http 200
cat >"$T/mixed.json" <<JSON
{"hooks": [{"path": "/hooks/echo", "command": ["cat"], "key": {"header": "X-Id"}}],
 "proxy": {"upstream": "$UURL", "methods": ["POST", "PUT"]}}
JSON
kill -HUP "$(bg_pid "$DAEMON")"
reloaded() { file_has "$T/$DAEMON.err" '"event":"reloaded"'; }
wait_until "the daemon reloads" reloaded
request PUT /v1/orders/4 ''
expect_idempotency_problem 400 "Idempotency-Key is missing"
request PATCH /v1/orders/4 ''
expect_http 200
stop_daemon

# --upstream beside a config of hooks: both are served.
echo '{"hooks": [{"path": "/hooks/echo", "command": ["cat"], "key": {"header": "X-Id"}}]}' \
  >"$T/hooks.json"
DAEMON=d2
start_serve --config "$T/hooks.json" --upstream "$UURL"
post /hooks/echo 'hook again' 'X-Id: h2'
assert_body 'hook again'
post /anything '{"a":1}' 'Idempotency-Key: a1'
expect_http 200
assert_eq 1 "$(upstream_count /anything)" "calls through --upstream beside hooks"
stop_daemon d2

# Without a proxy, an unknown path is still 404.
DAEMON=d3
start_serve --config "$T/hooks.json"
post /anything '{"a":1}' 'Idempotency-Key: a1'
expect_http 404
stop_daemon d3
