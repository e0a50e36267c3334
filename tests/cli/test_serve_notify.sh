#!/usr/bin/env bash
# The daemon's "notify" (a native hook's, the proxy's): run in the background when a delivery or
# a keyed request fails, or on "change" recovers; the document on stdin; no secret of the daemon
# in its environment; its own failure is a log line and never changes an answer.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

export HOOK_SECRET='hook-secret-value-51ae'
# Each notification: NOTES/<event>.<n> (its stdin) and NOTES/<event>.<n>.env (its environment).
notes_script
# The handler fails while FAILING exists.
export FAILING=$T/failing
cat >"$T/handler.sh" <<'EOF2'
#!/bin/sh
if [ -e "$FAILING" ]; then echo broken; exit 3; fi
echo done
EOF2
chmod +x "$T/handler.sh"
start_upstream up
cat >"$T/serve.json" <<EOF2
{"hooks": [
  {"path": "/hooks/jobs", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "signature": {"scheme": "hmac-sha256", "secret_env": "HOOK_SECRET", "header": "X-Sig"},
   "notify": {"command": ["$T/note.sh"], "on": "change"}},
  {"path": "/hooks/loud", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "notify": {"command": "echo no mail server >&2; exit 7", "timeout": "5s"}}
 ],
 "proxy": {"upstream": "$UURL", "store_server_errors": true,
           "notify": {"command": "$T/note.sh", "on": "failure"}}}
EOF2
start_daemon "$T/serve.json"

signed_post() {  # signed_post KEY BODY
  post /hooks/jobs "$2" "X-Key: $1" "X-Sig: $(hmac_hex "$HOOK_SECRET" "$2")"
}
notes_named() { ls "$NOTES" | grep -v env | sort -t. -k2 -n | tr '\n' ' '; }

# A failing handler: the answer is the handler's failure; the notification follows it.
touch "$FAILING"
signed_post d1 'job 1'
expect_http 500
wait_until "the failure is told" test -s "$NOTES/failed.0"
doc=$NOTES/failed.0
assert_eq "failed	/hooks/jobs#d1	failed	3	500	1	status" \
  "$(jsonq /event /key /record/status /attempt/exit_code /attempt/http_status /attempt/number \
     /attempt/reason <"$doc")" "the hook's failure document"
assert_eq "$(printf 'broken\n' | base64)" "$(jsonq /record/stdout_b64 <"$doc")" "its output"
grep -qx "IDEM_EVENT=failed" "$NOTES/failed.0.env" || fail "no IDEM_EVENT in its environment"
grep -qx "IDEM_KEY=/hooks/jobs#d1" "$NOTES/failed.0.env" || fail "no IDEM_KEY in its environment"
! grep -q "HOOK_SECRET\|$HOOK_SECRET" "$NOTES/failed.0.env" ||
  fail "the notify command got the hook's secret"
# The provider's retry succeeds: recovered. A duplicate of it is replayed and tells nothing, nor
# does a first success.
rm "$FAILING"
signed_post d1 'job 1'
expect_http 200
wait_until "the recovery is told" test -s "$NOTES/recovered.1"
assert_eq "recovered	succeeded	2	200" \
  "$(jsonq /event /record/status /attempt/number /attempt/http_status <"$NOTES/recovered.1")" \
  "the hook's recovery document"
signed_post d1 'job 1'
expect_http 200
assert_header Idempotent-Replayed true
signed_post d2 'job 2'
expect_http 200
assert_eq "failed.0 recovered.1 " "$(notes_named)" "a replay and a first success tell nothing"
touch "$FAILING"

# The notify command that fails: the answer is the delivery's, the log says why.
post /hooks/loud 'job' "X-Key: l1"
expect_http 500
wait_until "the failed notify is logged" file_has "$T/$DAEMON.err" '"event":"notify_failed"'
line=$(grep '"event":"notify_failed"' "$T/$DAEMON.err")
assert_eq "/hooks/loud#l1	failed	7	no mail server
" "$(jsonq /key /notify_event /exit_code /output <<<"$line")
" "the log line of a failed notify"

# The proxy: an upstream's 5xx, stored (store_server_errors), is told as a failure.
post /pay '{"amount": 1}' "Idempotency-Key: p1" "X-Answer-Status: 502"
expect_http 502
wait_until "the proxy's failure is told" test -s "$NOTES/failed.2"
assert_eq "failed	502	succeeded	status" \
  "$(jsonq /event /attempt/http_status /record/status /attempt/reason <"$NOTES/failed.2")" \
  "the proxy's failure document"
! grep -q "HOOK_SECRET" "$NOTES/failed.2.env" || fail "the proxy's notify got a hook's secret"
# An exchange cut off after the request went out: a recorded failure, told too.
post /pay '{"amount": 2}' "Idempotency-Key: p2" "X-Answer-Drop: 1"
expect_http 502
wait_until "the cut-off exchange is told" test -s "$NOTES/failed.3"
assert_eq "failed	failed	error	null" \
  "$(jsonq /event /record/status /attempt/reason /attempt/http_status <"$NOTES/failed.3")" \
  "the cut-off exchange's document"
# A success through the proxy tells nothing (its notify is on failure).
post /pay '{"amount": 3}' "Idempotency-Key: p3"
expect_http 200
stop_daemon
expect_rc 0
assert_eq 4 "$(ls "$NOTES" | grep -vc env)" "notifications in all"
