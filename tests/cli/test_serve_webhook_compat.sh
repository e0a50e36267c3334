#!/usr/bin/env bash
# Hooks files of adnanh/webhook (contract §6b): every scenario of webhook/scenarios.txt (GitHub with
# HMAC and a branch rule, several signatures with and without soft failures, Bitbucket's form
# field of JSON, GitLab, XML, raw bodies, a JSON array body, a slash in an id, request sources,
# methods, mismatch codes, output capture, content types, files, entire payloads) is sent to
# Debian's Go `webhook` 2.8, the reference, with webhook/hooks.json, then to `idem serve --hooks`
# with the same file: webhook must answer as the table says, and idem as webhook, except where
# webhook/idem/README says why not. (test_serve_webhook_compat_yaml.sh does the same with
# hooks.yaml, test_serve_webhook_compat_load.sh templates, reloads and loading.)
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/webhook_compat_lib.sh"

hooks_file hooks.json hooks.json
start_webhook webhook "$T/hooks.json" -header X-Served-By=compat
run_scenarios webhook
stop_server webhook
start_idem idem "$T/hooks.json" --response-header X-Served-By=compat
run_scenarios idem
stop_server idem
compare_with idem webhook

# examples/webhook/hooks.yaml, idem object included, is still a hooks file webhook serves.
example=$(cd "$COMPAT/../../../examples/webhook" && pwd)
example_push() {  # example_push SERVER DELIVERY: a signed push to the example's hook
  local body='{"ref": "refs/heads/main", "head_commit": {"id": "4b1d"}, "pusher": {"name": "ana"},
  "repository": {"full_name": "acme/site"}}' sig
  sig=$(printf %s "$body" | openssl dgst -sha256 -hmac "$EXAMPLE_SECRET" -binary | to_hex)
  curl -sS --max-time 30 -o "$T/$1.push.body" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H "X-Hub-Signature-256: sha256=$sig" -H "X-GitHub-Delivery: $2" --data-binary "$body" \
    "$URL/hooks/github-push" >"$T/$1.push.status"
}
mkdir -p "$T/example/examples"
ln -s "$example" "$T/example/examples/webhook"  # its command is relative to the daemon's directory
EXAMPLE_SECRET='example secret'
# shellcheck disable=SC2016,SC2034  # expanded by deploy.sh; start_webhook reads SERVER_ENV
SERVER_ENV=("GITHUB_SECRET=$EXAMPLE_SECRET" 'DEPLOY_CMD=echo "checkout $COMMIT of $REPOSITORY"')
cd "$T/example" || fail "no $T/example"
start_webhook webhook-example "$example/hooks.yaml" -template
cd "$T" || fail "no $T"
example_push webhook-example d-1
stop_server webhook-example
assert_eq 200 "$(<"$T/webhook-example.push.status")" "webhook: the example's push"
assert_bytes "$T/webhook-example.push.body" 'checkout 4b1d of acme/site\ndeployed acme/site at 4b1d (pushed by ana)\n'

