#!/usr/bin/env bash
# Passed-through answers are streamed (contract §7: "streamed both ways where possible"): the first
# piece of a chunked GET reaches the client before the upstream has sent the rest. Large answers
# pass through whole, and a large keyed answer is replayed byte for byte. A reload in the middle
# of a stream does not cut it.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

start_upstream up
start_serve --upstream "$UURL"
mkfifo "$T/rest"
bg stream curl -sS -N --max-time 60 -H 'X-Answer-Stream: 3' -H "X-Answer-Hold: $T/rest" \
  -D "$T/stream.headers" "$URL/feed"
got_first() { file_has "$T/stream.out" 'piece 1'; }
wait_until "the first piece reaches the client" got_first
! file_has "$T/stream.out" 'piece 2' || fail "the rest came before the upstream sent it"
bg_running stream || fail "the answer ended before the upstream sent the rest"
# A reload meanwhile replaces the route; the stream goes on with the connection it has.
kill -HUP "$(bg_pid "$DAEMON")"
reloaded() { file_has "$T/$DAEMON.err" '"event":"reloaded"'; }
wait_until "the daemon reloads" reloaded
release_fifo "$T/rest"
bg_wait stream
expect_rc 0
assert_bytes "$T/stream.out" 'piece 1\npiece 2\npiece 3\n'
grep -qi '^Transfer-Encoding: chunked' "$T/stream.headers" || fail "headers: $(cat "$T/stream.headers")"
assert_eq 1 "$(upstream_count /feed)" "calls of the stream"

# A 6 MiB answer passes through whole, twice (never stored).
curl -sS --max-time 60 -H 'X-Answer-Bytes: 6291456' -o "$T/big1.body" "$URL/big"
curl -sS --max-time 60 -H 'X-Answer-Bytes: 6291456' -o "$T/big2.body" "$URL/big"
assert_eq 6291456 "$(wc -c <"$T/big1.body")" "bytes of a passed-through answer"
assert_same "$T/big1.body" "$T/big2.body"
assert_eq 2 "$(upstream_count /big)" "calls of the passed-through answer"

# A 3 MiB keyed answer (under the default 10 MiB max_response) is replayed byte for byte.
RESP=k1 post /export '{"e":1}' 'Idempotency-Key: export-1' 'X-Answer-Bytes: 3145728'
RESP=k1 expect_http 200
RESP=k2 post /export '{"e":1}' 'Idempotency-Key: export-1'
RESP=k2 assert_header Idempotent-Replayed true
RESP=k2 assert_no_header Idem-Output-Truncated
assert_eq 3145728 "$(wc -c <"$T/k2.body")" "bytes of the replay"
assert_same "$T/k1.body" "$T/k2.body"
assert_eq 1 "$(upstream_count /export)" "calls of export-1"
stop_daemon
