#!/usr/bin/env bash
# The ledger API on a Unix socket (`idem serve --socket PATH`), driven with curl --unix-socket:
# the socket is made 0600, needs no token, serves /healthz and /metrics too, and is removed at
# stop; a stale socket file is replaced, any other file (or a live socket) is refused. Without
# --ledger the TCP listener has no ledger.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ledger_lib.sh"

sock=$T/idem.sock
# ucall METHOD PATH [BODY]: over the socket, no token; the answer as request() leaves it.
ucall() {
  local r=$T/resp code=0
  printf %s "${3:-}" >"$r.sent"
  curl -sS --max-time 60 --unix-socket "$sock" -X "$1" -H 'Content-Type:' -H 'Expect:' \
    --data-binary "@$r.sent" -D "$r.rawheaders" -o "$r.body" -w '%{http_code}' \
    "http://localhost$2" >"$r.status" 2>"$r.curlerr" || code=$?
  ((code == 0)) || fail "curl --unix-socket $1 $2 failed ($code): $(cat "$r.curlerr")"
  tr -d '\r' <"$r.rawheaders" >"$r.headers"
}

# start_socket [ARG...]: `idem serve --socket $sock` on 127.0.0.1 port 0, up once the port file
# is written (the socket is made before it).
start_socket() {
  local port_file=$T/$DAEMON.port
  rm -f -- "$port_file"
  bg "$DAEMON" idem serve --socket "$sock" --listen 127.0.0.1:0 --port-file "$port_file" "$@"
  _socket_up_or_gone() { [[ -s $port_file ]] || bg_exited "$DAEMON"; }
  wait_until "daemon '$DAEMON' writes its port file" _socket_up_or_gone
  [[ -s $port_file ]] || fail "daemon exited before listening: $(head -c 2000 "$T/$DAEMON.err")"
  PORT=$(<"$port_file")
  URL=http://127.0.0.1:$PORT
}

start_socket
[[ -S $sock ]] || fail "no socket at $sock"
assert_eq 600 "$(stat -c %a "$sock")" "socket mode"
[[ ! -e $TOKEN_FILE ]] || fail "no token file without --ledger"
ucall POST /v1/claim '{"key": "s", "lease": "1m"}'
expect_http 201
tok=$(answer_field /attempt_token)
ucall POST /v1/heartbeat "{\"key\": \"s\", \"attempt_token\": \"$tok\"}"
expect_http 200
ucall POST /v1/finish "{\"key\": \"s\", \"attempt_token\": \"$tok\", \"status\": \"succeeded\", \"stdout_b64\": \"b2sK\"}"
expect_http 200
ucall GET /v1/records/s
expect_http 200
assert_eq succeeded "$(answer_field /status)" "record over the socket"
assert_eq "ok" "$(idem show s --stdout)" "stored stdout"
ucall GET /healthz
expect_http 200
ucall GET /metrics
grep -q '^idem_ledger_requests_total{outcome="claimed"} 1' "$T/resp.body" || fail "metrics: $(cat "$T/resp.body")"
ucall GET /hooks/x
expect_http 404
# The TCP listener has no ledger without --ledger.
request POST /v1/claim '{"key": "t"}'
expect_http 404
get /healthz
expect_http 200

# A second daemon on the same live socket is refused (71) and leaves it alone.
capture second idem serve --socket "$sock" --listen 127.0.0.1:0
expect_rc 71
assert_idem_error
ucall GET /healthz
expect_http 200
stop_daemon
[[ ! -e $sock ]] || fail "the socket file is left after stop"

# A daemon killed leaves a stale socket file: the next one replaces it.
start_socket
kill_daemon
[[ -S $sock ]] || fail "kill -9 should leave the socket file"
start_socket --ledger
TOKEN=$(<"$TOKEN_FILE")
ucall GET /v1/records/s
expect_http 200
# Both at once: the token on TCP, none on the socket.
call GET /v1/records/s
expect_http 200
request GET /v1/records/s ""
expect_problem 401
stop_daemon

# Any other file at the path is refused, and kept.
echo data >"$sock"
capture file idem serve --socket "$sock" --listen 127.0.0.1:0
expect_rc 71
assert_idem_error
file_has "$T/file.err" "not a socket" || fail "$(cat "$T/file.err")"
assert_eq data "$(cat "$sock")" "the file is untouched"
