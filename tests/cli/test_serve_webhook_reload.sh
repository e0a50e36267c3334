#!/usr/bin/env bash
# contract §6b: hooks files beside a config; SIGHUP re-reads them (a broken file keeps the hooks in
# force); a hooks file's hook at a path a native hook has is refused at start (64) and at reload;
# --urlprefix, --http-methods and --response-header; bad values of the flags are usage errors.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
echo "ran $*"
EOF
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF
{"hooks": [{"path": "/in/native", "command": ["$T/handler.sh", "native"], "no_key": "run"}]}
EOF
write_hooks() {  # write_hooks ID...: one hook per id, echoing its id
  local id sep=''
  {
    echo '['
    for id in "$@"; do
      printf '%s{"id": "%s", "execute-command": "%s", "include-command-output-in-response": true,' \
        "$sep" "$id" "$T/handler.sh"
      printf ' "pass-arguments-to-command": [{"source": "string", "name": "%s"}]}\n' "$id"
      sep=,
    done
    echo ']'
  } >"$T/hooks.json.tmp"
  mv "$T/hooks.json.tmp" "$T/hooks.json"
}
reloaded() { [[ $(log_count "$T/$DAEMON.err" "\"event\":\"$1\"") -ge $2 ]]; }

write_hooks one
start_serve --config "$T/serve.json" --hooks "$T/hooks.json" --urlprefix in \
  --http-methods 'post, Put' --response-header 'X-A=1' --response-header 'Cache-Control=no-store'
post /in/native ''
expect_http 200
assert_body 'ran native\n'
request PUT /in/one ''
expect_http 200
assert_body 'ran one\n'
assert_header X-A 1
assert_header Cache-Control no-store
request GET /in/one ''
expect_http 405
post /in/two ''
expect_http 404
assert_body 'Hook not found.'

# A new hook comes with a reload; the old one goes.
write_hooks two
kill -HUP "$(bg_pid "$DAEMON")"
wait_until "the daemon reloads" reloaded reloaded 1
post /in/two ''
expect_http 200
assert_body 'ran two\n'
post /in/one ''
expect_http 404

# A broken file, then one whose hook a native hook has: each reload fails, the hooks stay.
echo '[{"id": "three", "execute-command": "x", "no-such-property": 1}]' >"$T/hooks.json"
kill -HUP "$(bg_pid "$DAEMON")"
wait_until "the reload fails" reloaded reload_failed 1
file_has "$T/$DAEMON.err" 'no-such-property' || fail "the failed reload does not name the property"
write_hooks native
kill -HUP "$(bg_pid "$DAEMON")"
wait_until "the second reload fails" reloaded reload_failed 2
post /in/two ''
expect_http 200
assert_body 'ran two\n'
post /in/native ''
assert_body 'ran native\n'
stop_daemon

# At start: the same conflict, a missing file, bad flag values: usage errors (64), one line.
capture clash idem serve --config "$T/serve.json" --hooks "$T/hooks.json" --urlprefix in \
  --listen 127.0.0.1:0
expect_rc 64
assert_idem_error
file_has "$T/clash.err" '/in/native' || fail "the refusal does not name the path"
capture missing idem serve --hooks "$T/no-such-file.json" --listen 127.0.0.1:0
expect_rc 64
assert_idem_error
capture header idem serve --hooks "$T/hooks.json" --response-header 'no equals' --listen 127.0.0.1:0
expect_rc 64
assert_idem_error
capture alone idem serve --config "$T/serve.json" --template --listen 127.0.0.1:0
expect_rc 64
assert_idem_error
file_has "$T/alone.err" 'need --hooks' || fail "the refusal does not say what is missing"
capture methods idem serve --hooks "$T/hooks.json" --http-methods 'POST,,PUT' --listen 127.0.0.1:0
expect_rc 64
assert_idem_error
