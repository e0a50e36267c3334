#!/usr/bin/env bash
# Hooks files of adnanh/webhook (SPEC §6b): every scenario of webhook/scenarios.txt (GitHub with
# HMAC and a branch rule, several signatures with and without soft failures, Bitbucket's form
# field of JSON, GitLab, XML, raw bodies, a JSON array body, a slash in an id, request sources,
# methods, mismatch codes, output capture, content types, files, entire payloads) is sent to
# Debian's Go `webhook` 2.8, the reference, with webhook/hooks.json: webhook must answer as the
# table says. (webhook reads JSON and YAML through one YAML loader; webhook/hooks.yaml holds the
# same hooks.)
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
start_webhook webhook "$T/hooks.json" -header X-Served-By=compat
run_scenarios webhook
stop_server webhook

# The hooks file as a template: getenv (piped into js), print, raw strings, comments, trim
# markers; an unset variable expands to nothing.
export COMPAT_HANDLER=templated COMPAT_QUOTED='say "hi" <b> & \back' EV_TEMPLATE_SECRET='from the environment'
unset COMPAT_UNSET
hooks_file hooks.tmpl.json hooks.tmpl.json
start_webhook webhook-template "$T/hooks.tmpl.json" -template
run_scenarios webhook-template template-scenarios.txt
stop_server webhook-template
