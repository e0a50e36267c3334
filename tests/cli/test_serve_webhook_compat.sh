#!/usr/bin/env bash
# Hooks files of adnanh/webhook (SPEC §6b): every scenario of webhook/scenarios.txt (GitHub with
# HMAC and a branch rule, several signatures with and without soft failures, Bitbucket's form
# field of JSON, GitLab, XML, raw bodies, a JSON array body, a slash in an id, request sources,
# methods, mismatch codes, output capture, content types, files, entire payloads) is sent to
# Debian's Go `webhook` 2.8, the reference, with webhook/hooks.json: webhook must answer as the
# table says, and the same with webhook/hooks.yaml (the same hooks).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/webhook_compat_lib.sh"

# same_answers A B: servers A and B gave the same status, body, compared headers and handler
# runs in every scenario.
same_answers() {
  local f what
  for f in "$T/$1"/*.status; do
    f=${f%.status}
    f=${f##*/}
    for what in status body headers runs; do
      cmp -s "$T/$1/$f.$what" "$T/$2/$f.$what" ||
        fail "$f: the $what differs between $1 and $2: $(diff "$T/$1/$f.$what" "$T/$2/$f.$what" | head -20 | cat -v)"
    done
  done
}

hooks_file hooks.json hooks.json
hooks_file hooks.yaml hooks.yaml
start_webhook webhook "$T/hooks.json" -header X-Served-By=compat
run_scenarios webhook
stop_server webhook
start_webhook webhook-yaml "$T/hooks.yaml" -header X-Served-By=compat
run_scenarios webhook-yaml
stop_server webhook-yaml
same_answers webhook webhook-yaml
# Plain YAML scalars where a string is wanted, as webhook's YAML 1.1 loader reads them.
hooks_file yaml-scalars.yaml yaml-scalars.yaml
start_webhook webhook-scalars "$T/yaml-scalars.yaml"
run_scenarios webhook-scalars yaml-scalars-scenarios.txt
stop_server webhook-scalars
# Default methods for the hooks that have none of their own.
start_webhook webhook-methods "$T/hooks.json" -http-methods 'post, Put'
run_scenarios webhook-methods methods-scenarios.txt
stop_server webhook-methods

# The hooks file as a template: getenv (piped into js), print, raw strings, comments, trim
# markers; an unset variable expands to nothing.
export COMPAT_HANDLER=templated COMPAT_QUOTED='say "hi" <b> & a=b \back' COMPAT_HTML="<a href=\"x\">Tom & Jerry's</a>"
export EV_TEMPLATE_SECRET='from the environment'
unset COMPAT_UNSET
hooks_file hooks.tmpl.json hooks.tmpl.json
start_webhook webhook-template "$T/hooks.tmpl.json" -template
run_scenarios webhook-template template-scenarios.txt
stop_server webhook-template

# --- Loading and reloading ------------------------------------------------------------------------
# status_of URL_PATH: the status a POST without a body gets from $URL.
status_of() { curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary '' "$URL$1"; }
status_is_not() { [[ $(status_of "$1") != "$2" ]]; }

# SIGHUP re-reads the hooks file: a new hook is served; a broken file keeps the previous set.
hook_json() {  # hook_json ID...: a hooks file of hooks running the echo handler
  local id sep=
  printf '['
  for id in "$@"; do
    printf '%s{"id": "%s", "execute-command": "%s"}' "$sep" "$id" "$ECHO"
    sep=,
  done
  printf ']\n'
}
reload_check() {  # reload_check SERVER BROKEN_LOG_LINE
  hook_json first >"$T/$1-reload.json.new"
  mv "$T/$1-reload.json.new" "$T/$1-reload.json"
  assert_eq 404 "$(status_of /hooks/second)" "$1: a hook not loaded yet"
  hook_json first second >"$T/$1-reload.json.new"
  mv "$T/$1-reload.json.new" "$T/$1-reload.json"
  kill -HUP "$(bg_pid "$1")"
  wait_until "$1 serves the hook added before SIGHUP" status_is_not /hooks/second 404
  assert_eq 200 "$(status_of /hooks/second)" "$1: the added hook"
  printf '[{"id": "first",' >"$T/$1-reload.json"
  kill -HUP "$(bg_pid "$1")"
  wait_until "$1 logs the broken reload" file_has "$T/$1.err" "$2"
  assert_eq 200 "$(status_of /hooks/second)" "$1: the hook of the set kept after a broken reload"
}
hook_json first >"$T/webhook-reload-reload.json"
start_webhook webhook-reload "$T/webhook-reload-reload.json"
reload_check webhook-reload "couldn't load hooks from file"
stop_server webhook-reload

# What webhook loads without a word and idem refuses: a misspelt property (here the trigger rule:
# webhook then runs the command for anyone) and a response code HTTP does not have (webhook
# answers 200 instead).
printf '[{"id": "typo", "execute-command": "%s", "trigger-rules": {"match": {"type": "value",
  "value": "s3cret", "parameter": {"source": "header", "name": "X-Token"}}}}]\n' "$ECHO" >"$T/typo.json"
printf '[{"id": "code", "execute-command": "%s", "trigger-rule-mismatch-http-response-code": 999,
  "trigger-rule": {"match": {"type": "value", "value": "x", "parameter": {"source": "url",
  "name": "x"}}}}]\n' "$ECHO" >"$T/code.json"
start_webhook webhook-lenient "$T/typo.json" -hooks "$T/code.json"
assert_eq 200 "$(status_of /hooks/typo)" "webhook: the hook with a misspelt trigger-rule, without its token"
collect webhook-lenient typo 1
assert_eq 200 "$(status_of /hooks/code)" "webhook: a mismatch code HTTP does not have"
stop_server webhook-lenient

# examples/webhook/hooks.yaml, idem object included, is still a hooks file webhook serves.
example=$(cd "$COMPAT/../../../examples/webhook" && pwd)
example_push() {  # example_push SERVER DELIVERY: a signed push to the example's hook
  local body='{"ref": "refs/heads/main", "head_commit": {"id": "4b1d"}, "pusher": {"name": "ana"},
  "repository": {"full_name": "acme/site"}}' sig
  sig=$(printf %s "$body" | openssl dgst -sha256 -hmac "$GITHUB_SECRET" -binary | to_hex)
  curl -sS --max-time 30 -o "$T/$1.push.body" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H "X-Hub-Signature-256: sha256=$sig" -H "X-GitHub-Delivery: $2" --data-binary "$body" \
    "$URL/hooks/github-push" >"$T/$1.push.status"
}
mkdir -p "$T/example/examples"
ln -s "$example" "$T/example/examples/webhook"  # its command is relative to the daemon's directory
# shellcheck disable=SC2016  # expanded by deploy.sh
export GITHUB_SECRET='example secret' DEPLOY_CMD='echo "checkout $COMMIT of $REPOSITORY"'
cd "$T/example" || fail "no $T/example"
start_webhook webhook-example "$example/hooks.yaml" -template
cd "$T" || fail "no $T"
example_push webhook-example d-1
stop_server webhook-example
assert_eq 200 "$(<"$T/webhook-example.push.status")" "webhook: the example's push"
assert_bytes "$T/webhook-example.push.body" 'checkout 4b1d of acme/site\ndeployed acme/site at 4b1d (pushed by ana)\n'
