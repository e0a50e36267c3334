#!/usr/bin/env bash
# Pipelined HTTP/1.1 requests are all answered, in order (none dropped), and all stored; a
# refusal in the middle says Connection: close; keep-alive and HTTP/1.0 connections.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_http_lib.sh"
start_daemon "$T/serve.json"

# --- pipelining: every request is answered, in order ---------------------------------------------
exchange pipe-post 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: p1\r\nContent-Length: 5\r\n\r\nfirstPOST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: p2\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecond'
expect_statuses pipe-post '200 200'
assert_eq '"key":"p1" "key":"p2"' "$(grep -ao '"key":"p[12]"' "$T/pipe-post.out" | tr '\n' ' ' | sed 's/ $//')" \
  "order of the pipelined answers"
assert_status '/hooks/x#p1' succeeded
assert_status '/hooks/x#p2' succeeded
assert_bytes "$T/stdin.p1" first
assert_bytes "$T/stdin.p2" second
exchange pipe-health 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'
expect_statuses pipe-health '200 200 200'
# A refusal in the middle closes the connection, saying so, rather than dropping what follows.
exchange pipe-refused 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nPOST /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\nabcGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'
expect_statuses pipe-refused '200 404'
grep -qai '^Connection: close' "$T/pipe-refused.out" || fail "the 404 before unread bytes does not say Connection: close"
# Keep-alive: one connection, several requests one after the other.
raw_connect keep
raw_send 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'
answers_at_least() { (($(grep -ac $'^HTTP/1.1 200 ' "$T/keep.out") >= $1)); }
wait_until "the first answer on the kept-alive connection" answers_at_least 1
raw_send 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: keep\r\nContent-Length: 4\r\n\r\nkeep'
wait_until "the second answer on the kept-alive connection" answers_at_least 2
raw_send 'GET /healthz HTTP/1.0\r\n\r\n'  # HTTP/1.0 without keep-alive: the server closes after it
raw_close
wait_until "the server closes the HTTP/1.0 connection" bg_exited keep
bg_wait keep
expect_statuses keep '200 200 200'
stop_daemon
integrity_ok
