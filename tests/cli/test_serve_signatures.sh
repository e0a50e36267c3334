#!/usr/bin/env bash
# contract §6 signature schemes and §8.5: for every scheme a correctly signed delivery runs its handler
# once and its duplicate is replayed; a tampered body, a wrong secret, a timestamp outside the
# tolerance or a missing signature header gets 401, and nothing is stored or run for it.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

# The signing helpers agree with the providers' published examples.
assert_eq 757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17 \
  "$(hmac_hex "It's a Secret to Everybody" 'Hello, World!')" "GitHub's documented test vector"
sign_standard whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw msg_p5jXN8AQM9LWM0D4loKWxJek \
  '{"test": 2432232314}' 1614265330
assert_eq "webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" "${SIG[2]}" \
  "Standard Webhooks' documented test vector"

export GH_SECRET='gh secret, with spaces'
export STRIPE_SECRET=whsec_stripe_0123456789abcdef
# Key bytes that are not text (0x00, 0xff, ...): the daemon must decode, not use the text.
STD_SECRET=whsec_$(printf '\000\377\020secret-bytes\200\001' | base64 -w0)
export STD_SECRET
export SHOPIFY_SECRET=shpss_0123456789
export SLACK_SECRET=8f742231b10e8888abcd99yyyzzz85a5
export GENERIC_SECRET='generic-secret'

cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
# Logs each run and answers JSON naming the delivery.
echo "$IDEM_HOOK $IDEM_KEY $IDEM_ATTEMPT $(cat | cksum | cut -d' ' -f1)" >> "$IDEM_TEST_DIR/handler.log"
printf '{"hook":"%s","key":"%s"}\n' "$IDEM_HOOK" "$IDEM_KEY"
EOF
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF
{"hooks": [
  {"path": "/hooks/github", "command": ["$T/handler.sh"], "max_body": 256,
   "signature": {"scheme": "github", "secret_env": "GH_SECRET"}},
  {"path": "/hooks/stripe", "command": ["$T/handler.sh"],
   "signature": {"scheme": "stripe", "secret_env": "STRIPE_SECRET"}},
  {"path": "/hooks/standard", "command": ["$T/handler.sh"],
   "signature": {"scheme": "standard-webhooks", "secret_env": "STD_SECRET"}},
  {"path": "/hooks/shopify", "command": ["$T/handler.sh"],
   "signature": {"scheme": "shopify", "secret_env": "SHOPIFY_SECRET"}},
  {"path": "/hooks/slack", "command": ["$T/handler.sh"],
   "signature": {"scheme": "slack", "secret_env": "SLACK_SECRET"}},
  {"path": "/hooks/hmac-hex", "command": ["$T/handler.sh"],
   "signature": {"scheme": "hmac-sha256", "secret_env": "GENERIC_SECRET",
                 "header": "X-Signature", "encoding": "hex", "prefix": "sha256="},
   "key": {"header": "X-Delivery"}},
  {"path": "/hooks/hmac-b64", "command": ["$T/handler.sh"],
   "signature": {"scheme": "hmac-sha256", "secret_env": "GENERIC_SECRET",
                 "header": "X-Signature", "encoding": "base64"},
   "key": {"header": "X-Delivery"}}
]}
EOF
start_daemon "$T/serve.json"

runs() { log_count "$T/handler.log" "$1 $2 "; }  # runs PATH KEY: how often the handler ran for it

# accepted PATH KEY BODY HEADER...: a correctly signed delivery runs once, its duplicate replays.
accepted() {
  local path=$1 key=$2 body=$3
  shift 3
  post "$path" "$body" "$@"
  expect_http 200
  assert_header Content-Type application/json
  assert_no_header Idempotent-Replayed
  assert_body '{"hook":"%s","key":"%s"}\n' "$path" "$key"
  assert_eq 1 "$(runs "$path" "$key")" "runs of $path $key"
  assert_status "$path#$key" succeeded
  post "$path" "$body" "$@"
  expect_http 200
  assert_header Idempotent-Replayed true
  assert_header Content-Type application/json
  assert_body '{"hook":"%s","key":"%s"}\n' "$path" "$key"
  assert_eq 1 "$(runs "$path" "$key")" "runs of $path $key after its duplicate"
}

# refused WHAT PATH KEY BODY HEADER...: 401 problem; the key was not stored, nothing ran for it.
refused() {
  local what=$1 path=$2 key=$3 body=$4
  shift 4
  post "$path" "$body" "$@"
  [[ $(http_status) == 401 ]] || fail "$path, $what: want 401, got $(http_status): $(cat "$T/resp.body")"
  expect_problem 401
  assert_eq 0 "$(runs "$path" "$key")" "handler runs of $path $key after '$what'"
  assert_status "$path#$key" none
}

# without NAME HEADER...: prints the headers but NAME, NUL-separated (for mapfile -d '').
without() {
  local name=${1,,} h
  shift
  for h in "$@"; do [[ ${h,,} == "$name:"* ]] || printf '%s\0' "$h"; done
}

now=$(now_s)
stale=$((now - 400))
future=$((now + 400))
recent=$((now - 200))  # within the 300 s tolerance

# --- github -----------------------------------------------------------------------------------
body='{"action":"opened","number":1}'
sign_github "$GH_SECRET" "$body" gh-bad
refused "tampered body" /hooks/github gh-bad '{"action":"opened","number":2}' "${SIG[@]}"
sign_github "not $GH_SECRET" "$body" gh-bad
refused "wrong secret" /hooks/github gh-bad "$body" "${SIG[@]}"
mapfile -d '' hs < <(without X-Hub-Signature-256 "${SIG[@]}")
refused "missing X-Hub-Signature-256" /hooks/github gh-bad "$body" "${hs[@]}"
sign_github "$GH_SECRET" "$body" gh-bad
refused "signature without sha256= prefix" /hooks/github gh-bad "$body" \
  "X-Hub-Signature-256: ${SIG[0]#*sha256=}" "X-GitHub-Delivery: gh-bad"
# Before the signature: 413 for a body over max_body (256 here), signed or not.
big=$(printf '{"pad":"%0300d"}' 0)
post /hooks/github "$big" 'X-GitHub-Delivery: gh-big'
expect_problem 413
sign_github "$GH_SECRET" "$big" gh-big
post /hooks/github "$big" "${SIG[@]}"
expect_problem 413
assert_status '/hooks/github#gh-big' none
# After it: 400 for a correctly signed delivery without its key.
sign_github "$GH_SECRET" "$body" gh-nokey
mapfile -d '' hs < <(without X-GitHub-Delivery "${SIG[@]}")
post /hooks/github "$body" "${hs[@]}"
expect_problem 400
sign_github "$GH_SECRET" "$body" gh-1
accepted /hooks/github gh-1 "$body" "${SIG[@]}"
# A forged body under a stored key is refused at the signature, not reported as a conflict.
sign_github wrong "$body-x" gh-1
post /hooks/github "$body-x" "${SIG[@]}"
expect_problem 401
assert_eq 1 "$(runs /hooks/github gh-1)" "runs of gh-1 after a forged delivery under its key"
assert_eq "succeeded 1" "$(idem show '/hooks/github#gh-1' --json | jsonq /status /attempt | tr '\t' ' ')" \
  "record of gh-1 after a forged delivery under its key"

# --- stripe (key: the body's /id) --------------------------------------------------------------
body='{"id":"evt_bad","type":"charge.succeeded","data":{"amount":100}}'
sign_stripe "$STRIPE_SECRET" "$body"
refused "tampered body" /hooks/stripe evt_bad '{"id":"evt_bad","type":"charge.succeeded","data":{"amount":999}}' "${SIG[@]}"
sign_stripe "whsec_other" "$body"
refused "wrong secret" /hooks/stripe evt_bad "$body" "${SIG[@]}"
sign_stripe "$STRIPE_SECRET" "$body" "$stale"
refused "timestamp 400 s old" /hooks/stripe evt_bad "$body" "${SIG[@]}"
sign_stripe "$STRIPE_SECRET" "$body" "$future"
refused "timestamp 400 s ahead" /hooks/stripe evt_bad "$body" "${SIG[@]}"
refused "missing Stripe-Signature" /hooks/stripe evt_bad "$body"
# The signed timestamp is the one in the header: moving t breaks the signature.
sign_stripe "$STRIPE_SECRET" "$body" "$recent"
refused "t changed after signing" /hooks/stripe evt_bad "$body" "Stripe-Signature: t=$now,${SIG[0]#*,}"
body='{"id":"evt_1","type":"charge.succeeded","data":{"amount":100}}'
sign_stripe "$STRIPE_SECRET" "$body" "$recent"
accepted /hooks/stripe evt_1 "$body" "${SIG[@]}"
# Two v1 entries (a secret being rolled): one matching is enough, wherever it is.
body='{"id":"evt_2","type":"charge.refunded"}'
good=$(hmac_hex "$STRIPE_SECRET" "$now.$body")
old=$(hmac_hex "whsec_old_secret" "$now.$body")
accepted /hooks/stripe evt_2 "$body" "Stripe-Signature: t=$now,v1=$old,v1=$good,v0=00ff"
body='{"id":"evt_3","type":"charge.refunded"}'
good=$(hmac_hex "$STRIPE_SECRET" "$now.$body")
old=$(hmac_hex "whsec_old_secret" "$now.$body")
accepted /hooks/stripe evt_3 "$body" "Stripe-Signature: t=$now, v1=$good, v1=$old"
# Two v1 entries, neither matching.
body='{"id":"evt_bad","type":"charge.refunded"}'
refused "two wrong v1" /hooks/stripe evt_bad "$body" \
  "Stripe-Signature: t=$now,v1=$(hmac_hex x "$now.$body"),v1=$(hmac_hex y "$now.$body")"

# --- standard-webhooks (key: webhook-id) -------------------------------------------------------
body='{"type":"user.created","data":{"id":"u1"}}'
sign_standard "$STD_SECRET" msg_bad "$body"
refused "tampered body" /hooks/standard msg_bad '{"type":"user.created","data":{"id":"u2"}}' "${SIG[@]}"
sign_standard "whsec_$(printf 'other key bytes' | base64 -w0)" msg_bad "$body"
refused "wrong secret" /hooks/standard msg_bad "$body" "${SIG[@]}"
# Keyed by the secret's text instead of its base64-decoded bytes: wrong.
SIG=("webhook-id: msg_bad" "webhook-timestamp: $now"
     "webhook-signature: v1,$(hmac_b64 "$STD_SECRET" "msg_bad.$now.$body")")
refused "secret text used as the key" /hooks/standard msg_bad "$body" "${SIG[@]}"
sign_standard "$STD_SECRET" msg_bad "$body" "$stale"
refused "timestamp 400 s old" /hooks/standard msg_bad "$body" "${SIG[@]}"
sign_standard "$STD_SECRET" msg_bad "$body" "$future"
refused "timestamp 400 s ahead" /hooks/standard msg_bad "$body" "${SIG[@]}"
sign_standard "$STD_SECRET" msg_bad "$body"
for h in webhook-signature webhook-timestamp webhook-id; do
  mapfile -d '' hs < <(without "$h" "${SIG[@]}")
  refused "missing $h" /hooks/standard msg_bad "$body" "${hs[@]}"
done
# The id is signed: the same signature under another webhook-id is refused.
refused "webhook-id changed after signing" /hooks/standard msg_other "$body" \
  "webhook-id: msg_other" "${SIG[1]}" "${SIG[2]}"
body='{"type":"user.created","data":{"id":"u3"}}'
sign_standard "$STD_SECRET" msg_1 "$body" "$recent"
accepted /hooks/standard msg_1 "$body" "${SIG[@]}"
# A space-separated list: other versions and wrong v1 entries beside the right one.
body='{"type":"user.deleted","data":{"id":"u4"}}'
sign_standard "$STD_SECRET" msg_2 "$body"
good=${SIG[2]#webhook-signature: }
wrong=v1,$(hmac_b64 wrong "msg_2.$now.$body")
accepted /hooks/standard msg_2 "$body" "${SIG[0]}" "${SIG[1]}" \
  "webhook-signature: v1a,c2lnbmF0dXJl $wrong $good"
body='{"type":"user.deleted","data":{"id":"u5"}}'
sign_standard "$STD_SECRET" msg_bad "$body"
refused "list of wrong entries" /hooks/standard msg_bad "$body" "${SIG[0]}" "${SIG[1]}" \
  "webhook-signature: $wrong v2,${SIG[2]#*v1,}"

# --- shopify (key: X-Shopify-Webhook-Id) -------------------------------------------------------
body='{"id":820982911946154508,"email":"jon@example.com"}'
sign_shopify "$SHOPIFY_SECRET" "$body" shop-bad
refused "tampered body" /hooks/shopify shop-bad '{"id":820982911946154508,"email":"eve@example.com"}' "${SIG[@]}"
sign_shopify "other" "$body" shop-bad
refused "wrong secret" /hooks/shopify shop-bad "$body" "${SIG[@]}"
mapfile -d '' hs < <(without X-Shopify-Hmac-Sha256 "${SIG[@]}")
refused "missing X-Shopify-Hmac-Sha256" /hooks/shopify shop-bad "$body" "${hs[@]}"
sign_shopify "$SHOPIFY_SECRET" "$body" shop-1
accepted /hooks/shopify shop-1 "$body" "${SIG[@]}"

# --- slack (key: the body's /event_id) ---------------------------------------------------------
body='{"type":"event_callback","event_id":"Ev_bad","event":{"type":"message"}}'
sign_slack "$SLACK_SECRET" "$body"
refused "tampered body" /hooks/slack Ev_bad '{"type":"event_callback","event_id":"Ev_bad","event":{"type":"app_mention"}}' "${SIG[@]}"
sign_slack "other" "$body"
refused "wrong secret" /hooks/slack Ev_bad "$body" "${SIG[@]}"
sign_slack "$SLACK_SECRET" "$body" "$stale"
refused "timestamp 400 s old" /hooks/slack Ev_bad "$body" "${SIG[@]}"
sign_slack "$SLACK_SECRET" "$body" "$future"
refused "timestamp 400 s ahead" /hooks/slack Ev_bad "$body" "${SIG[@]}"
sign_slack "$SLACK_SECRET" "$body"
for h in X-Slack-Signature X-Slack-Request-Timestamp; do
  mapfile -d '' hs < <(without "$h" "${SIG[@]}")
  refused "missing $h" /hooks/slack Ev_bad "$body" "${hs[@]}"
done
refused "timestamp changed after signing" /hooks/slack Ev_bad "$body" \
  "X-Slack-Request-Timestamp: $recent" "${SIG[1]}"
body='{"type":"event_callback","event_id":"Ev_1","event":{"type":"message"}}'
sign_slack "$SLACK_SECRET" "$body" "$recent"
accepted /hooks/slack Ev_1 "$body" "${SIG[@]}"

# --- hmac-sha256, hex with a prefix and base64 (key: X-Delivery from the config) ----------------
body='plain text body, not JSON'
hex=$(hmac_hex "$GENERIC_SECRET" "$body")
b64=$(hmac_b64 "$GENERIC_SECRET" "$body")
refused "tampered body" /hooks/hmac-hex h-bad "$body!" "X-Signature: sha256=$hex" "X-Delivery: h-bad"
refused "wrong secret" /hooks/hmac-hex h-bad "$body" \
  "X-Signature: sha256=$(hmac_hex other "$body")" "X-Delivery: h-bad"
refused "missing X-Signature" /hooks/hmac-hex h-bad "$body" "X-Delivery: h-bad"
refused "hex without its prefix" /hooks/hmac-hex h-bad "$body" "X-Signature: $hex" "X-Delivery: h-bad"
refused "base64 where hex is configured" /hooks/hmac-hex h-bad "$body" \
  "X-Signature: sha256=$b64" "X-Delivery: h-bad"
accepted /hooks/hmac-hex h-1 "$body" "X-Signature: sha256=$hex" "X-Delivery: h-1"
refused "tampered body" /hooks/hmac-b64 h-bad "$body!" "X-Signature: $b64" "X-Delivery: h-bad"
refused "wrong secret" /hooks/hmac-b64 h-bad "$body" \
  "X-Signature: $(hmac_b64 other "$body")" "X-Delivery: h-bad"
refused "missing X-Signature" /hooks/hmac-b64 h-bad "$body" "X-Delivery: h-bad"
refused "hex where base64 is configured" /hooks/hmac-b64 h-bad "$body" \
  "X-Signature: $hex" "X-Delivery: h-bad"
accepted /hooks/hmac-b64 h-1 "$body" "X-Signature: $b64" "X-Delivery: h-1"

# Only the correctly signed deliveries are in the store, and each ran exactly once, in order.
ls_keys >"$T/keys"
printf '%s\n' '/hooks/github#gh-1' '/hooks/hmac-b64#h-1' '/hooks/hmac-hex#h-1' \
  '/hooks/shopify#shop-1' '/hooks/slack#Ev_1' '/hooks/standard#msg_1' '/hooks/standard#msg_2' \
  '/hooks/stripe#evt_1' '/hooks/stripe#evt_2' '/hooks/stripe#evt_3' >"$T/keys.want"
assert_same "$T/keys.want" "$T/keys"
cut -d' ' -f1-3 "$T/handler.log" >"$T/runs"
printf '%s\n' '/hooks/github gh-1 1' '/hooks/stripe evt_1 1' '/hooks/stripe evt_2 1' \
  '/hooks/stripe evt_3 1' '/hooks/standard msg_1 1' '/hooks/standard msg_2 1' \
  '/hooks/shopify shop-1 1' '/hooks/slack Ev_1 1' '/hooks/hmac-hex h-1 1' '/hooks/hmac-b64 h-1 1' \
  >"$T/runs.want"
assert_same "$T/runs.want" "$T/runs"
# The handler got the exact body of the signed delivery on stdin.
assert_eq "$(printf %s '{"action":"opened","number":1}' | cksum | cut -d' ' -f1)" \
  "$(grep '^/hooks/github gh-1 ' "$T/handler.log" | cut -d' ' -f4)" "checksum of the github body"
# Every refusal was logged as such.
n401=$(grep -c '"status":401' "$T/daemon.err")
assert_eq "$n401" "$(grep '"status":401' "$T/daemon.err" | grep -c '"outcome":"unauthorized"')" \
  "401 log lines with outcome unauthorized"
((n401 >= 40)) || fail "only $n401 deliveries were refused with 401"
stop_daemon
integrity_ok
