#!/usr/bin/env bash
# The ledger API (contract §7b) against a real `idem serve --ledger`, driven with curl: every row of
# the table, the 400s naming their member (one given twice too), 401 without or with a wrong
# token, the token file (created 0600, a loose or linked one refused), percent-encoded keys, GET
# equal to `idem show --json`, the metrics, a lease that runs out into abandoned, and the records
# of hooks and of the proxy out of its reach.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ledger_lib.sh"

# Nothing to serve without --config, --ledger or --socket.
capture none idem serve --listen 127.0.0.1:0
expect_rc 64
assert_idem_error
file_has "$T/none.err" "--ledger" || fail "the usage error should name --ledger"

start_ledger
# The token file: 0600, 64 hex digits.
[[ $(stat -c %a "$TOKEN_FILE") == 600 ]] || fail "token file mode $(stat -c %a "$TOKEN_FILE")"
[[ $TOKEN =~ ^[0-9a-f]{64}$ ]] || fail "token '$TOKEN'"

# 401 without a token, with a wrong one, with another scheme; nothing is claimed.
request POST /v1/claim '{"key": "k"}'
expect_problem 401
assert_header WWW-Authenticate Bearer
wrong=${TOKEN%?}0  # the token with its last digit changed
[[ ${TOKEN: -1} == 0 ]] && wrong=${TOKEN%?}1
request POST /v1/claim '{"key": "k"}' "Authorization: Bearer $wrong"
expect_problem 401
request GET /v1/records/k "" "Authorization: Basic $TOKEN"
expect_problem 401
assert_eq none "$(idem status k)" "status after refused calls"

# POST /v1/claim: 201 with attempt, token and lease.
claim k '"lease": "1m", "fingerprint": "v1"'
expect_http 201
assert_header Content-Type application/json
assert_eq 1 "$(answer_field /attempt)" "attempt"
assert_eq 60000 "$(answer_field /lease_ms)" "lease_ms"
tok=$(answer_field /attempt_token)
[[ $tok =~ ^[0-9a-f]{32}$ ]] || fail "attempt token '$tok'"
[[ $(answer_field /lease_expires_at) == 20*Z ]] || fail "lease_expires_at $(answer_field /lease_expires_at)"
assert_status k running
# 409 while running (with Retry-After), 422 with another fingerprint.
claim k '"fingerprint": "v1"'
expect_problem 409
assert_header Retry-After 1
claim k '"fingerprint": "v2"'
expect_problem 422

# POST /v1/heartbeat: 200 with the new lease end; 409 for another token, and nothing changes.
heartbeat k "$tok"
expect_http 200
assert_eq 60000 "$(answer_field /lease_ms)" "the claim's lease is renewed"
heartbeat k "$tok" '"lease": "2m"'
expect_http 200
assert_eq 120000 "$(answer_field /lease_ms)" "a heartbeat's own lease"
heartbeat k 0123456789abcdef0123456789abcdef
expect_problem 409

# POST /v1/finish: 409 for a stale token (nothing changes), 200 for the holder's.
finish k 0123456789abcdef0123456789abcdef succeeded
expect_problem 409
assert_status k running
printf 'receipt\0 42' >"$T/out.bin"
finish k "$tok" succeeded "\"stdout_b64\": \"$(base64 -w0 <"$T/out.bin")\", \"http_status\": 201"
expect_http 200
assert_eq succeeded "$(answer_field /status)" "finish answer"
assert_status k succeeded
idem show k --stdout >"$T/shown.bin"
assert_same "$T/out.bin" "$T/shown.bin"
# Finished: a claim is 200 with the record (replay it); the old token is stale now.
claim k '"fingerprint": "v1"'
expect_http 200
assert_eq succeeded "$(answer_field /record/status)" "replayed record"
answer_field /record/stdout_b64 | base64 -d >"$T/replayed.bin"
assert_same "$T/out.bin" "$T/replayed.bin"
finish k "$tok" failed
expect_problem 409
heartbeat k "$tok"
expect_problem 409

# GET /v1/records/{key}: the record as idem show --json prints it (times and all); 404.
call GET /v1/records/k
expect_http 200
idem show k --json >"$T/show.json"
assert_eq "$(jsonq --keys <"$T/show.json")" "$(jsonq --keys <"$T/resp.body")" "members of GET"
for member in /key /status /attempt /kind /fingerprint /started_at /finished_at /stdout_b64 \
  /response/status /request/lease_ms /owner/pid; do
  assert_eq "$(jsonq "$member" <"$T/show.json")" "$(answer_field "$member")" "GET $member"
done
assert_eq ledger "$(answer_field /kind)" "kind"
call GET /v1/records/nope
expect_problem 404

# A failed outcome is claimed again, as a new attempt.
claim f
tok=$(answer_field /attempt_token)
finish f "$tok" failed '"exit_code": 3'
expect_http 200
assert_eq 3 "$(idem show f --json | jsonq /exit_code)" "failed exit code"
claim f
expect_http 201
assert_eq 2 "$(answer_field /attempt)" "a failure's retry"

# Percent-encoded keys in paths; a malformed encoding is 400.
claim 'a/b c%' '"lease": 1'
expect_http 201
call GET /v1/records/a%2Fb%20c%25
expect_http 200
assert_eq 'a/b c%' "$(answer_field /key)" "decoded key"
call GET /v1/records/a%2
expect_bad_field key
call GET /v1/records/%zz
expect_bad_field key

# DELETE: 409 running without force, 204 with it; 404 after; an abandoned one without force.
claim d
call DELETE /v1/records/d
expect_problem 409
call DELETE '/v1/records/d?force=1'
expect_http 204
assert_eq none "$(idem status d)" "removed"
call DELETE /v1/records/d
expect_problem 404
call DELETE '/v1/records/k?force=maybe'
expect_bad_field force

# A lease (1s here) that runs out makes the attempt abandoned; a claim then gets 409 unless it
# says retry_abandoned, and the old token is fenced off.
claim l '"lease": "1s"'
old=$(answer_field /attempt_token)
wait_until "the lease of l runs out" status_is l abandoned
claim l
expect_problem 409
assert_eq "Earlier attempt abandoned" "$(answer_field /title)" "abandoned title"
claim l '"retry_abandoned": true'
expect_http 201
assert_eq 2 "$(answer_field /attempt)" "the retry's attempt"
new=$(answer_field /attempt_token)
heartbeat l "$old"
expect_problem 409
finish l "$old" succeeded
expect_problem 409
finish l "$new" succeeded
expect_http 200
# An abandoned record is removed without force.
claim m '"lease": 1'
wait_until "the lease of m runs out" status_is m abandoned
call DELETE /v1/records/m
expect_http 204

# Bad requests: 400 problem+json naming the member.
call POST /v1/claim 'not json'
expect_problem 400
call POST /v1/claim '{"key": 42}'
expect_bad_field key
call POST /v1/claim '{}'
expect_bad_field key
call POST /v1/claim '{"key": "x", "lease": "0.5s"}'
expect_bad_field lease
call POST /v1/claim '{"key": "x", "lease": "1ms"}'
expect_bad_field lease
call POST /v1/claim '{"key": "x", "ttl": "tomorrow"}'
expect_bad_field ttl
call POST /v1/claim '{"key": "x", "retry_abandoned": 1}'
expect_bad_field retry_abandoned
call POST /v1/claim '{"key": "x", "colour": "red"}'
expect_bad_field colour
call POST /v1/heartbeat '{"key": "x"}'
expect_bad_field attempt_token
call POST /v1/finish '{"key": "x", "attempt_token": "t", "status": "done"}'
expect_bad_field status
call POST /v1/finish '{"key": "x", "attempt_token": "t", "status": "succeeded", "stdout_b64": "***"}'
expect_bad_field stdout_b64
call POST /v1/finish '{"key": "x", "attempt_token": "t", "status": "succeeded", "exit_code": 1}'
expect_bad_field exit_code
assert_eq none "$(idem status x)" "nothing claimed by bad requests"
# A member named twice says two things (JSON parsers keep one or the other): refused, named.
call POST /v1/claim '{"key": "twice-a", "key": "twice-b"}'
expect_bad_field key
assert_eq "member 'key' is given twice" "$(answer_field /detail)" "the duplicate's problem"
call POST /v1/claim '{"key": "twice", "lease": "1m", "ttl": "1h", "lease": "2m"}'
expect_bad_field lease
call POST /v1/finish '{"key": "x", "attempt_token": "t", "status": "failed", "status": "succeeded"}'
expect_bad_field status
for k in twice-a twice-b twice; do assert_eq none "$(idem status "$k")" "$k after a duplicate member"; done
# Wrong methods: 405 with Allow.
call GET /v1/claim
expect_problem 405
assert_header Allow POST
call POST /v1/records/k
expect_problem 405
assert_header Allow "GET, HEAD, DELETE"

# The metrics count the ledger's outcomes.
get /metrics
for outcome in claimed replayed running conflict abandoned renewed finished stale unauthorized \
  bad_request found not_found removed; do
  grep -q "^idem_ledger_requests_total{outcome=\"$outcome\"} [1-9]" "$T/resp.body" ||
    fail "no idem_ledger_requests_total for $outcome: $(grep ledger "$T/resp.body")"
done
stop_daemon

# The records of the daemon's other fronts are not the ledger's: a hook's (PATH#KEY, delivered
# here for real) and the proxy's (proxy#SCOPE#KEY) can be neither claimed, read, finished nor
# removed through it (400 naming the key), so a ledger client cannot replay or end them.
printf '%s\n' '{"hooks": [{"path": "/hooks/x", "command": ["/bin/echo", "ran"],
                           "key": {"header": "X-Key"}}]}' >"$T/fronts.json"
start_ledger --config "$T/fronts.json"
post /hooks/x hello 'X-Key: k1'
expect_http 200
assert_status '/hooks/x#k1' succeeded
idem export >"$T/hook.jsonl"
grep -F '"key":"/hooks/x#k1"' "$T/hook.jsonl" | sed 's|"key":"/hooks/x#k1"|"key":"proxy#-#k1"|' >"$T/proxy.jsonl"
capture imported idem import "$T/proxy.jsonl"
expect_rc 0
assert_status 'proxy#-#k1' succeeded
for pair in '/hooks/x#k1 %2Fhooks%2Fx%23k1 hooks' 'proxy#-#k1 proxy%23-%23k1 proxy'; do
  read -r key encoded front <<<"$pair"
  claim "$key" '"retry_abandoned": true'
  expect_bad_field key
  detail=$(answer_field /detail)
  case $front in
    hooks) assert_eq "bad 'key': keys that start with '/' and hold '#' are the hooks' records" "$detail" "claim of $key" ;;
    proxy) assert_eq "bad 'key': keys that start with 'proxy#' are the proxy's records" "$detail" "claim of $key" ;;
  esac
  heartbeat "$key" 0123456789abcdef0123456789abcdef
  expect_bad_field key
  finish "$key" 0123456789abcdef0123456789abcdef failed
  expect_bad_field key
  call GET "/v1/records/$encoded"
  expect_bad_field key
  call DELETE "/v1/records/$encoded?force=1"
  expect_bad_field key
  assert_status "$key" succeeded
done
# Keys that only look alike are the ledger's: no '#' after a leading '/', or no "proxy#" prefix.
for key in /hooks/x proxy-k1 'a#/hooks' 'Proxy#-#k1'; do
  claim "$key" '"lease": "1m"'
  expect_http 201
done
post /hooks/x hello 'X-Key: k1'
expect_http 200
assert_body 'ran\n'
stop_daemon

# A token file open to others, or a symlink, is refused at start (74); a good one is kept.
chmod 640 "$TOKEN_FILE"
capture loose idem serve --ledger --listen 127.0.0.1:0
expect_rc 74
assert_idem_error
file_has "$T/loose.err" "$TOKEN_FILE" || fail "the refusal should name the token file"
chmod 600 "$TOKEN_FILE"
mv "$TOKEN_FILE" "$T/real.token"
ln -s "$T/real.token" "$TOKEN_FILE"
capture linked idem serve --ledger --listen 127.0.0.1:0
expect_rc 74
file_has "$T/linked.err" symlink || fail "the refusal should say symlink: $(cat "$T/linked.err")"
rm "$TOKEN_FILE"
mv "$T/real.token" "$TOKEN_FILE"
kept=$TOKEN
start_ledger
assert_eq "$kept" "$TOKEN" "the token survives a restart"
claim again
expect_http 201
stop_daemon

# A hook at one of the ledger's paths is refused with --ledger; beside it, hooks are served.
printf '{"hooks": [{"path": "/v1/claim", "command": ["true"], "key": {"header": "X-Id"}}]}' >"$T/clash.json"
capture clash idem serve --ledger --config "$T/clash.json" --listen 127.0.0.1:0
expect_rc 64
assert_idem_error
file_has "$T/clash.err" "/v1/claim" || fail "the refusal should name the path: $(cat "$T/clash.err")"
printf '{"hooks": [{"path": "/hooks/a", "command": ["echo", "hooked"], "key": {"header": "X-Id"}}]}' >"$T/hooks.json"
start_ledger --config "$T/hooks.json"
post /hooks/a '{}' "X-Id: 1"
expect_http 200
assert_body 'hooked\n'
claim beside
expect_http 201
stop_daemon
