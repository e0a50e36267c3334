#!/usr/bin/env bash
# contract §6 for senders without a JSON event id: Slack (examples/slack.json as shipped) answers a
# signed url_verification (no event_id) under "no_key": "run" and runs slash commands once per
# form field trigger_id; {"form": FIELD} decodes like a browser while the body stays untouched;
# "no_key" "refuse" (the default) keeps the 400; standard-webhooks accepts Svix's header names.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
root=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/.." && pwd)

export SLACK_SIGNING_SECRET=8f742231b10e8888abcd99yyyzzz85a5
# The commands of the example are relative to the repository's root, as its usage line says.
cd "$root" || fail "cannot enter $root"
DAEMON=slack start_daemon "$root/examples/slack.json"
cd "$T" || fail "cannot enter $T"

# --- url_verification: no event_id, runs without dedupe, answers the challenge ---------------------
challenge='3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P'
body='{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"'$challenge'","type":"url_verification"}'
for i in 1 2; do
  sign_slack "$SLACK_SIGNING_SECRET" "$body"
  post /slack/events "$body" "${SIG[@]}" 'Content-Type: application/json'
  expect_http 200
  assert_header Content-Type application/json
  assert_no_header Idempotent-Replayed
  assert_body '{"challenge":"%s"}\n' "$challenge"
done
assert_eq "" "$(ls_keys)" "records after two url_verifications"
# Still signed: without a valid signature it is 401, and nothing runs.
post /slack/events "$body" 'X-Slack-Request-Timestamp: 1' 'X-Slack-Signature: v0=00'
expect_problem 401
sign_slack other-secret "$body"
post /slack/events "$body" "${SIG[@]}"
expect_problem 401
# An event with its event_id is deduplicated as ever.
event='{"token":"x","team_id":"T1","event":{"type":"app_mention","text":"hi"},"type":"event_callback","event_id":"Ev08MFMKH6","event_time":1700000000}'
sign_slack "$SLACK_SIGNING_SECRET" "$event"
post /slack/events "$event" "${SIG[@]}"
expect_http 200
assert_body '{"ok":true,"event_id":"Ev08MFMKH6"}\n'
assert_no_header Idempotent-Replayed
sign_slack "$SLACK_SIGNING_SECRET" "$event"  # Slack's retry: a new timestamp, the same event
post /slack/events "$event" "${SIG[@]}"
expect_http 200
assert_header Idempotent-Replayed true
assert_body '{"ok":true,"event_id":"Ev08MFMKH6"}\n'
assert_eq '/slack/events#Ev08MFMKH6' "$(ls_keys)" "records after the event"

# --- slash commands: form-encoded, keyed by trigger_id ---------------------------------------------
form='token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&team_domain=example&channel_id=C2147483705'
form+='&channel_name=test&user_id=U2147483697&user_name=Steve&command=%2Fdeploy&text=prod+%22v1.2%22+now%21'
form+='&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1234%2F5678'
form+='&trigger_id=13345224609.738474920.8088930838d88f008e0&api_app_id=A123456'
sign_slack "$SLACK_SIGNING_SECRET" "$form"
post /slack/commands "$form" "${SIG[@]}" 'Content-Type: application/x-www-form-urlencoded'
expect_http 200
assert_no_header Idempotent-Replayed
assert_body '{"response_type":"ephemeral","text":"/deploy prod \\"v1.2\\" now!: on it"}\n'
key=13345224609.738474920.8088930838d88f008e0
assert_status "/slack/commands#$key" succeeded
sign_slack "$SLACK_SIGNING_SECRET" "$form"
post /slack/commands "$form" "${SIG[@]}" 'Content-Type: application/x-www-form-urlencoded'
expect_http 200
assert_header Idempotent-Replayed true
assert_eq "succeeded 1" "$(idem show "/slack/commands#$key" --json | jsonq /status /attempt | tr '\t' ' ')" \
  "record of the slash command"
assert_eq "slack: /deploy prod \"v1.2\" now! by Steve (trigger $key)" \
  "$(idem show "/slack/commands#$key" --stderr)" "what the command's handler logged"
# The stored body is the raw form, byte for byte.
idem show "/slack/commands#$key" --request | jsonq /body_b64 | base64 -d >"$T/stored.form"
printf %s "$form" >"$T/sent.form"
assert_same "$T/sent.form" "$T/stored.form"
# Without trigger_id: 400, as the hook does not say "no_key": "run".
sign_slack "$SLACK_SIGNING_SECRET" 'command=%2Fdeploy&text=x'
post /slack/commands 'command=%2Fdeploy&text=x' "${SIG[@]}"
expect_problem 400
DAEMON=slack stop_daemon

# --- form keys, no_key and svix names in detail ----------------------------------------------------
STD_SECRET=whsec_$(printf 'svix key bytes!!' | base64 -w0)
export STD_SECRET
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
cat > "$IDEM_TEST_DIR/stdin.last"
echo "$IDEM_HOOK [$IDEM_KEY]" >> "$IDEM_TEST_DIR/handler.log"
printf '[%s]\n' "$IDEM_KEY"
EOF
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF
{"hooks": [
  {"path": "/form", "command": ["$T/handler.sh"], "key": {"form": "id"}},
  {"path": "/form-run", "command": ["$T/handler.sh"], "key": {"form": "id"}, "no_key": "run"},
  {"path": "/json-run", "command": ["$T/handler.sh"], "key": {"json": "/id"}, "no_key": "run"},
  {"path": "/none-run", "command": ["$T/handler.sh"], "no_key": "run"},
  {"path": "/header-refuse", "command": ["$T/handler.sh"], "key": {"header": "X-Id"},
   "no_key": "refuse"},
  {"path": "/async-run", "command": ["$T/handler.sh"], "key": {"header": "X-Id"},
   "no_key": "run", "async": true},
  {"path": "/std", "command": ["$T/handler.sh"],
   "signature": {"scheme": "standard-webhooks", "secret_env": "STD_SECRET"}}
]}
EOF
start_daemon "$T/serve.json"
runs() { log_count "$T/handler.log" "$1 [$2]"; }

# Decoding: '+' is a space, %XX a byte, in names as in values; the body reaches the handler as sent.
post /form 'x=1&i%64=order+%2342%2Fa%zz&y' 'Content-Type: application/x-www-form-urlencoded'
expect_http 200
assert_body '[order #42/a%%zz]\n'
assert_bytes "$T/stdin.last" 'x=1&i%%64=order+%%2342%%2Fa%%zz&y'
assert_status '/form#order #42/a%zz' succeeded
post /form 'x=1&i%64=order+%2342%2Fa%zz&y'
assert_header Idempotent-Replayed true
post /form 'id=order+%2342%2Fa%zz&x=2'  # the same key with another body
expect_problem 422
# No such field, an empty one, or not a form at all: no key.
for body in 'x=1' 'id=' 'id' '{"id":"a"}' ''; do
  post /form "$body"
  expect_problem 400
done
# Twice: ambiguous, a bad key, refused even under "no_key": "run".
post /form 'id=a&id=b'
expect_problem 400
post /form-run 'id=a&id=b'
expect_problem 400
# Decoded into something that is not a key: refused either way.
post /form-run 'id=a%0Ab'
expect_problem 400
post /form-run "id=$(printf 'k%.0s' {1..256})"
expect_problem 400
assert_eq 0 "$(log_count "$T/handler.log" "/form-run")" "runs of refused keys"

# "no_key": "run": every delivery without a key runs, nothing is stored; keyed ones dedupe.
for i in 1 2; do
  post /form-run 'x=1'
  expect_http 200
  assert_body '[]\n'
  assert_no_header Idempotent-Replayed
  post /json-run '{"other":1}'
  expect_http 200
  post /json-run 'not json'
  expect_http 200
  post /none-run "body $i"
  expect_http 200
done
assert_eq 2 "$(runs /form-run '')" "unkeyed runs of /form-run"
assert_eq 4 "$(runs /json-run '')" "unkeyed runs of /json-run"
assert_eq 2 "$(runs /none-run '')" "unkeyed runs of /none-run"
for i in 1 2; do post /form-run 'id=k1'; expect_http 200; done
assert_header Idempotent-Replayed true
assert_eq 1 "$(runs /form-run k1)" "runs of /form-run k1"
# A value that is there but is no key (an object) is a bad key, not an absent one.
post /json-run '{"id":{"nested":1}}'
expect_problem 400
post /header-refuse 'x'
expect_problem 400
# Async: 202 at once, the handler runs in the background; again for each delivery.
post /async-run 'a1'
expect_http 202
post /async-run 'a1'
expect_http 202
two_async_runs() { (($(runs /async-run '') == 2)); }
wait_until "both unkeyed async deliveries ran" two_async_runs
assert_eq "/form-run#k1" "$(ls_keys | grep -E '^/(form-run|json-run|none-run|async-run)#' || true)" \
  "records of the no_key hooks: only the keyed delivery"
grep -q '"outcome":"unkeyed"' "$T/daemon.err" || fail "no log line with outcome unkeyed"

# --- standard-webhooks under Svix's header names ---------------------------------------------------
# sign_svix SECRET ID BODY [TIMESTAMP]: as sign_standard, under the svix- names.
sign_svix() {
  sign_standard "$@"
  SIG=("svix-id: ${SIG[0]#webhook-id: }" "svix-timestamp: ${SIG[1]#webhook-timestamp: }"
       "svix-signature: ${SIG[2]#webhook-signature: }")
}
body='{"type":"invoice.paid","data":{"id":"in_1"}}'
sign_svix "$STD_SECRET" msg_svix_1 "$body"
post /std "$body" "${SIG[@]}"
expect_http 200
assert_body '[msg_svix_1]\n'
post /std "$body" "${SIG[@]}"
assert_header Idempotent-Replayed true
assert_eq 1 "$(runs /std msg_svix_1)" "runs of the svix delivery"
sign_svix "$STD_SECRET" msg_svix_2 "$body-x"
post /std "$body" "${SIG[@]}"
expect_problem 401
sign_svix "$STD_SECRET" msg_svix_3 "$body" $(($(now_s) - 400))
post /std "$body" "${SIG[@]}"
expect_problem 401
# Never a mix: a webhook- header beside a svix- signature selects the webhook- set, which is
# incomplete, so an unsigned webhook-id cannot become the key of a captured svix delivery.
sign_svix "$STD_SECRET" msg_svix_4 "$body"
post /std "$body" "${SIG[@]}" 'webhook-id: msg_forged'
expect_problem 401
assert_status '/std#msg_forged' none
# The webhook- names still work.
sign_standard "$STD_SECRET" msg_std_1 "$body"
post /std "$body" "${SIG[@]}"
expect_http 200
assert_body '[msg_std_1]\n'
stop_daemon
integrity_ok
