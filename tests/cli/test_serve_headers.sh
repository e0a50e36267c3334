#!/usr/bin/env bash
# contract §6, IDEM_HEADER_<NAME>: headers whose names give one variable (a repeated header, or X-A,
# X.A and X_A) follow one rule: their values joined with ", " in the order received. The handler's
# variable, the header key source and the signature check all read that same value, and the store
# keeps each name as received.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

export GENERIC_SECRET=generic-secret
cat >"$T/handler.sh" <<'EOF2'
#!/bin/sh
printf '%s\n' "$IDEM_HEADER_X_A" > "$IDEM_TEST_DIR/x_a.$IDEM_ATTEMPT"
printf '%s\n' "$IDEM_HEADER_X_B" > "$IDEM_TEST_DIR/x_b.$IDEM_ATTEMPT"
printf 'key=[%s]\n' "$IDEM_KEY"
EOF2
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF2
{"hooks": [
  {"path": "/by-header", "command": ["$T/handler.sh"], "key": {"header": "X-A"}},
  {"path": "/signed", "command": ["$T/handler.sh"], "key": {"header": "X-Delivery"},
   "signature": {"scheme": "hmac-sha256", "secret_env": "GENERIC_SECRET", "header": "X-Sig"}}
]}
EOF2
start_daemon "$T/serve.json"

# Three names for one variable, and one name repeated in two cases (in the order the transport
# hands them over, which for these is the order sent).
post /by-header 'body' 'X-A: one' 'X.A: two' 'X_A: three' 'X-B: 1' 'x-b: 2'
expect_http 200
assert_body 'key=[one, two, three]\n'
assert_bytes "$T/x_a.1" 'one, two, three\n'
assert_bytes "$T/x_b.1" '1, 2\n'
assert_status '/by-header#one, two, three' succeeded
# The store keeps each name as first received, a repeated one's values joined.
idem show '/by-header#one, two, three' --request >"$T/request.json"
assert_eq 'one|two|three|1, 2' \
  "$(for h in X-A X.A X_A X-B; do jsonq "/headers/$h" <"$T/request.json"; done | paste -sd'|')" \
  "stored headers"
# A delivery whose header is the same combined value is its duplicate; one with a part is not.
post /by-header 'body' 'X-A: one, two, three'
assert_header Idempotent-Replayed true
post /by-header 'body' 'X-A: one'
expect_http 200
assert_no_header Idempotent-Replayed
assert_body 'key=[one]\n'

# Signatures read the same value: a second signature header beside the right one is not ignored.
body='signed body'
sig=$(hmac_hex "$GENERIC_SECRET" "$body")
post /signed "$body" "X-Sig: $sig" 'X-Delivery: d1'
expect_http 200
post /signed "$body" "X-Sig: $sig" "X_Sig: $sig" 'X-Delivery: d2'
expect_problem 401
post /signed "$body" "X-Sig: $sig" 'X-Delivery: d3' 'X.Delivery: extra'
expect_http 200
assert_body 'key=[d3, extra]\n'
stop_daemon
