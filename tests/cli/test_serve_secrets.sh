#!/usr/bin/env bash
# contract §6, secrets: the store keeps Authorization, Cookie, Proxy-Authorization and every
# signature header by name only (the handler still gets them); no handler's environment holds a
# variable named by any hook's secret_env; a secret its scheme cannot use is refused at start
# (exit 64) and at reload (the old config kept), in one line naming the hook and the variable,
# never the value.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

export GH_SECRET='gh-secret-value-4f1d'
export ACME_SECRET='acme-secret-value-9c2b'
STD_SECRET=whsec_$(printf 'standard key bytes' | base64 -w0)
export STD_SECRET
# Set from the start but named by no hook until a reload tries it.
export BROKEN_STD_SECRET='whsec_not*base64*secret-value-77'

# Each handler keeps its whole environment (NUL-separated, so values with newlines stay whole)
# and its stdin.
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
env -0 > "$IDEM_TEST_DIR/env.$IDEM_KEY"
cat > "$IDEM_TEST_DIR/stdin.$IDEM_KEY"
printf 'ok %s\n' "$IDEM_KEY"
EOF
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF
{"hooks": [
  {"path": "/hooks/github", "command": ["$T/handler.sh"],
   "signature": {"scheme": "github", "secret_env": "GH_SECRET"}},
  {"path": "/hooks/acme", "command": ["$T/handler.sh"], "key": {"header": "X-Acme-Delivery"},
   "signature": {"scheme": "hmac-sha256", "secret_env": "ACME_SECRET",
                 "header": "X-Acme-Signature", "encoding": "base64"}},
  {"path": "/hooks/standard", "command": ["$T/handler.sh"],
   "signature": {"scheme": "standard-webhooks", "secret_env": "STD_SECRET"}},
  {"path": "/hooks/plain", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}}
]}
EOF
start_daemon "$T/serve.json"

# --- 10: no handler sees any hook's secret ---------------------------------------------------------
# no_secrets KEY: the environment the handler of KEY ran with names no secret_env variable and
# holds no secret's value.
no_secrets() {
  local env=$T/env.$1 name
  [[ -s $env ]] || fail "the handler of $1 did not run"
  for name in GH_SECRET ACME_SECRET STD_SECRET; do
    if tr '\0' '\n' <"$env" | grep -q "^$name="; then
      fail "the handler of $1 has $name in its environment"
    fi
    if grep -qF -- "${!name}" "$env"; then fail "the handler of $1 sees the value of $name"; fi
  done
  # Variables no hook names are left alone.
  tr '\0' '\n' <"$env" | grep -qxF "BROKEN_STD_SECRET=$BROKEN_STD_SECRET" ||
    fail "the handler of $1 lost an ordinary variable"
}
body='{"action":"opened"}'
sign_github "$GH_SECRET" "$body" gh-1
post /hooks/github "$body" "${SIG[@]}" 'Authorization: Bearer tok-gh-3141' \
  'Cookie: session=cookie-gh-2718' 'Proxy-Authorization: Basic cHJveHk6cHc='
expect_http 200
no_secrets gh-1
body='acme delivery'
acme_sig=$(hmac_b64 "$ACME_SECRET" "$body")
post /hooks/acme "$body" "X-Acme-Signature: $acme_sig" 'X-Acme-Delivery: acme-1' \
  'X-Other: kept as is'
expect_http 200
no_secrets acme-1
body='{"type":"user.created"}'
sign_standard "$STD_SECRET" msg-1 "$body"
post /hooks/standard "$body" "${SIG[@]}"
expect_http 200
no_secrets msg-1
std_sig=${SIG[2]#webhook-signature: }
# A hook without a signature: its handler sees none of the others' secrets either. The headers
# of every scheme sent to it are credentials all the same.
post /hooks/plain 'plain' 'X-Key: plain-1' 'authorization: token tok-plain-1618' \
  'Stripe-Signature: t=1,v1=stripe-sig-0001' 'X-Slack-Signature: v0=slack-sig-0002' \
  'X-Shopify-Hmac-Sha256: shopify-sig-0003' 'svix-signature: v1,svix-sig-0004' \
  'X-Hub-Signature: sha1=hub-sig-0005' 'X-Acme-Signature: not-a-credential-here'
expect_http 200
no_secrets plain-1

# --- 9: the handler gets the real headers ----------------------------------------------------------
has_env() { tr '\0' '\n' <"$T/env.$1" | grep -qxF -- "$2" || fail "the handler of $1 lacks '$2'"; }
has_env gh-1 'IDEM_HEADER_AUTHORIZATION=Bearer tok-gh-3141'
has_env gh-1 'IDEM_HEADER_COOKIE=session=cookie-gh-2718'
has_env gh-1 'IDEM_HEADER_PROXY_AUTHORIZATION=Basic cHJveHk6cHc='
has_env gh-1 "IDEM_HEADER_X_HUB_SIGNATURE_256=sha256=$(hmac_hex "$GH_SECRET" '{"action":"opened"}')"
has_env acme-1 "IDEM_HEADER_X_ACME_SIGNATURE=$acme_sig"
has_env msg-1 "IDEM_HEADER_WEBHOOK_SIGNATURE=$std_sig"
has_env plain-1 'IDEM_HEADER_STRIPE_SIGNATURE=t=1,v1=stripe-sig-0001'

# --- 9: the store keeps them by name only ----------------------------------------------------------
# stored_header RECORD NAME: the value `idem show --request` gives for header NAME.
stored_header() {
  idem show "$1" --request >"$T/request.json" || fail "idem show $1 --request exited $?"
  jsonq "/headers/$2" <"$T/request.json"
}
redacted() { assert_eq '[redacted]' "$(stored_header "$1" "$2")" "stored $2 of $1"; }
redacted '/hooks/github#gh-1' Authorization
redacted '/hooks/github#gh-1' Cookie
redacted '/hooks/github#gh-1' Proxy-Authorization
redacted '/hooks/github#gh-1' X-Hub-Signature-256
assert_eq gh-1 "$(stored_header '/hooks/github#gh-1' X-GitHub-Delivery)" "stored X-GitHub-Delivery"
assert_eq push "$(stored_header '/hooks/github#gh-1' X-GitHub-Event)" "stored X-GitHub-Event"
redacted '/hooks/acme#acme-1' X-Acme-Signature
assert_eq 'kept as is' "$(stored_header '/hooks/acme#acme-1' X-Other)" "stored X-Other"
redacted '/hooks/standard#msg-1' webhook-signature
assert_eq msg-1 "$(stored_header '/hooks/standard#msg-1' webhook-id)" "stored webhook-id"
for h in authorization Stripe-Signature X-Slack-Signature X-Shopify-Hmac-Sha256 svix-signature \
  X-Hub-Signature; do
  redacted '/hooks/plain#plain-1' "$h"
done
# The generic header is a credential only on the hook configured with it.
assert_eq not-a-credential-here "$(stored_header '/hooks/plain#plain-1' X-Acme-Signature)" \
  "stored X-Acme-Signature of a hook without that scheme"
# The body is kept as it was.
assert_eq '{"action":"opened"}' "$(idem show '/hooks/github#gh-1' --request | jsonq /body_b64 | base64 -d)" \
  "stored body"
# Nowhere in the store, in any form.
sqlite3 "$IDEM_DB" .dump >"$T/dump.sql"
for secret in tok-gh-3141 cookie-gh-2718 cHJveHk6cHc= "$acme_sig" "${std_sig#v1,}" tok-plain-1618 \
  stripe-sig-0001 slack-sig-0002 shopify-sig-0003 svix-sig-0004 hub-sig-0005 \
  "$(hmac_hex "$GH_SECRET" '{"action":"opened"}')"; do
  if grep -qF -- "$secret" "$T/dump.sql"; then fail "the store holds '$secret'"; fi
done

# --- 19: a secret that cannot verify anything is refused at reload, the old config kept ----------
events() { log_count "$T/daemon.err" "\"event\":\"$1\""; }
events_at_least() { (($(events "$1") >= $2)); }
sed 's/"STD_SECRET"/"BROKEN_STD_SECRET"/' "$T/serve.json" >"$T/serve.json.tmp"
mv -f "$T/serve.json.tmp" "$T/serve.json"
kill -HUP "$(bg_pid daemon)"
wait_until "the reload fails" events_at_least reload_failed 1
line=$(grep '"event":"reload_failed"' "$T/daemon.err")
[[ $line == *BROKEN_STD_SECRET* && $line == */hooks/standard* ]] ||
  fail "reload_failed names neither the variable nor the hook: $line"
[[ $line != *"$BROKEN_STD_SECRET"* && $line != *'not*base64'* ]] ||
  fail "reload_failed shows the secret: $line"
assert_eq 0 "$(events reloaded)" "reloaded events"
body='{"type":"user.updated"}'
sign_standard "$STD_SECRET" msg-2 "$body"
post /hooks/standard "$body" "${SIG[@]}"
expect_http 200
assert_body 'ok msg-2\n'
stop_daemon

# --- 19: ... and at start, exit 64 -----------------------------------------------------------------
# refused_at_start VALUE: the daemon does not start with STD_SECRET=VALUE; one idem: line names the
# hook and the variable, not the value.
refused_at_start() {
  capture start env STD_SECRET="$1" "$IDEM_BIN" serve --config "$T/start.json" \
    --listen 127.0.0.1:0 --port-file "$T/start.port"
  expect_rc 64
  assert_idem_error
  local err
  err=$(cat "$T/start.err")
  [[ $err == *STD_SECRET* && $err == */hooks/standard* ]] ||
    fail "the error for STD_SECRET='$1' names neither the variable nor the hook: $err"
  [[ -z ${1#whsec_} || $err != *"${1#whsec_}"* ]] || fail "the error shows the secret: $err"
  [[ ! -e $T/start.port ]] || fail "the daemon listened with STD_SECRET='$1'"
}
cat >"$T/start.json" <<EOF
{"hooks": [{"path": "/hooks/standard", "command": ["$T/handler.sh"],
  "signature": {"scheme": "standard-webhooks", "secret_env": "STD_SECRET"}}]}
EOF
refused_at_start whsec_
refused_at_start 'whsec_not*base64'
refused_at_start 'whsec_c2VjcmV0'$'\xff'
refused_at_start 'whsec_abc'          # base64 needs its padding: 3 characters are no quantum
refused_at_start 'plain text secret'
refused_at_start ''
# What the Standard Webhooks libraries accept starts: the prefix is optional.
for good in "$STD_SECRET" "${STD_SECRET#whsec_}"; do
  DAEMON=good STD_SECRET=$good start_daemon "$T/start.json"
  DAEMON=good stop_daemon
done
integrity_ok
