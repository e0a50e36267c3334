#!/usr/bin/env bash
# Where webhook's router and loader differ from a plain reading of the hooks file, idem serves as
# Debian's Go `webhook` 2.8 does (contract §6b): GET / answers "OK" (health probes of webhook
# containers ask it), paths are percent-decoded before matching, ids with spaces, non-ASCII
# letters or '%' are served at their encoded paths, unclean paths (//hooks/x) are redirected
# (301), bad escapes are a 400 (webhook/paths-scenarios.txt); and files written as webhook's own
# tests write theirs load unchanged, their numbers and booleans read as text where webhook wants a
# string, response codes HTTP does not have answered as 200 (webhook/go-tests-scenarios.txt).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/webhook_compat_lib.sh"

# head_of SERVER: the answer to HEAD / from $URL (its status line, then its headers sorted),
# without the transport's Date and Connection.
head_of() {
  curl -sS --max-time 30 -I "$URL/" | tr -d '\r' | grep -viE '^(date|connection|keep-alive):' |
    sed 's/^[^:]*:/\L&/' | LC_ALL=C sort >"$T/$1.head"
}

hooks_file paths.json paths.json
start_webhook webhook "$T/paths.json" -header X-Served-By=compat
run_scenarios webhook paths-scenarios.txt
head_of webhook
stop_server webhook
start_idem idem "$T/paths.json" --response-header X-Served-By=compat
run_scenarios idem paths-scenarios.txt
head_of idem
stop_server idem
compare_with idem webhook
assert_same "$T/webhook.head" "$T/idem.head"
assert_eq '/hooks/x?a=1&b=%20' "$(sed -n 's/^location: //p' "$T/webhook/double-slash-query.headers")" \
  "webhook's redirect keeps the query"
# The id whose path is not clean is never served (webhook redirects it); idem says so at start.
file_has "$T/idem.err" 'never served' || fail "no warning about hook a/../b: $(cat "$T/idem.err")"

# Files in the manner of webhook's own test files, rendered as its tests render them.
for format in json yaml; do
  sed "s|{{ .Hookecho }}|$ECHO|g" "$COMPAT/go-tests.$format.tmpl" >"$T/go-tests.$format"
  start_webhook "webhook-$format" "$T/go-tests.$format"
  run_scenarios "webhook-$format" go-tests-scenarios.txt
  stop_server "webhook-$format"
  start_idem "idem-$format" "$T/go-tests.$format"
  run_scenarios "idem-$format" go-tests-scenarios.txt
  stop_server "idem-$format"
  compare_with "idem-$format" "webhook-$format"
done
