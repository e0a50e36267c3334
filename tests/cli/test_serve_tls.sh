#!/usr/bin/env bash
# `idem serve --cert --key`: HTTPS on the TCP listener (a self-signed certificate made here with
# the openssl CLI). Deliveries and replays over TLS, keep-alive and pipelining, ALPN http/1.1,
# the lowest version enforced, plain HTTP and silent clients cut off, bad files refused at start
# with one line, a SIGHUP reading a renewed certificate; the page's own listener (--ui) speaks
# TLS too and its session cookie is Secure.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

# make_cert NAME: $T/NAME.pem and $T/NAME.key, a self-signed certificate for 127.0.0.1.
make_cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=$1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$T/$1.key" -out "$T/$1.pem" 2>"$T/openssl.err" ||
    fail "openssl req failed: $(cat "$T/openssl.err")"
}
make_cert first
make_cert second
cat >"$T/serve.json" <<'JSON'
{"hooks": [{"path": "/hooks/x", "command": ["/bin/sh", "-c", "cat; echo \" ran $IDEM_KEY\""],
            "key": {"header": "X-Key"}}]}
JSON
cp "$T/first.pem" "$T/cert.pem"
cp "$T/first.key" "$T/key.pem"
start_daemon "$T/serve.json" --cert "$T/cert.pem" --key "$T/key.pem" --request-timeout 2s
file_has "$T/$DAEMON.err" '"tls":true' || fail "the listening event does not say tls"
URL=https://127.0.0.1:$PORT
CURL_EXTRA=(--cacert "$T/first.pem")

# --- a delivery, and its replay, over TLS --------------------------------------------------------
post /hooks/x hello 'X-Key: k1'
expect_http 200
assert_body 'hello ran k1\n'
post /hooks/x hello 'X-Key: k1'
expect_http 200
assert_header Idempotent-Replayed true
assert_body 'hello ran k1\n'
assert_status '/hooks/x#k1' succeeded

# --- the page's listener speaks TLS too; its session cookie is Secure -----------------------------
stop_daemon
start_daemon "$T/serve.json" --cert "$T/cert.pem" --key "$T/key.pem" --ui
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ui_lib.sh"
ui_found
[[ $UI == https://127.0.0.1:* ]] || fail "the page's address is not https: $UI"
curl -sS "${CURL_EXTRA[@]}" -D "$T/ui.headers" -o /dev/null "$UI_LOGIN" ||
  fail "the login link over TLS"
grep -qi '^set-cookie: idem_ui_session=.*; Secure' "$T/ui.headers" ||
  fail "no Secure session cookie over TLS: $(cat "$T/ui.headers")"
URL=https://127.0.0.1:$PORT

# --- ALPN and keep-alive: two requests on one connection -----------------------------------------
curl -sS -v "${CURL_EXTRA[@]}" "$URL/healthz" "$URL/healthz" >"$T/keep.out" 2>"$T/keep.err" ||
  fail "curl over one kept-alive connection failed: $(cat "$T/keep.err")"
grep -q 'ALPN: server accepted http/1.1' "$T/keep.err" || fail "no ALPN http/1.1: $(cat "$T/keep.err")"
grep -qi 're-using existing connection' "$T/keep.err" || fail "the connection was not kept alive"
assert_bytes "$T/keep.out" 'ok\nok\n'

# --- pipelining: every request answered, in order, on one TLS connection -------------------------
printf 'POST /hooks/x HTTP/1.1\r\nHost: t\r\nX-Key: p1\r\nContent-Length: 5\r\n\r\nfirstPOST /hooks/x HTTP/1.1\r\nHost: t\r\nX-Key: p2\r\nContent-Length: 6\r\n\r\nsecondGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' \
  >"$T/pipelined.in"
# -quiet implies -ign_eof: s_client ends when the server closes, after the last answer.
openssl s_client -quiet -connect "127.0.0.1:$PORT" -CAfile "$T/first.pem" -verify_return_error \
  <"$T/pipelined.in" >"$T/pipelined.out" 2>"$T/pipelined.err" ||
  fail "s_client failed: $(cat "$T/pipelined.err")"
assert_eq '200 200 200' "$(grep -ao '^HTTP/1.1 [0-9]*' "$T/pipelined.out" | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//')" \
  "statuses of the pipelined answers"
assert_eq 'first ran p1|second ran p2|ok' "$(grep -aoE '^(first ran p1|second ran p2|ok)' "$T/pipelined.out" | tr '\n' '|' | sed 's/|$//')" \
  "bodies of the pipelined answers, in order"

# --- the lowest version: TLS 1.1 is refused ------------------------------------------------------
rc=0
curl -sS "${CURL_EXTRA[@]}" --tlsv1.1 --tls-max 1.1 "$URL/healthz" >/dev/null 2>"$T/v11.err" || rc=$?
((rc != 0)) || fail "a TLS 1.1 client was served"

# --- plain HTTP on the TLS port is cut off, unanswered -------------------------------------------
rc=0
curl -sS "http://127.0.0.1:$PORT/healthz" >"$T/plain.out" 2>"$T/plain.err" || rc=$?
((rc != 0)) || fail "a plain HTTP request on the TLS port was answered: $(cat "$T/plain.out")"
assert_empty "$T/plain.out"

# --- a client that never says hello is cut off at the request deadline ---------------------------
raw_connect silent
wait_until "the server closes a connection that sends no TLS handshake" bg_exited silent
bg_wait silent
assert_empty "$T/silent.out"

# --- SIGHUP reads a renewed certificate; connections from then on get it -------------------------
cp "$T/second.pem" "$T/cert.pem"
cp "$T/second.key" "$T/key.pem"
kill -HUP "$(bg_pid "$DAEMON")"
wait_until "the daemon reloads its certificate" file_has "$T/$DAEMON.err" '"event":"tls_reloaded"'
CURL_EXTRA=(--cacert "$T/second.pem")
get /healthz
expect_http 200
rc=0
curl -sS --cacert "$T/first.pem" "$URL/healthz" >/dev/null 2>"$T/old.err" || rc=$?
((rc != 0)) || fail "the old certificate is still served after the reload"
# A broken renewal keeps the certificate in force.
echo garbage >"$T/cert.pem"
kill -HUP "$(bg_pid "$DAEMON")"
wait_until "the daemon refuses the broken certificate" file_has "$T/$DAEMON.err" '"kept":"previous certificate"'
get /healthz
expect_http 200
stop_daemon

# --- --tls-min-version 1.3: a TLS 1.2 client is refused, a 1.3 one served ------------------------
cp "$T/first.pem" "$T/cert.pem"
cp "$T/first.key" "$T/key.pem"
start_daemon "$T/serve.json" --cert "$T/cert.pem" --key "$T/key.pem" --tls-min-version 1.3
URL=https://127.0.0.1:$PORT
CURL_EXTRA=(--cacert "$T/first.pem")
rc=0
curl -sS "${CURL_EXTRA[@]}" --tlsv1.2 --tls-max 1.2 "$URL/healthz" >/dev/null 2>"$T/v12.err" || rc=$?
((rc != 0)) || fail "a TLS 1.2 client was served under --tls-min-version 1.3"
get /healthz
expect_http 200
stop_daemon

# --- bad files are refused at start, with one line -----------------------------------------------
capture missing idem serve --config "$T/serve.json" --listen 127.0.0.1:0 --cert "$T/nope.pem" --key "$T/key.pem"
expect_rc 64
assert_idem_error
file_has "$T/missing.err" "--cert $T/nope.pem: cannot read it" || fail "$(cat "$T/missing.err")"
echo 'not a certificate' >"$T/bad.pem"
capture bad idem serve --config "$T/serve.json" --listen 127.0.0.1:0 --cert "$T/bad.pem" --key "$T/key.pem"
expect_rc 64
assert_idem_error
file_has "$T/bad.err" "--cert $T/bad.pem: not a usable certificate" || fail "$(cat "$T/bad.err")"
capture mismatch idem serve --config "$T/serve.json" --listen 127.0.0.1:0 --cert "$T/first.pem" --key "$T/second.key"
expect_rc 64
assert_idem_error
file_has "$T/mismatch.err" "not the key of the certificate" || fail "$(cat "$T/mismatch.err")"
capture alone idem serve --config "$T/serve.json" --listen 127.0.0.1:0 --cert "$T/first.pem"
expect_rc 64
capture version idem serve --config "$T/serve.json" --cert "$T/first.pem" --key "$T/first.key" --tls-min-version 1.1
expect_rc 64
integrity_ok
