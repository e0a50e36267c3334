#!/usr/bin/env bash
# The daemon's HTTP/1.1 transport: raw bodies of every content type reach signature checks and
# the handler byte for byte up to max_body; HEAD; 100-continue, and 413 before the body is sent.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_http_lib.sh"
start_daemon "$T/serve.json"

# --- form-encoded bodies reach the signature check and the handler untouched ----------------------
# GitHub's "application/x-www-form-urlencoded" content type: payload=<url-encoded JSON>, 100 KiB.
chunk='%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%2C%22a%2Bb%22%3A%22x%26y%3Dz%22%7D+'
form=payload=
while ((${#form} < 100 * 1024)); do form+=$chunk; done
form+='&extra=1+2%2B3'
sign_github "$GH_SECRET" "$form" form-delivery-1
post /hooks/github "$form" "${SIG[@]}" 'Content-Type: application/x-www-form-urlencoded'
expect_http 200
assert_body '{"key":"form-delivery-1","bytes":%s}\n' "${#form}"
assert_same "$T/resp.sent" "$T/stdin.form-delivery-1"
post /hooks/github "$form" "${SIG[@]}" 'Content-Type: application/x-www-form-urlencoded'
expect_http 200
assert_header Idempotent-Replayed true
assert_eq 1 "$(runs /hooks/github form-delivery-1)" "runs of the form delivery"
# Slack's kind: a small form, signed; also multipart and an unknown type, raw all the same.
for type in 'application/x-www-form-urlencoded; charset=utf-8' 'multipart/form-data; boundary=b' \
  'text/plain' 'application/octet-stream'; do
  body="token=t&text=a%20b&type=${type%%;*}"
  id=type-$(printf %s "$type" | cksum | cut -d' ' -f1)
  sign_github "$GH_SECRET" "$body" "$id"
  post /hooks/github "$body" "${SIG[@]}" "Content-Type: $type"
  expect_http 200
  assert_same "$T/resp.sent" "$T/stdin.$id"
done
# Over the hook's max_body (64 KiB here): 413, nothing stored or run.
sign_github "$GH_SECRET" "$form" form-delivery-2
post /hooks/small "$form" "${SIG[@]}" 'Content-Type: application/x-www-form-urlencoded'
expect_problem 413
assert_eq 0 "$(runs /hooks/small form-delivery-2)" "runs of an oversize form delivery"
assert_status '/hooks/small#form-delivery-2' none
# The limit is the hook's in the config in force: a reload that raises it applies at once.
sed 's/"max_body": "64KiB"/"max_body": "150KiB"/' "$T/serve.json" >"$T/serve.json.tmp"
mv -f "$T/serve.json.tmp" "$T/serve.json"
kill -HUP "$(bg_pid daemon)"
wait_until "the daemon reloads" file_has "$T/daemon.err" '"event":"reloaded"'
post /hooks/small "$form" "${SIG[@]}" 'Content-Type: application/x-www-form-urlencoded'
expect_http 200
assert_same "$T/resp.sent" "$T/stdin.form-delivery-2"

# --- HEAD, 100-continue, and 413 before the body is sent -----------------------------------------
RESP=head
curl -sS --max-time 20 -I -o /dev/null -D "$T/head.rawheaders" -w '%{http_code}' "$URL/healthz" >"$T/head.status"
tr -d '\r' <"$T/head.rawheaders" >"$T/head.headers"
expect_http 200
assert_header Content-Length 3
RESP=resp
raw_connect continue
raw_send 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: cont\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n'
wait_until "the server says 100 Continue" file_has "$T/continue.out" 'HTTP/1.1 100 Continue'
raw_send 'body'
wait_until "the delivery after 100 Continue is answered" file_has "$T/continue.out" '"key":"cont"'
raw_close
expect_statuses continue '100 200'
assert_bytes "$T/stdin.cont" body
exchange expect-too-big 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: big\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n'
expect_statuses expect-too-big 413
assert_status '/hooks/x#big' none
exchange huge-head "GET /healthz HTTP/1.1\\r\\nHost: t\\r\\nX-Big: $(printf 'a%.0s' {1..70000})\\r\\n\\r\\n"
expect_statuses huge-head 431
stop_daemon

# --- a request not in within --request-timeout: 408; connections over the cap: shed --------------
DAEMON=daemon2
start_daemon "$T/serve.json" --request-timeout 1s
raw_connect partial
raw_send 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: partial\r\nContent-Length: 10\r\n\r\nabc'
raw_close
wait_until "the partial request is cut off" bg_exited partial
bg_wait partial
expect_statuses partial 408
assert_status '/hooks/x#partial' none
stop_daemon
# One connection served and one waiting (--max-connections 1); a third is answered 503 with
# Retry-After and closed.
# (Idle connections are closed after 5 s: the checks below take far less.)
DAEMON=daemon3
start_daemon "$T/serve.json" --max-connections 1
raw_connect held1
held1=$RAW_FD
raw_connect held2
held2=$RAW_FD
raw_connect shed
raw_close
wait_until "the connection over the cap is closed" bg_exited shed
head -n 1 "$T/shed.out" | grep -q '^HTTP/1.1 503 Service Unavailable' ||
  fail "the connection over the cap: $(head -c 300 "$T/shed.out")"
grep -q '^Retry-After: 1' "$T/shed.out" || fail "no Retry-After over the cap: $(cat "$T/shed.out")"
bg_running held1 || fail "the served connection was closed"
bg_running held2 || fail "the waiting connection was closed"
exec {held1}>&- {held2}>&-
kill "$(bg_pid held1)" "$(bg_pid held2)"
get /metrics
expect_http 200
grep -qx 'idem_connections_shed_total 1' "$T/resp.body" ||
  fail "/metrics: $(grep shed "$T/resp.body")"
stop_daemon
integrity_ok
