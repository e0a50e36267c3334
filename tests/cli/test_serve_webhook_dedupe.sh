#!/usr/bin/env bash
# contract §6b: a webhook hooks file's hook with idem's key (X-GitHub-Delivery) behind webhook's own
# HMAC and branch rules: each delivery runs once, a duplicate gets the first answer back with
# Idempotent-Replayed, another body under the same key is 422, a delivery without the key 400;
# webhook's answers for rules not satisfied (200 or the mismatch code) and a signature that does
# not verify (500); a hook that does not capture its output answers at once, its duplicates too.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

SECRET='webhook-hmac-secret-31'
mkfifo "$T/gate"
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
# Arguments, one HOOK_ variable, a line on stderr between two on stdout; one line per run.
echo "args: $*"
echo "stderr line" >&2
echo "event: $HOOK_event key: $IDEM_KEY"
echo "$IDEM_KEY" >> "$IDEM_TEST_DIR/runs"
[ "$1" != gate ] || read -r x < "$IDEM_TEST_DIR/gate"
[ "$1" != fail ] || exit 3
EOF
chmod +x "$T/handler.sh"
export IDEM_TEST_DIR=$T
cat >"$T/hooks.json" <<EOF
[
  {
    "id": "github",
    "execute-command": "$T/handler.sh",
    "include-command-output-in-response": true,
    "pass-arguments-to-command": [{"source": "payload", "name": "head_commit.id"},
                                  {"source": "payload", "name": "ref"}],
    "pass-environment-to-command": [{"source": "header", "name": "X-GitHub-Event",
                                     "envname": "HOOK_event"}],
    "trigger-rule-mismatch-http-response-code": 202,
    "trigger-rule": {"and": [
      {"match": {"type": "payload-hmac-sha256", "secret": "$SECRET",
                 "parameter": {"source": "header", "name": "X-Hub-Signature-256"}}},
      {"match": {"type": "value", "value": "refs/heads/main",
                 "parameter": {"source": "payload", "name": "ref"}}}
    ]},
    "idem": {"key": {"source": "header", "name": "X-GitHub-Delivery"}}
  },
  {
    "id": "later",
    "execute-command": "$T/handler.sh",
    "response-message": "queued\n",
    "success-http-response-code": 201,
    "pass-arguments-to-command": [{"source": "payload", "name": "mode"}],
    "idem": {"key": {"source": "payload", "name": "id"}}
  },
  {
    "id": "quiet",
    "execute-command": "true",
    "include-command-output-in-response": true,
    "idem": {"key": {"source": "url", "name": "id"}}
  },
  {
    "id": "plain",
    "execute-command": "$T/handler.sh",
    "include-command-output-in-response": true,
    "include-command-output-in-response-on-error": true,
    "pass-arguments-to-command": [{"source": "url", "name": "mode"}]
  }
]
EOF
start_serve --hooks "$T/hooks.json"
runs() { [[ -e $T/runs ]] && wc -l <"$T/runs" || echo 0; }

# --- A GitHub push: signed, on main, keyed by its delivery id ------------------------------------
body='{"ref":"refs/heads/main","head_commit":{"id":"c0ffee"}}'
sign_github "$SECRET" "$body" delivery-1
post /hooks/github "$body" "${SIG[@]}" 'Content-Type: application/json'
expect_http 200
assert_header Content-Type 'text/plain; charset=utf-8'
assert_body 'args: c0ffee refs/heads/main\nstderr line\nevent: push key: delivery-1\n'
assert_no_header Idempotent-Replayed
assert_eq 1 "$(runs)" "runs after the first delivery"

# The provider's retry: the first answer, from the store, and nothing runs.
post /hooks/github "$body" "${SIG[@]}" 'Content-Type: application/json'
expect_http 200
assert_header Idempotent-Replayed true
assert_header Content-Type 'text/plain; charset=utf-8'
assert_body 'args: c0ffee refs/heads/main\nstderr line\nevent: push key: delivery-1\n'
assert_eq 1 "$(runs)" "runs after the duplicate"
assert_eq succeeded "$(idem status '/hooks/github#delivery-1')" "the record's status"

# Another body, correctly signed, under the same delivery id: 422, nothing runs.
other='{"ref":"refs/heads/main","head_commit":{"id":"beef"}}'
sign_github "$SECRET" "$other" delivery-1
post /hooks/github "$other" "${SIG[@]}" 'Content-Type: application/json'
expect_problem 422
assert_eq 1 "$(runs)" "runs after a reused key"

# Signed, but no delivery id: 400, as a native hook without its key.
sign_github "$SECRET" "$body" unused
post /hooks/github "$body" "${SIG[0]}" 'X-GitHub-Event: push' 'Content-Type: application/json'
expect_problem 400
assert_eq 'No idempotency key' "$(jsonq /title <"$T/resp.body")" "title"

# Rules not satisfied (another branch): the mismatch code, webhook's text; a bad signature: 500.
side='{"ref":"refs/heads/side","head_commit":{"id":"c0ffee"}}'
sign_github "$SECRET" "$side" delivery-2
post /hooks/github "$side" "${SIG[@]}" 'Content-Type: application/json'
expect_http 202
assert_body 'Hook rules were not satisfied.'
sign_github wrong-secret "$body" delivery-3
post /hooks/github "$body" "${SIG[@]}" 'Content-Type: application/json'
expect_http 500
assert_body 'Error occurred while evaluating hook rules.'
assert_header Content-Type 'text/plain; charset=utf-8'
assert_eq 1 "$(runs)" "runs after refused deliveries"

# --- No output capture: the answer comes at once, the command runs after it ---------------------
post /hooks/later '{"id":"job-1","mode":"gate"}' 'Content-Type: application/json'
expect_http 201
assert_body 'queued\n'
wait_until "the background command starts" file_has "$T/runs" job-1
# Followed while it runs (SPEC §10), as any front's attempt.
later_shows() {
  "$IDEM_BIN" tail '/hooks/later#job-1' >"$T/later.peek" 2>/dev/null || true
  file_has "$T/later.peek" "key: job-1"
}
wait_until "the running command's output is followed" later_shows
bg later_follow idem tail -f '/hooks/later#job-1'
# Its duplicate while it runs, and after it finished: the same answer, nothing more runs.
post /hooks/later '{"id":"job-1","mode":"gate"}' 'Content-Type: application/json'
expect_http 201
assert_body 'queued\n'
release_fifo "$T/gate"
wait_until "job-1 is recorded" sh -c "[ \"\$('$IDEM_BIN' status '/hooks/later#job-1')\" = succeeded ]"
bg_wait later_follow
expect_rc 0
idem show '/hooks/later#job-1' --stdout >"$T/later.stored"
assert_same "$T/later.stored" "$T/later_follow.out"
post /hooks/later '{"id":"job-1","mode":"gate"}' 'Content-Type: application/json'
expect_http 201
assert_body 'queued\n'
assert_eq 1 "$(grep -c job-1 "$T/runs")" "runs of job-1"

# An empty output has no Content-Type, as Go sends it, first and replayed.
post '/hooks/quiet?id=q1' ''
expect_http 200
assert_no_header Content-Type
post '/hooks/quiet?id=q1' ''
assert_header Idempotent-Replayed true
assert_no_header Content-Type
assert_empty "$T/resp.body"

# --- Without a key every delivery runs; a failure with its output (on-error capture) -------------
post '/hooks/plain?mode=once' ''
expect_http 200
post '/hooks/plain?mode=once' ''
expect_http 200
assert_eq 2 "$(grep -cx '' "$T/runs")" "unkeyed runs"
post '/hooks/plain?mode=fail' ''
expect_http 500
assert_body 'args: fail\nstderr line\nevent:  key: \n'

# Metrics and the log count them by hook, as native hooks.
get /metrics
for line in 'hook="/hooks/github",outcome="ran"} 1' 'hook="/hooks/github",outcome="replayed"} 1' \
  'hook="/hooks/github",outcome="mismatch"} 1' 'hook="/hooks/github",outcome="conflict"} 1' \
  'hook="/hooks/plain",outcome="unkeyed"} 2' 'hook="/hooks/plain",outcome="failed"} 1'; do
  grep -qF "idem_deliveries_total{$line" "$T/resp.body" || fail "/metrics lacks $line"
done

stop_daemon
