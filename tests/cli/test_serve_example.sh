#!/usr/bin/env bash
# examples/serve.json works as shipped: the daemon starts with it (secrets from the environment),
# and a signed GitHub and a signed Stripe delivery run their handler once and replay after.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
root=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/.." && pwd)
config=$root/examples/serve.json
[[ -f $config ]] || fail "no $config"

# Without its secrets the example is refused, naming the variable.
unset GITHUB_WEBHOOK_SECRET STRIPE_WEBHOOK_SECRET
capture nosecret idem serve --config "$config" --listen 127.0.0.1:0 --port-file "$T/nosecret.port"
expect_rc 64
assert_idem_error
file_has "$T/nosecret.err" GITHUB_WEBHOOK_SECRET || fail "the refusal does not name the variable"

export GITHUB_WEBHOOK_SECRET='example github secret'
export STRIPE_WEBHOOK_SECRET=whsec_example0123456789
# The commands in the example are relative to the repository's root, as its usage line says.
cd "$root" || fail "cannot enter $root"
start_daemon "$config"
cd "$T" || fail "cannot enter $T"

# --- GitHub: a push -----------------------------------------------------------------------------
push='{"ref":"refs/heads/main","before":"6113728f27ae82c7b1a177c8d03f9e96e0adf246","after":"59b20b8d5c6ff8d09518454d4dd8b7b30f095ab5",
"repository":{"id":1296269,"name":"hello-world","full_name":"octocat/hello-world","private":false},
"pusher":{"name":"octocat"},"head_commit":{"id":"59b20b8d5c6ff8d09518454d4dd8b7b30f095ab5","message":"Update \"README\""}}'
delivery=72d3162e-cc78-11e3-81ab-4c9367dc0958
sign_github "$GITHUB_WEBHOOK_SECRET" "$push" "$delivery"
post /hooks/github "$push" "${SIG[@]}" 'Content-Type: application/json'
expect_http 200
assert_header Content-Type application/json
assert_no_header Idempotent-Replayed
want='{"ok":true,"event":"push","delivery":"%s","repository":"octocat/hello-world","ref":"refs/heads/main"}\n'
assert_body "$want" "$delivery"
# GitHub's "Redeliver": the same delivery id and body, answered from the store.
post /hooks/github "$push" "${SIG[@]}" 'Content-Type: application/json'
expect_http 200
assert_header Idempotent-Replayed true
assert_body "$want" "$delivery"
assert_eq "succeeded 1" "$(idem show "/hooks/github#$delivery" --json | jsonq /status /attempt | tr '\t' ' ')" \
  "record of the push"
idem show "/hooks/github#$delivery" --stderr >"$T/push.stderr"
assert_bytes "$T/push.stderr" 'github: push to octocat/hello-world refs/heads/main (delivery %s, attempt 1)\n' "$delivery"
# A ping, and an event the handler does not act on.
ping='{"zen":"Keep it logically awesome.","hook_id":30}'
sign_github "$GITHUB_WEBHOOK_SECRET" "$ping" ping-1
post /hooks/github "$ping" "${SIG[0]}" 'X-GitHub-Delivery: ping-1' 'X-GitHub-Event: ping'
expect_http 200
assert_body '{"ok":true,"event":"ping","zen":"Keep it logically awesome."}\n'
sign_github "$GITHUB_WEBHOOK_SECRET" '{"action":"created"}' star-1
post /hooks/github '{"action":"created"}' "${SIG[0]}" 'X-GitHub-Delivery: star-1' 'X-GitHub-Event: star'
expect_http 200
assert_body '{"ok":true,"event":"star","ignored":true}\n'
# Unsigned: refused, nothing stored.
post /hooks/github "$push" 'X-GitHub-Delivery: forged-1' 'X-GitHub-Event: push'
expect_problem 401
assert_status '/hooks/github#forged-1' none

# --- Stripe: an event, pretty-printed as Stripe sends it ----------------------------------------
event='{
  "id": "evt_1NG8Du2eZvKYlo2CUI79vXWy",
  "object": "event",
  "api_version": "2023-10-16",
  "created": 1686089970,
  "data": {
    "object": {
      "id": "pi_3NG8Dt2eZvKYlo2C0jXkHj7Z",
      "object": "payment_intent",
      "amount": 2000,
      "currency": "eur",
      "payment_method_types": ["card"],
      "last_payment_error": null,
      "next_action": {"type": "use_stripe_sdk"}
    }
  },
  "livemode": false,
  "pending_webhooks": 1,
  "request": {"id": null, "idempotency_key": "order-42"},
  "type": "payment_intent.succeeded"
}'
sign_stripe "$STRIPE_WEBHOOK_SECRET" "$event"
post /hooks/stripe "$event" "${SIG[@]}" 'Content-Type: application/json; charset=utf-8'
expect_http 200
assert_header Content-Type application/json
want='{"received":true,"event":"evt_1NG8Du2eZvKYlo2CUI79vXWy","type":"payment_intent.succeeded","action":"fulfil"}\n'
assert_body "$want"
# Stripe retries an event (new timestamp, new signature, same body): replayed, not fulfilled twice.
sign_stripe "$STRIPE_WEBHOOK_SECRET" "$event" "$(($(now_s) - 30))"
post /hooks/stripe "$event" "${SIG[@]}" 'Content-Type: application/json; charset=utf-8'
expect_http 200
assert_header Idempotent-Replayed true
assert_body "$want"
assert_eq "succeeded 1" \
  "$(idem show '/hooks/stripe#evt_1NG8Du2eZvKYlo2CUI79vXWy' --json | jsonq /status /attempt | tr '\t' ' ')" \
  "record of the Stripe event"
# A captured event replayed later than Stripe's 300 s tolerance is refused.
refund='{"id":"evt_refund_1","object":"event","data":{"object":{"id":"ch_1","object":"charge"}},"type":"charge.refunded"}'
sign_stripe "$STRIPE_WEBHOOK_SECRET" "$refund" "$(($(now_s) - 600))"
post /hooks/stripe "$refund" "${SIG[@]}"
expect_problem 401
assert_status '/hooks/stripe#evt_refund_1' none
sign_stripe "$STRIPE_WEBHOOK_SECRET" "$refund"
post /hooks/stripe "$refund" "${SIG[@]}"
expect_http 200
assert_body '{"received":true,"event":"evt_refund_1","type":"charge.refunded","action":"refund"}\n'

stop_daemon
integrity_ok
