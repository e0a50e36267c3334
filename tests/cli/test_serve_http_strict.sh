#!/usr/bin/env bash
# Ambiguous or lenient HTTP framing is refused with 400 (a problem naming the reason) at once,
# never waited out, and nothing is stored or run for it; an unknown HTTP version gets 505.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_http_lib.sh"
start_daemon "$T/serve.json"

# --- lenient framing is refused with 400, at once, and nothing is run ------------------------------
refused_400() {  # refused_400 NAME REQUEST: the server answers 400 and closes within 3 s
  local start
  start=$(now_ms)
  exchange "$1" "$2"
  expect_statuses "$1" 400
  local elapsed=$(($(now_ms) - start))
  ((elapsed < 3000)) || fail "$1: answered after $elapsed ms (--request-timeout is 10s): not at once"
  grep -qa 'application/problem+json' "$T/$1.out" || fail "$1: the 400 is not a problem: $(cat -v "$T/$1.out")"
}
refused_400 two-lengths 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: cl2\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde'
refused_400 te-and-length 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: te-cl\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n3\r\nabc\r\n0\r\n\r\n'
refused_400 negative-length 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: neg\r\nContent-Length: -1\r\n\r\n'
refused_400 no-colon 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: nocolon\r\nThis line has no colon\r\nContent-Length: 2\r\n\r\nab'
refused_400 space-before-colon 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key : sp\r\nContent-Length: 2\r\n\r\nab'
refused_400 folded 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: fold\r\n  ed\r\nContent-Length: 2\r\n\r\nab'
refused_400 http10-no-length 'POST /hooks/x HTTP/1.0\r\nX-Key: old\r\n\r\n'
refused_400 http11-no-length 'POST /hooks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: nolen\r\n\r\n'
refused_400 garbage 'NOT HTTP AT ALL\r\n\r\n'
grep -qa 'two different Content-Length' "$T/two-lengths.out" || fail "the 400 does not say why: $(cat -v "$T/two-lengths.out")"
for k in cl2 te-cl neg nocolon sp fold old nolen; do
  assert_status "/hooks/x#$k" none
  assert_eq 0 "$(runs /hooks/x "$k")" "runs of the refused request $k"
done
exchange version 'GET /healthz HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n'
expect_statuses version 505
stop_daemon
integrity_ok
