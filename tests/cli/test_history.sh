#!/usr/bin/env bash
# The attempt history (idem log, show's attempts, the ledger's /attempts): a failure then a
# success are two attempts; a kill -9 is an abandoned one; a hook delivery, a proxied request
# and a ledger client record their trigger and HTTP status; replays are counted; ls filters by
# front and time; rm and gc take the history with the record.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ledger_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"
export IDEM_LEASE=2s  # a killed owner is abandoned once its lease runs out on PostgreSQL

# --- A failure, then a success: two attempts, newest last --------------------------------------
cmd=(sh -c 'test -e "$1"' sh "$T/ok")
capture first idem run -k job -- "${cmd[@]}"
expect_rc 1
touch "$T/ok"
capture second idem run -k job -- "${cmd[@]}"
expect_rc 0
capture log idem log job
expect_rc 0
assert_lines 3 "$T/log.out"
grep -Eq '^1 +run +failed +exit +1 ' "$T/log.out" || fail "attempt 1: $(cat "$T/log.out")"
grep -Eq '^2 +run +succeeded +exit +0 ' "$T/log.out" || fail "attempt 2: $(cat "$T/log.out")"
idem log job --json >"$T/log.json"
assert_eq $'1\t2' "$(jsonq /attempts/0/number /attempts/1/number <"$T/log.json")" "numbers"
assert_eq "failed" "$(jsonq /attempts/0/outcome <"$T/log.json")" "first outcome"
assert_eq "1" "$(jsonq /attempts/0/exit_code <"$T/log.json")" "first exit code"
[[ $(jsonq /attempts/1/owner/pid <"$T/log.json") =~ ^[1-9][0-9]*$ ]] || fail "owner pid"
# show lists them too, and show --json carries them.
capture show idem show job
grep -q '^attempts:' "$T/show.out" || fail "show lists no attempts: $(cat "$T/show.out")"
grep -Eq '^  2 +run +succeeded' "$T/show.out" || fail "show's attempts: $(cat "$T/show.out")"
assert_eq 2 "$(idem show job --json | jsonq /attempts/1/number)" "show --json attempts"

# --- Replays are counted, the replay itself unchanged -----------------------------------------
for _ in 1 2 3; do
  capture replay idem run -k job -- "${cmd[@]}"
  expect_rc 0
done
assert_eq 3 "$(idem show job --json | jsonq /replays)" "replays of job"
[[ $(idem log job --json | jsonq /last_replay_at) == 20* ]] || fail "no last replay time"
idem log job >"$T/log-after-replays"
assert_lines 3 "$T/log-after-replays"  # replays are no attempts

# A missing key: exit codes as show's.
capture missing idem log nope
expect_rc 1
assert_idem_error
capture bad idem log ''
expect_rc 64

# --- kill -9: the attempt is abandoned, its owner died ----------------------------------------
hang=(sh -c '[ "$IDEM_ATTEMPT" = 1 ] || exit 0; echo $$ > "$1"; exec sleep 1000' sh "$T/hang.pid")
track_pid_file "$T/hang.pid"
bg owner idem run -k killed -- "${hang[@]}"
wait_until "the command starts" test -s "$T/hang.pid"
kill -KILL "$(bg_pid owner)"
bg_wait owner
expect_rc 137
wait_until "the command is gone" pid_gone "$(cat "$T/hang.pid")"
await_abandoned killed
want_reason="owner died"
[[ ${IDEM_TEST_BACKEND:-} == postgres ]] && want_reason="lease ran out"
idem log killed >"$T/killed.log"
grep -Eq "^1 +run +abandoned +$want_reason " "$T/killed.log" || fail "killed, shown: $(cat "$T/killed.log")"
# The next claim records it so, and a retry is attempt 2.
capture refused idem run -k killed -- "${hang[@]}"
expect_rc 69
capture retry idem run -k killed --retry-abandoned -- "${hang[@]}"
expect_rc 0
idem log killed --json >"$T/killed.json"
assert_eq "abandoned" "$(jsonq /attempts/0/outcome <"$T/killed.json")" "killed outcome"
assert_eq "$want_reason" "$(jsonq /attempts/0/reason <"$T/killed.json")" "killed reason"
assert_eq "succeeded" "$(jsonq /attempts/1/outcome <"$T/killed.json")" "retry outcome"

# --- ls by front and time -----------------------------------------------------------------------
printf '{"id":"m1"}\n' | idem each --key-field /id -- true >/dev/null 2>&1
assert_eq m1 "$(idem ls --front each --keys)" "ls --front each"
assert_eq "" "$(idem ls --front hook --keys)" "ls --front hook before any hook"
assert_eq 3 "$(idem ls --since 1h --keys | wc -l)" "ls --since 1h"
assert_eq 0 "$(idem ls --until 1h --keys | wc -l)" "ls --until 1h"
assert_eq 3 "$(idem ls --since 2000-01-01T00:00:00Z --until 2999-01-01T00:00:00+02:00 --keys | wc -l)" "RFC 3339 bounds"
capture badfront idem ls --front cron
expect_rc 64
assert_idem_error
capture badsince idem ls --since yesterday
expect_rc 64
assert_idem_error

# --- A hook delivery and a proxied request: trigger and HTTP status -----------------------------
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
[ -e "$IDEM_HEADER_X_OK" ] || exit 3
printf 'done\n'
EOF
chmod +x "$T/handler.sh"
start_upstream up
cat >"$T/serve.json" <<EOF
{"hooks": [{"path": "/hooks/h", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}}],
 "proxy": {"upstream": "$UURL"}}
EOF
start_daemon "$T/serve.json" --ledger
TOKEN=$(<"$TOKEN_FILE")
post /hooks/h 'body' 'X-Key: d1' "X-Ok: $T/hook-ok"
expect_http 500
touch "$T/hook-ok"
post /hooks/h 'body' 'X-Key: d1' "X-Ok: $T/hook-ok"
expect_http 200
post /hooks/h 'body' 'X-Key: d1' "X-Ok: $T/hook-ok"  # a duplicate: replayed
expect_http 200
hook_key=$(idem ls --front hook --keys)
[[ -n $hook_key ]] || fail "no hook record"
idem log "$hook_key" --json >"$T/hook.json"
assert_eq $'hook\thook' "$(jsonq /attempts/0/trigger /attempts/1/trigger <"$T/hook.json")" "hook triggers"
assert_eq $'500\t200' "$(jsonq /attempts/0/http_status /attempts/1/http_status <"$T/hook.json")" "hook statuses"
RESP=p post /orders '{"amount":1}' 'Idempotency-Key: order-1' 'X-Answer-Status: 201'
RESP=p expect_http 201
proxy_key=$(idem ls --front proxy --keys)
[[ -n $proxy_key ]] || fail "no proxy record"
idem log "$proxy_key" --json >"$T/proxy.json"
assert_eq proxy "$(jsonq /attempts/0/trigger <"$T/proxy.json")" "proxy trigger"
assert_eq 201 "$(jsonq /attempts/0/http_status <"$T/proxy.json")" "proxy status"
# The ledger: a client's attempt, and every key's history at /v1/records/{key}/attempts.
claim lk '"lease": 30'
expect_http 201
call GET /v1/records/lk/attempts
expect_http 200
assert_eq ledger "$(answer_field /attempts/0/trigger)" "ledger trigger"
assert_eq running "$(answer_field /attempts/0/outcome)" "the client's attempt"
call GET /v1/records/lk
expect_http 200
assert_eq 1 "$(answer_field /attempts/0/number)" "GET of the record carries its attempts"
call GET /v1/records/nope/attempts
expect_http 404
request GET /v1/records/lk/attempts ""
expect_http 401
# The daemon's replay counts are written once it stops, if not before.
stop_daemon
assert_eq 1 "$(idem show "$hook_key" --json | jsonq /replays)" "the hook's replays"

# --- A long history: the newest kept (IDEM_KEEP_ATTEMPTS), the older counted; show bounded ----
for _ in $(seq 1 30); do IDEM_KEEP_ATTEMPTS=25 idem run -k many -- false 2>/dev/null || true; done
idem log many --json >"$T/many.json"
assert_eq 6 "$(jsonq /attempts/0/number <"$T/many.json")" "the oldest attempt kept"
assert_eq 30 "$(jsonq /attempts/24/number <"$T/many.json")" "the newest attempt kept"
idem show many --json >"$T/many.show"
assert_eq 5 "$(jsonq /attempts_not_kept <"$T/many.show")" "attempts no longer kept"
assert_eq 10 "$(jsonq /earlier_attempts <"$T/many.show")" "attempts before the 20 shown"
assert_eq 11 "$(jsonq /attempts/0/number <"$T/many.show")" "the first of the 20 shown"
idem show many --attempts all --json >"$T/many.all"
assert_eq 6 "$(jsonq /attempts/0/number <"$T/many.all")" "--attempts all: every one kept"
idem show many --attempts 3 >"$T/many.txt"
file_has "$T/many.txt" "attempts: the last 3 of 30 (5 older no longer kept); --attempts all lists every one kept" ||
  fail "show's attempts line: $(grep attempts: "$T/many.txt")"
assert_eq 3 "$(grep -cE '^  [0-9]+  run' "$T/many.txt")" "rows of --attempts 3"
capture badattempts idem show many --attempts 0
expect_rc 64
assert_idem_error badattempts
capture badkeep env IDEM_KEEP_ATTEMPTS=lots "$IDEM_BIN" run -k many -- false
expect_rc 64
file_has "$T/badkeep.err" "IDEM_KEEP_ATTEMPTS: 'lots' is not a count of attempts to keep" ||
  fail "bad IDEM_KEEP_ATTEMPTS: $(cat "$T/badkeep.err")"
capture badserve idem serve --ledger --keep-attempts 0 --listen 127.0.0.1:0
expect_rc 64
file_has "$T/badserve.err" "--keep-attempts: '0' is not a count of attempts to keep" ||
  fail "bad --keep-attempts: $(cat "$T/badserve.err")"

# --- rm and gc take the history with the record --------------------------------------------------
idem rm job >/dev/null
capture gone idem log job
expect_rc 1
idem run -k job -- "${cmd[@]}" >/dev/null
assert_eq 1 "$(idem log job --json | jsonq /attempts/0/number)" "a removed key's history starts again"
idem run -k short --ttl 1s -- false >/dev/null 2>&1 || true
idem run -k short --ttl 1s -- false >/dev/null 2>&1 || true
assert_eq 2 "$(idem log short --json | jsonq /attempts/1/number)" "two attempts before gc"
IDEM_TEST_CLOCK_OFFSET_MS=5000 idem gc >/dev/null
capture collected idem log short
expect_rc 1
idem run -k short -- true >/dev/null
assert_eq 1 "$(idem log short --json | jsonq /attempts/0/number)" "a collected key's history starts again"
integrity_ok
