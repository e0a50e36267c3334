#!/usr/bin/env bash
# contract §6b: how a hooks file's command runs under idem: in its command-working-directory (one
# that is missing fails the run: 500), with the peer's address and port as remote-addr, with its files written 0600 and removed after the run,
# without the secrets of any hook (idem signatures' secret_env, variables a template read), with
# idem's timeout, concurrency cap and queue; and the answers before the command: 404 for an id
# not loaded, 405 (no body) for a method the hook does not take, 413 over idem's max_body, 401
# for idem's signature; --response-header on every answer of a hook past its method check.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

export IDEM_TEST_DIR=$T
export HOOK_SIGNING_SECRET='idem-signature-secret-5e'
export TEMPLATE_TOKEN='template-token-value-8a'
mkdir "$T/work"
mkfifo "$T/gate"
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
case "$1" in
  pwd) pwd -P ;;
  env) env -0 > "$IDEM_TEST_DIR/env.out"; echo env ;;
  file) printf '%s %s %s\n' "$HOOK_DATA" "$(stat -c %a "$HOOK_DATA")" "$(cat "$HOOK_DATA")" ;;
  slow) exec sleep 30 ;;
  gate) echo started >> "$IDEM_TEST_DIR/gated"; read -r x < "$IDEM_TEST_DIR/gate"; echo done ;;
  *) echo "args: $*" ;;
esac
EOF
chmod +x "$T/handler.sh"
cp "$T/handler.sh" "$T/work/relative.sh"
cat >"$T/hooks.yaml" <<EOF
- id: where
  execute-command: relative.sh
  command-working-directory: $T/work
  include-command-output-in-response: true
  pass-arguments-to-command: [{source: string, name: pwd}]
- id: nowhere
  execute-command: $T/handler.sh
  command-working-directory: $T/gone
  include-command-output-in-response: true
- id: secrets
  execute-command: $T/handler.sh
  include-command-output-in-response: true
  pass-arguments-to-command: [{source: string, name: env}]
  trigger-rule:
    match: {type: value, value: '{{ getenv "TEMPLATE_TOKEN" }}',
            parameter: {source: header, name: X-Token}}
  idem:
    signature: {scheme: github, secret_env: HOOK_SIGNING_SECRET}
    max_body: 64
- id: files
  execute-command: $T/handler.sh
  include-command-output-in-response: true
  pass-arguments-to-command: [{source: string, name: file}]
  pass-file-to-command: [{source: payload, name: data, envname: HOOK_DATA, base64decode: true}]
- id: slow
  execute-command: $T/handler.sh
  include-command-output-in-response: true
  pass-arguments-to-command: [{source: string, name: slow}]
  idem: {timeout: 300ms}
- id: peer
  execute-command: $T/handler.sh
  include-command-output-in-response: true
  pass-arguments-to-command: [{source: request, name: remote-addr}]
- id: capped/one
  execute-command: $T/handler.sh
  include-command-output-in-response: true
  http-methods: [' put ']
  pass-arguments-to-command: [{source: string, name: gate}]
  idem: {max_concurrency: 1, max_queue: 0}
EOF
start_serve --hooks "$T/hooks.yaml" --template --response-header 'X-Served-By=idem'

# --- Working directory: a relative command found there, run there; a missing one fails ----------
post /hooks/where ''
expect_http 200
assert_body '%s\n' "$(cd "$T/work" && pwd -P)"
assert_header X-Served-By idem
post /hooks/nowhere ''
expect_http 500
assert_header Content-Type 'text/plain; charset=utf-8'
assert_body "Error occurred while executing the hook's command. Please check your logs for more details."

# --- remote-addr: the peer as Go's RemoteAddr, host and port ---------------------------------------
port=$(curl -sS -X POST --data-binary '' -o "$T/peer.body" -w '%{local_port}' "$URL/hooks/peer")
assert_bytes "$T/peer.body" 'args: 127.0.0.1:%s\n' "$port"

# --- Secrets: no handler sees a signature's secret or a variable the template read --------------
body='{"a":1}'
sign_github "$HOOK_SIGNING_SECRET" "$body" d-1
post /hooks/secrets "$body" "${SIG[@]}" "X-Token: $TEMPLATE_TOKEN"
expect_http 200
assert_body 'env\n'
for name in HOOK_SIGNING_SECRET TEMPLATE_TOKEN; do
  ! tr '\0' '\n' <"$T/env.out" | grep -q "^$name=" || fail "the handler got $name"
  ! grep -qF -- "${!name}" "$T/env.out" || fail "the handler saw the value of $name"
done
tr '\0' '\n' <"$T/env.out" | grep -qx "IDEM_TEST_DIR=$T" || fail "the handler lost IDEM_TEST_DIR"
# idem's signature is checked before webhook's rules (401), and its body limit before that (413).
post /hooks/secrets "$body" "X-Token: $TEMPLATE_TOKEN"
expect_problem 401
post /hooks/secrets "$(printf '%080d' 0)" "X-Token: $TEMPLATE_TOKEN"
expect_problem 413

# --- Files: 0600, holding the decoded value, gone once the command is over -----------------------
post /hooks/files "{\"data\":\"$(printf 'file bytes' | base64 -w0)\"}" 'Content-Type: application/json'
expect_http 200
read -r path mode content <"$T/resp.body"
assert_eq 600 "$mode" "the file's mode"
assert_eq 'file bytes' "$content" "the file's content"
[[ ! -e $path && ! -e ${path%/*} ]] || fail "the hook's file $path is still there"

# --- idem's timeout: the command is stopped, the answer is 504 ------------------------------------
post /hooks/slow ''
expect_http 504
assert_body "Error occurred while executing the hook's command. Please check your logs for more details."

# --- Concurrency cap (1, no queue): a second delivery while one runs is 503 ----------------------
RESP=first
curl -sS -X PUT --data-binary '' -o "$T/first.body" -w '%{http_code}' "$URL/hooks/capped/one" >"$T/first.status" &
first=$!
wait_until "the first capped delivery runs" file_has "$T/gated" started
request PUT /hooks/capped/one ''
expect_problem 503
release_fifo "$T/gate"
wait "$first"
assert_eq 200 "$(cat "$T/first.status")" "the first capped delivery"
assert_bytes "$T/first.body" 'done\n'
unset RESP

# --- Before any hook runs: 404 for an id not loaded, 405 without a body --------------------------
post /hooks/nope ''
expect_http 404
assert_body 'Hook not found.'
post /hooks/capped/one ''
expect_http 405
assert_empty "$T/resp.body"
assert_no_header X-Served-By
assert_no_header Content-Type

stop_daemon
