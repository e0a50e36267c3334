#!/usr/bin/env bash
# The delivery-log page over HTTP (`idem serve --ui`), without a browser: never on without the
# flag, and never on the hooks' listener (a listener of its own: --ui-listen, or a free loopback
# port printed at start); a login asked of every request, loopback too (tried as another local
# user): the one-time link of the log (once), the token of the 0600 file beside the store (never
# the ledger's), a signed session cookie (HttpOnly, SameSite=Strict, Path=/ui; Secure over TLS or
# behind a proxy that says https) that is no token; its headers (a strict
# Content-Security-Policy, nosniff, no referrer, no caching); a hostile key escaped; 404s and
# 405s; the Host of a loopback listener, for /healthz and /metrics too; every POST refused
# without the session's CSRF token, with a wrong one, or from another origin, and done with both,
# behind a reverse proxy that rewrites Host too; a hook's HTML output answered as text.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ui_lib.sh"

failing_hook_config
csp="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

# --- Never on without the flag ------------------------------------------------------------------
start_daemon "$T/serve.json"
get /ui
expect_http 404
[[ ! -e $IDEM_DB.ui-token ]] || fail "a UI token file without --ui"
stop_daemon

# --- A bad --ui-listen, one line -----------------------------------------------------------------
capture badui idem serve --config "$T/serve.json" --ui-listen nowhere
expect_rc 64
assert_idem_error badui
file_has "$T/badui.err" "bad --ui-listen 'nowhere'" || fail "unexpected message: $(cat "$T/badui.err")"
capture remote idem serve --config "$T/serve.json" --ui-listen 0.0.0.0:0
expect_rc 64
file_has "$T/remote.err" "--ui-listen 0.0.0.0:0 is not a loopback address; add --allow-remote" ||
  fail "unexpected message: $(cat "$T/remote.err")"

# --- On loopback: a listener of its own ----------------------------------------------------------
ui_start "$T/serve.json"
[[ $UI != "$URL" ]] || fail "the page shares the hooks' listener"
assert_eq 600 "$(stat -c %a "$IDEM_DB.ui-token")" "the UI token file's mode"
[[ ${#UI_TOKEN} == 64 ]] || fail "the UI token: '$UI_TOKEN'"
get /ui
expect_http 404  # the hooks' listener has no page: no hook answer shares its origin
hostile='<script>alert("k")</script>&amp;'
post /hooks/x 'payload' "X-Key: $hostile"
expect_http 500

# No credential, no page: not for the list, a record, the rows, nor a form; not for another
# local user either, who cannot read the token file.
key_q=$(printf '%s' "/hooks/x#$hostile" | jq -sRr @uri)
for path in /ui / "/ui/record?key=$key_q" /ui/rows; do
  code=$(curl -sS -o "$T/anon.body" -w '%{http_code}' "$UI$path")
  [[ $path == / ]] && { assert_eq 303 "$code" "/ on the page's listener"; continue; }
  assert_eq 401 "$code" "$path without a login"
  file_has "$T/anon.body" 'action="/ui/login"' || fail "$path: no login form"
  ! file_has "$T/anon.body" 'alert' || fail "$path without a login shows a record"
done
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Origin: $UI" \
  --data-binary "key=$key_q" "$UI/ui/remove")" "a remove without a login"
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
  nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
  ! "${nobody[@]}" cat "$IDEM_DB.ui-token" 2>/dev/null || fail "another user reads the UI token"
  assert_eq 401 "$("${nobody[@]}" curl -sS -o /dev/null -w '%{http_code}' "$UI/ui")" \
    "another local user's request"
fi
assert_status "/hooks/x#$hostile" failed

# The style sheet, script and icon need none: the login page is drawn with them.
for path in /ui/app.css /ui/app.js /ui/icon.svg; do
  assert_eq 200 "$(curl -sS -o /dev/null -w '%{http_code}' "$UI$path")" "$path without a login"
done

# The one-time link: a session cookie, the token dropped by the redirect; then never again.
curl -sS -D "$T/login.headers" -o /dev/null "$UI_LOGIN"
tr -d '\r' <"$T/login.headers" >"$T/login.h"
grep -q '^HTTP/1.1 303' "$T/login.h" || fail "the login link: $(cat "$T/login.h")"
grep -qx 'Location: /ui' "$T/login.h" || fail "the login's redirect: $(cat "$T/login.h")"
cookie=$(grep -i '^set-cookie: ' "$T/login.h" | sed 's/^[^:]*: //')
[[ $cookie == idem_ui_session=*'; Path=/ui; HttpOnly; SameSite=Strict; Max-Age='* ]] ||
  fail "the session cookie: $cookie"
[[ $cookie != *Secure* ]] || fail "Secure over plain HTTP: $cookie"
session=${cookie%%;*}
session=${session#idem_ui_session=}
[[ $session != *"$UI_TOKEN"* && $session != *"${UI_LOGIN##*=}"* ]] ||
  fail "the cookie carries a token: $session"
assert_eq 200 "$(curl -sS -o /dev/null -w '%{http_code}' -b "idem_ui_session=$session" "$UI/ui")" \
  "the session"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' "$UI_LOGIN")" "the login link twice"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -b "idem_ui_session=${session}0" \
  "$UI/ui")" "a changed session cookie"
forged_session="9${session#?}"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -b "idem_ui_session=$forged_session" \
  "$UI/ui")" "a session cookie with another expiry"
# The token file's token logs in by the form, as often as needed; a wrong one does not.
assert_eq 303 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Origin: $UI" \
  --data-binary "token=$UI_TOKEN" "$UI/ui/login")" "the form's login"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Origin: $UI" \
  --data-binary "token=nope" "$UI/ui/login")" "a wrong token"
assert_eq 403 "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Origin: http://evil.example' \
  --data-binary "token=$UI_TOKEN" "$UI/ui/login")" "a login from another origin"

HOOKS=$URL
URL=$UI
CURL_EXTRA=(-H "Authorization: Bearer $UI_TOKEN")
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
CURL_EXTRA=()
# A page of another site whose name resolves here (DNS rebinding) is refused.
code=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: evil.example:80' "$UI/ui")
assert_eq 403 "$code" "a foreign Host"
for path in /healthz /metrics; do
  assert_eq 403 "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: evil.example' \
    "http://127.0.0.1:$PORT$path")" "$path for a foreign Host"
  assert_eq 200 "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$path")" \
    "$path for a loopback Host"
done

# A session (the form's login) and its CSRF token, from the detail page.
jar=$T/jar
curl -sS -c "$jar" -o /dev/null -H "Origin: $UI" --data-binary "token=$UI_TOKEN" "$UI/ui/login"
curl -sS -b "$jar" -o "$T/detail.html" "$URL/ui/record?key=$key_q"
file_has "$T/detail.html" 'id="rerun"' || fail "a failed delivery offers no re-run"
token=$(grep -o 'name="csrf" value="[0-9a-f]*"' "$T/detail.html" | head -1 | sed 's/.*value="//; s/"$//')
[[ ${#token} == 64 ]] || fail "no CSRF token in the detail page"
form() {  # form PATH BODY [CURL ARG...]: a POST with the session; prints the status
  local path=$1 body=$2
  shift 2
  curl -sS -b "$jar" -o "$T/post.body" -D "$T/post.headers" -w '%{http_code}' \
    --data-binary "$body" "$@" "$URL$path"
}
origin="Origin: $UI"
assert_eq 403 "$(form /ui/remove "key=$key_q" -H "$origin")" "remove without a token"
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=${token/a/b}0" -H "$origin")" "a wrong token"
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=$token")" "no Origin"
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=$token" -H 'Origin: http://evil.example')" \
  "another Origin"
curl -sS -c "$T/jar2" -o /dev/null -H "$origin" --data-binary "token=$UI_TOKEN" "$UI/ui/login"
assert_eq 403 "$(curl -sS -b "$T/jar2" -o /dev/null -w '%{http_code}' -H "$origin" \
  --data-binary "key=$key_q&csrf=$token" "$URL/ui/remove")" "the token of another session"
# Behind a reverse proxy that rewrites Host (nginx's default): the browser's own word
# (Sec-Fetch-Site) is taken for the origin, the CSRF token is still asked, and another site's is
# refused; a proxy that says https gets a Secure cookie.
proxied=(-H "Host: 127.0.0.1:${UI##*:}" -H 'Origin: https://idem.example.org')
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=$token" "${proxied[@]}")" \
  "a proxied POST with no Sec-Fetch-Site"
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=$token" "${proxied[@]}" \
  -H 'Sec-Fetch-Site: same-site')" "a proxied POST from a sibling site"
assert_eq 403 "$(form /ui/remove "key=$key_q" "${proxied[@]}" -H 'Sec-Fetch-Site: same-origin')" \
  "a proxied POST without the CSRF token"
assert_eq 403 "$(form /ui/remove "key=$key_q&csrf=$token" -H "$origin" \
  -H 'Sec-Fetch-Site: cross-site')" "a cross-site POST with the right Origin"
assert_eq 303 "$(curl -sS -D "$T/xfp.headers" -o /dev/null -w '%{http_code}' \
  -H 'X-Forwarded-Proto: https' -H 'Sec-Fetch-Site: same-origin' \
  --data-binary "token=$UI_TOKEN" "$UI/ui/login")" "a login through a proxy that says https"
grep -qi '^set-cookie: idem_ui_session=.*; Secure' "$T/xfp.headers" ||
  fail "no Secure cookie behind https: $(cat "$T/xfp.headers")"
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

# Bulk: the failed deliveries a page shows, and only they, re-run in the background with its
# progress on the list. A view of succeeded records offers none.
rm -f "$T/ok"
for i in 1 2 3 4; do URL=$HOOKS post /hooks/x "p$i" "X-Key: bulk-$i"; done
touch "$T/ok"
curl -sS -b "$jar" -o "$T/ok.html" "$UI/ui?status=succeeded"
! file_has "$T/ok.html" 'id="rerun-failed"' || fail "a view of succeeded records offers a re-run"
curl -sS -b "$jar" -o "$T/bulk.html" "$UI/ui?hook=%2Fhooks%2Fx&prefix=bulk-"
file_has "$T/bulk.html" 'Re-run the 4 failed shown' || fail "no re-run of the 4 shown"
assert_eq 4 "$(grep -o 'name="key" value="/hooks/x#bulk-[0-9]"' "$T/bulk.html" | wc -l)" \
  "keys in the re-run form"
chosen="key=%2Fhooks%2Fx%23bulk-1&key=%2Fhooks%2Fx%23bulk-3&key=%2Fhooks%2Fx%23bulk-3"
assert_eq 303 "$(form /ui/rerun-failed "$chosen&csrf=$token" -H "$origin")" "bulk re-run"
grep -qi '^location: /ui?notice=bulk-started' "$T/post.headers" || fail "bulk: $(cat "$T/post.headers")"
bulk_done() {
  curl -sS -b "$jar" -D "$T/progress.h" -o "$T/progress.txt" "$UI/ui/progress"
  grep -qi '^idem-rerun-active: false' "$T/progress.h"
}
wait_until "the bulk re-run ends" bulk_done
assert_eq "Re-run of 3 failed deliveries done: 2 ran again, 1 skipped (running, or no longer failed)." \
  "$(cat "$T/progress.txt")" "the bulk re-run's progress"
assert_status "/hooks/x#bulk-1" succeeded
assert_status "/hooks/x#bulk-3" succeeded
assert_status "/hooks/x#bulk-2" failed  # not chosen: not re-run
curl -sS -b "$jar" -o "$T/list.html" "$UI/ui"
file_has "$T/list.html" 'id="progress" role="status">Re-run of 3 failed' || fail "no progress on the list"

assert_eq 303 "$(form /ui/remove "key=$key_q&csrf=$token" -H "$origin")" "remove"
grep -qi '^location: /ui?notice=removed' "$T/post.headers" || fail "remove: $(cat "$T/post.headers")"
[[ -z $(idem ls --json | grep -F 'alert') ]] || fail "the removed record is still listed"
stop_daemon

# --- Off loopback: the Host is free, the login is still asked ------------------------------------
DAEMON=remote
start_daemon "$T/serve.json" --ledger --ui-listen 0.0.0.0:0 --allow-remote
ui_found
ledger_token=$(<"$IDEM_DB.token")
[[ $ledger_token != "$UI_TOKEN" ]] || fail "the page's token is the ledger's"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Host: idem.example.org' \
  "$UI/ui")" "off loopback without a login"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ledger_token" \
  "$UI/ui")" "the ledger's bearer token on the page"
assert_eq 200 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $UI_TOKEN" \
  -H 'Host: idem.example.org' "$UI/ui")" "the UI token off loopback"
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer x$UI_TOKEN" \
  "$UI/ui")" "a wrong bearer token"
stop_daemon remote
DAEMON=daemon

# --- A hook's HTML output is answered as text, never sniffed into a page -------------------------
cat >"$T/hooks.json" <<EOF2
[{"id": "echo", "execute-command": "$T/html.sh", "include-command-output-in-response": true},
 {"id": "typed", "execute-command": "$T/html.sh", "include-command-output-in-response": true,
  "response-headers": [{"name": "Content-Type", "value": "text/html; charset=utf-8"}]}]
EOF2
printf '#!/bin/sh\necho "<html><script>document.title=1</script></html>"\n' >"$T/html.sh"
chmod +x "$T/html.sh"
start_serve --hooks "$T/hooks.json"
post /hooks/echo ''
expect_http 200
assert_header Content-Type 'text/plain; charset=utf-8'
assert_header X-Content-Type-Options nosniff
post /hooks/typed ''
expect_http 200
assert_header Content-Type 'text/html; charset=utf-8'  # the hook says so
[[ $(grep -ci '^content-type:' "$T/resp.headers") == 1 ]] ||
  fail "two Content-Types: $(cat "$T/resp.headers")"
stop_daemon
