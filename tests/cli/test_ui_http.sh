#!/usr/bin/env bash
# The delivery-log page over HTTP (`idem serve --ui`), without a browser: never on without the
# flag; its headers (a strict Content-Security-Policy, nosniff, no referrer, no caching); a hostile
# key escaped; 404s and 405s; the Host of a loopback listener; every POST refused without the
# session's CSRF token, with a wrong one, or from another Origin, and done with both; the ledger's
# bearer token off loopback, and no start there without --ledger.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ui_lib.sh"

failing_hook_config
csp="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

# --- Never on without the flag ------------------------------------------------------------------
start_daemon "$T/serve.json"
get /ui
expect_http 404
stop_daemon

# --- Off loopback: refused without --ledger, one line -------------------------------------------
capture remote idem serve --config "$T/serve.json" --ui --listen 0.0.0.0:0 --allow-remote
expect_rc 64
assert_idem_error remote
file_has "$T/remote.err" "--ui on a listener that is not loopback needs --ledger" ||
  fail "unexpected message: $(cat "$T/remote.err")"

# --- On loopback ---------------------------------------------------------------------------------
start_daemon "$T/serve.json" --ui
hostile='<script>alert("k")</script>&amp;'
post /hooks/x 'payload' "X-Key: $hostile"
expect_http 500
get /ui
expect_http 200
assert_header Content-Security-Policy "$csp"
assert_header X-Content-Type-Options nosniff
assert_header Referrer-Policy no-referrer
assert_header Cache-Control no-store
assert_header Content-Type 'text/html; charset=utf-8'
file_has "$T/resp.body" '/hooks/x#&lt;script&gt;alert(&quot;k&quot;)&lt;/script&gt;&amp;amp;' ||
  fail "the hostile key is not escaped as expected: $(grep -o 'hooks/x#[^<]*' "$T/resp.body")"
! file_has "$T/resp.body" '<script>alert' || fail "the hostile key reached the page unescaped"
for path in /ui/app.js /ui/app.css; do
  get "$path"
  expect_http 200
  assert_header Content-Security-Policy "$csp"
done
get /ui/app.js
assert_header Content-Type 'text/javascript; charset=utf-8'
get /ui/nothing-here
expect_http 404
get '/ui/record?key=no-such-key'
expect_http 404
get '/ui?status=done'
expect_http 400
file_has "$T/resp.body" "bad status" || fail "no message for a bad filter"
request DELETE /ui ''
expect_http 405
get /ui/remove
expect_http 405
# A page of another site whose name resolves here (DNS rebinding) is refused.
code=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: evil.example:80' "$URL/ui")
assert_eq 403 "$code" "a foreign Host"

# The session cookie and its CSRF token, from the detail page.
key_q=$(printf '%s' "/hooks/x#$hostile" | jq -sRr @uri)
jar=$T/jar
curl -sS -c "$jar" -b "$jar" -o "$T/detail.html" "$URL/ui/record?key=$key_q"
file_has "$T/detail.html" 'id="rerun"' || fail "a failed delivery offers no re-run"
token=$(grep -o 'name="csrf" value="[0-9a-f]*"' "$T/detail.html" | head -1 | sed 's/.*value="//; s/"$//')
[[ ${#token} == 64 ]] || fail "no CSRF token in the detail page"
form() {  # form PATH BODY [CURL ARG...]: a POST with the session; prints the status
  local path=$1 body=$2
  shift 2
  curl -sS -b "$jar" -o "$T/post.body" -D "$T/post.headers" -w '%{http_code}' \
    --data-binary "$body" "$@" "$URL$path"
}
origin="Origin: http://127.0.0.1:$PORT"
assert_eq 403 "$(form /ui/remove "key=$key_q" -H "$origin")" "remove without a token"
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=${token/a/b}0" -H "$origin")" "a wrong token"
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=$token")" "no Origin"
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=$token" -H 'Origin: http://evil.example')" \
  "another Origin"
assert_eq 403 "$(curl -sS -o /dev/null -w '%{http_code}' -H "$origin" \
  --data-binary "key=$key_q&csrf=$token" "$URL/ui/remove")" "the token without its session"
assert_status "/hooks/x#$hostile" failed

# A re-run: a new attempt of the same key, through the hook's own path.
touch "$T/ok"
assert_eq 303 "$(form /ui/rerun "key=$key_q&csrf=$token" -H "$origin")" "re-run"
grep -qi '^location: /ui/record?key=.*notice=rerun' "$T/post.headers" ||
  fail "re-run answered: $(cat "$T/post.headers")"
assert_status "/hooks/x#$hostile" succeeded
assert_eq 2 "$(idem show --json "/hooks/x#$hostile" | jsonq /attempt)" "attempt after the re-run"
idem log --json "/hooks/x#$hostile" >"$T/log.json"
assert_eq rerun "$(jsonq /attempts/1/trigger <"$T/log.json")" "the history's trigger of the re-run"
# A succeeded one is not re-run.
assert_eq 303 "$(form /ui/rerun "key=$key_q&csrf=$token" -H "$origin")" "re-run of a success"
grep -qi 'notice=not_rerun' "$T/post.headers" || fail "a success was re-run: $(cat "$T/post.headers")"

# Bulk: failed deliveries of a filter, at most 20 a request.
rm -f "$T/ok"
for i in 1 2 3; do post /hooks/x "p$i" "X-Key: bulk-$i"; done
touch "$T/ok"
assert_eq 303 "$(form /ui/rerun-failed "hook=%2Fhooks%2Fx&prefix=bulk-&csrf=$token" -H "$origin")" \
  "bulk re-run"
grep -qi '^location: /ui?notice=bulk-3' "$T/post.headers" || fail "bulk: $(cat "$T/post.headers")"
for i in 1 2 3; do assert_status "/hooks/x#bulk-$i" succeeded; done

assert_eq 303 "$(form /ui/remove "key=$key_q&csrf=$token" -H "$origin")" "remove"
grep -qi '^location: /ui?notice=removed' "$T/post.headers" || fail "remove: $(cat "$T/post.headers")"
[[ -z $(idem ls --json | grep -F 'alert') ]] || fail "the removed record is still listed"
stop_daemon

# --- Off loopback behind the ledger's token -------------------------------------------------------
DAEMON=remote
bg remote idem serve --config "$T/serve.json" --ui --ledger --listen 0.0.0.0:0 --allow-remote \
  --port-file "$T/remote.port"
_remote_up() { [[ -s $T/remote.port ]] || bg_exited remote; }
wait_until "the remote daemon listens" _remote_up
[[ -s $T/remote.port ]] || fail "the daemon did not start: $(cat "$T/remote.err")"
URL=http://127.0.0.1:$(<"$T/remote.port")
ledger_token=$(<"$IDEM_DB.token")
get /ui
expect_http 401
file_has "$T/resp.body" 'action="/ui/login"' || fail "no token form"
assert_eq 200 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ledger_token" \
  "$URL/ui")" "the bearer token"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer x$ledger_token" \
  "$URL/ui")" "a wrong bearer token"
host=${URL#http://}
assert_eq 303 "$(curl -sS -c "$T/rjar" -o /dev/null -w '%{http_code}' -H "Origin: http://$host" \
  --data-binary "token=$ledger_token" "$URL/ui/login")" "login"
assert_eq 200 "$(curl -sS -b "$T/rjar" -o /dev/null -w '%{http_code}' "$URL/ui")" "the token cookie"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Origin: http://$host" \
  --data-binary "token=nope" "$URL/ui/login")" "a wrong login"
stop_daemon remote
