#!/usr/bin/env bash
# A second daemon on a port in use fails with exit 71 and a one-line error, logs no "listening",
# and the first daemon keeps all the traffic (no SO_REUSEPORT).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_http_lib.sh"
start_daemon "$T/serve.json"

# --- a second daemon on a port in use: exit 71, no traffic taken ----------------------------------
cat >"$T/other.json" <<EOF
{"hooks": [{"path": "/hooks/x", "command": ["env", "DAEMON_NAME=second", "$T/handler.sh"],
            "key": {"header": "X-Key"}}]}
EOF
capture second timeout 10 "$IDEM_BIN" --db "$T/other.db" serve --config "$T/other.json" \
  --listen "127.0.0.1:$PORT" --port-file "$T/second.port"
expect_rc 71
assert_idem_error second
assert_eq "idem: cannot listen on 127.0.0.1:$PORT: address already in use" "$(cat "$T/second.err")" \
  "the second daemon's error"
[[ ! -e $T/second.port ]] || fail "the second daemon wrote a port file"
for i in $(seq 1 10); do
  post /hooks/x "taken $i" "X-Key: taken-$i"
  expect_http 200
done
assert_eq 10 "$(log_count "$T/handler.log" 'first /hooks/x taken-')" "deliveries run by the first daemon"
assert_eq 0 "$(log_count "$T/handler.log" 'second ')" "deliveries run by the second daemon"
bg_running daemon || fail "the first daemon is gone"
# A name that merely starts with "127." is no loopback address.
capture named idem serve --config "$T/serve.json" --listen 127.0.0.1.example.invalid:0
expect_rc 64
assert_idem_error
file_has "$T/named.err" --allow-remote || fail "the refusal does not mention --allow-remote: $(cat "$T/named.err")"
stop_daemon
integrity_ok
