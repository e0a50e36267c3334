#!/usr/bin/env bash
# Hooks files of adnanh/webhook, beyond the requests (test_serve_webhook_compat.sh): Debian's Go
# `webhook` 2.8 and `idem serve --hooks` with -template / --template (getenv, js, html, urlquery,
# print; idem's handler does not get what the template read), default methods (-http-methods /
# --http-methods), SIGHUP reloads (a broken file keeps the previous set), what webhook loads
# without a word but idem refuses, and a response code HTTP does not have, which both load and
# answer 200 for. Also idem's own template functions, cat and credential.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/webhook_compat_lib.sh"

hooks_file hooks.json hooks.json
# Default methods for the hooks that have none of their own.
start_webhook webhook-methods "$T/hooks.json" -http-methods 'post, Put'
run_scenarios webhook-methods methods-scenarios.txt
stop_server webhook-methods

start_idem idem-methods "$T/hooks.json" --http-methods 'post, Put'
run_scenarios idem-methods methods-scenarios.txt
stop_server idem-methods
compare_with idem-methods webhook-methods

# The hooks file as a template: getenv (piped into js), print, raw strings, comments, trim
# markers; an unset variable expands to nothing.
# (The template's variables are given to the servers only, so that other runs do not see them.)
SERVER_ENV=(COMPAT_HANDLER=templated "COMPAT_QUOTED=say \"hi\" <b> & a=b \\back"
  "COMPAT_HTML=<a href=\"x\">Tom & Jerry's</a>" "EV_TEMPLATE_SECRET=from the environment")
hooks_file hooks.tmpl.json hooks.tmpl.json
start_webhook webhook-template "$T/hooks.tmpl.json" -template
run_scenarios webhook-template template-scenarios.txt
stop_server webhook-template
TEMPLATE_ENV=("${SERVER_ENV[@]}")
SERVER_ENV=()


# The template: the same answers, except that idem's handler does not get the variable the
# template read its secret from (webhook/idem/templated-signed.*).
SERVER_ENV=("${TEMPLATE_ENV[@]}")
start_idem idem-template "$T/hooks.tmpl.json" --template
SERVER_ENV=()
run_scenarios idem-template template-scenarios.txt
stop_server idem-template
compare_with idem-template webhook-template

# idem's own template functions: cat and credential.
printf 'from a file\n' >"$T/work/token"
mkdir "$T/credentials"
printf 'from systemd' >"$T/credentials/api-token"
hooks_file hooks-idem.tmpl.yaml hooks-idem.tmpl.yaml
SERVER_ENV=("CREDENTIALS_DIRECTORY=$T/credentials")
start_idem idem-functions "$T/hooks-idem.tmpl.yaml" --template
SERVER_ENV=()
CHECK_STATUS=1 run_scenarios idem-functions idem-template-scenarios.txt
stop_server idem-functions
assert_bytes "$T/idem-functions/cat-token.body" 'arg 1: from a file\ncwd: T\n'

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

# What webhook loads without a word: a misspelt property (here the trigger rule: webhook then runs
# the command for anyone), which idem refuses, and a response code HTTP does not have, which
# webhook answers 200 in place of, and so does idem (with a warning at start).
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

# The misspelt property: idem refuses it with one line naming it.
capture idem-typo idem serve --hooks "$T/typo.json" --listen 127.0.0.1:0
expect_rc 64
assert_idem_error
file_has "$T/idem-typo.err" "'trigger-rules'" || fail "the error does not name the property: $(cat "$T/idem-typo.err")"
# The unknown code: 200, as webhook.
start_idem idem-code "$T/code.json"
assert_eq 200 "$(status_of /hooks/code)" "idem: a mismatch code HTTP does not have"
stop_server idem-code
file_has "$T/idem-code.err" '999 is not an HTTP status webhook knows' ||
  fail "no warning about the code: $(cat "$T/idem-code.err")"

# A secret that is still a template action, in a file served without --template (YAML reads it
# as a string): its text would be the HMAC key (webhook takes it so: a request signed with the text runs the command). idem
# refuses the file with one line naming the property and the variable; doctor does too.
cat >"$T/unexpanded.yaml" <<EOF2
- id: deploy
  execute-command: $ECHO
  trigger-rule:
    match:
      type: payload-hmac-sha256
      secret: '{{ getenv "DEPLOY_SECRET" | js }}'
      parameter: {source: header, name: X-Hub-Signature-256}
EOF2
capture idem-unexpanded env DEPLOY_SECRET=s3cret "$IDEM_BIN" serve --hooks "$T/unexpanded.yaml" \
  --listen 127.0.0.1:0
expect_rc 64
assert_idem_error idem-unexpanded
file_has "$T/idem-unexpanded.err" "trigger-rule.match.secret: is a template action (environment variable 'DEPLOY_SECRET') but the file is not served with --template" ||
  fail "unexpected message: $(cat "$T/idem-unexpanded.err")"
file_has "$T/idem-unexpanded.err" "add --template" || fail "no fix named: $(cat "$T/idem-unexpanded.err")"
capture doctor-unexpanded env DEPLOY_SECRET=s3cret "$IDEM_BIN" doctor --hooks "$T/unexpanded.yaml"
file_has "$T/doctor-unexpanded.out" "DEPLOY_SECRET" ||
  fail "doctor does not name the variable: $(cat "$T/doctor-unexpanded.out" "$T/doctor-unexpanded.err")"
# With --template it loads.
saved_env=("${SERVER_ENV[@]}")
SERVER_ENV+=(DEPLOY_SECRET=s3cret)
start_idem idem-expanded "$T/unexpanded.yaml" --template
stop_server idem-expanded
SERVER_ENV=("${saved_env[@]}")

# SIGHUP: as webhook.
hook_json first >"$T/idem-reload-reload.json"
start_idem idem-reload "$T/idem-reload-reload.json"
reload_check idem-reload '"event":"reload_failed"'
stop_server idem-reload

