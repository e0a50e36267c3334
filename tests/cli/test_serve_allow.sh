#!/usr/bin/env bash
# Allow-lists ("allow": addresses and CIDR ranges) of native hooks and of the proxy: a peer
# outside them gets 403 problem+json before its body is read (nothing run, nothing stored); one
# inside is served. Entries that are not ranges are refused at start, naming the entry.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

cat >"$T/serve.json" <<JSON
{"hooks": [
  {"path": "/hooks/local", "command": ["/bin/sh", "-c", "cat; touch $T/ran.local"],
   "key": {"header": "X-Key"}, "allow": ["10.0.0.0/8", "127.0.0.0/8", "::1"]},
  {"path": "/hooks/lan", "command": ["/bin/sh", "-c", "touch $T/ran.lan"],
   "key": {"header": "X-Key"}, "allow": ["10.0.0.0/8", "192.168.1.5"]}],
 "proxy": {"upstream": "http://127.0.0.1:1", "allow": ["fd00::/8"]}}
JSON
start_daemon "$T/serve.json"

post /hooks/local hello 'X-Key: a'
expect_http 200
assert_body hello
[[ -e $T/ran.local ]] || fail "the allowed delivery did not run"

post /hooks/lan hello 'X-Key: b'
expect_problem 403
assert_eq "Forbidden" "$(jsonq /title <"$T/resp.body")" "title of the 403"
[[ ! -e $T/ran.lan ]] || fail "a delivery from outside the allow-list ran"
[[ $(ls_keys) == '/hooks/local#a' ]] || fail "a refused delivery was stored: $(ls_keys)"
file_has "$T/$DAEMON.err" '"outcome":"forbidden"' || fail "no forbidden outcome in the log"
get /metrics
file_has "$T/resp.body" 'idem_deliveries_total{hook="/hooks/lan",outcome="forbidden"} 1' ||
  fail "metrics do not count the refusal: $(grep lan "$T/resp.body")"

# Refused before the body is read: an announced 64 MiB body that never comes is answered at once.
exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
printf 'POST /hooks/lan HTTP/1.1\r\nHost: t\r\nX-Key: c\r\nContent-Length: 67108864\r\n\r\n' >&"$fd"
IFS= read -r -t 20 status_line <&"$fd" || fail "no answer to an unread body's head"
exec {fd}>&-
[[ $status_line == 'HTTP/1.1 403 '* ]] || fail "want 403 before the body, got '$status_line'"

# The proxy's allow-list: 127.0.0.1 is not in fd00::/8, so nothing is forwarded (there is no
# upstream to forward to: a 502 would mean it tried).
post /other hello 'Idempotency-Key: k'
expect_problem 403
stop_daemon

# Entries that are not ranges are refused at start, naming the entry.
echo '{"hooks": [{"path": "/h", "command": ["true"], "allow": ["10.0.0.0/8", "10.0.0.0/33"]}]}' >"$T/bad.json"
capture bad idem serve --config "$T/bad.json" --listen 127.0.0.1:0
expect_rc 64
assert_idem_error bad
file_has "$T/bad.err" "hooks[0].allow[1]: '10.0.0.0/33' is not an address or a CIDR range" ||
  fail "$(cat "$T/bad.err")"
echo '{"hooks": [{"path": "/h", "command": ["true"], "allow": []}]}' >"$T/empty.json"
capture empty idem serve --config "$T/empty.json" --listen 127.0.0.1:0
expect_rc 64
file_has "$T/empty.err" "hooks[0].allow" || fail "$(cat "$T/empty.err")"
echo '{"proxy": {"upstream": "http://127.0.0.1:1", "allow": ["example.com"]}}' >"$T/name.json"
capture name idem serve --config "$T/name.json" --listen 127.0.0.1:0
expect_rc 64
file_has "$T/name.err" "proxy.allow[0]: 'example.com' is not an address" || fail "$(cat "$T/name.err")"
integrity_ok
