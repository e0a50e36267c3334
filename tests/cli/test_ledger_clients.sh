#!/usr/bin/env bash
# The example clients of the ledger API (examples/ledger_client.py and .sh) against a real
# `idem serve --ledger --socket`: a command runs once per key and its duplicates get the stored
# stdout; a client killed (kill -9) without finishing leaves its key abandoned once its lease
# runs out; a client paused (SIGSTOP) past its lease is fenced off: another claims the key with
# retry_abandoned and finishes it, then the paused one's heartbeat and finish get 409, and the
# record keeps the new attempt's outcome.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ledger_lib.sh"
command -v python3 >/dev/null || fail "python3 is missing (scripts/deps.sh installs it)"
command -v jq >/dev/null || fail "jq is missing (scripts/deps.sh installs it)"
root=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/.." && pwd)
py_client=$root/examples/ledger_client.py
sh_client=$root/examples/ledger_client.sh
# The interpreter itself, so that the pid bg records is the client's (not a wrapper's).
python=$(python3 -c 'import sys; print(sys.executable)')
sock=$T/idem.sock

start_ledger --socket "$sock"
py() { "$python" "$py_client" --url "$URL" --token-file "$TOKEN_FILE" "$@"; }

# The Python client: runs once, a duplicate replays the stored stdout without running again.
cat >"$T/work.sh" <<'EOF'
echo run >>"$RUNS"
printf 'charged %s\n' "$1"
EOF
export RUNS=$T/runs
capture py1 py --key py-1 -- sh "$T/work.sh" 42
expect_rc 0
assert_bytes "$T/py1.out" 'charged 42\n'
capture py2 py --key py-1 -- sh "$T/work.sh" 42
expect_rc 0
assert_bytes "$T/py2.out" 'charged 42\n'
assert_lines 1 "$RUNS"
assert_status py-1 succeeded
# Over the socket, no token; a failure is recorded with its exit code and runs again.
capture py3 "$python" "$py_client" --socket "$sock" --key py-2 -- sh -c 'exit 3'
expect_rc 3
assert_eq 3 "$(idem show py-2 --json | jsonq /exit_code)" "recorded exit code"
assert_status py-2 failed
# Another command under the same key: the fingerprint differs, 65.
capture py4 py --key py-1 -- true
expect_rc 65

# The shell client: the same.
shc() { IDEM_URL=$URL IDEM_TOKEN_FILE=$TOKEN_FILE IDEM_LEASE=3s sh "$sh_client" "$@"; }
capture sh1 shc sh-1 sh "$T/work.sh" 7
expect_rc 0
assert_bytes "$T/sh1.out" 'charged 7\n'
capture sh2 shc sh-1 sh "$T/work.sh" 7
expect_rc 0
assert_bytes "$T/sh2.out" 'charged 7\n'
assert_lines 2 "$RUNS"
capture sh3 shc sh-2 sh -c 'exit 4'
expect_rc 4
assert_status sh-2 failed

# blocked_client NAME KEY [ARG...]: a Python client whose command writes its pid to
# $T/NAME.child and blocks reading $T/NAME.fifo; returns once the command runs (claimed).
blocked_client() {
  local name=$1 key=$2
  shift 2
  mkfifo "$T/$name.fifo"
  track_pid_file "$T/$name.child"
  bg "$name" "$python" "$py_client" --url "$URL" --token-file "$TOKEN_FILE" --key "$key" "$@" \
    -- sh -c 'echo $$ >"$1.child"; read x <"$1.fifo"; echo old' sh "$T/$name"
  _child_started() { [[ -s $T/$name.child ]] || bg_exited "$name"; }
  wait_until "the command of '$name' starts" _child_started
  bg_running "$name" || fail "client '$name' ended: $(cat "$T/$name.err")"
  assert_status "$key" running
}

# A client that dies without finishing: its key is abandoned once its lease (1s) runs out.
blocked_client dead k-dead --lease 1s
kill -KILL "$(bg_pid dead)"
bg_wait dead
expect_rc 137
wait_until "the dead client's lease runs out" status_is k-dead abandoned
# Claimed as the client claims (its fingerprint is its command): 409 abandoned.
call POST /v1/claim "$(jq -nc --arg f "$(idem show k-dead --json | jsonq /request/fingerprint)" \
  '{key: "k-dead", fingerprint: $f}')"
expect_problem 409
assert_eq "Earlier attempt abandoned" "$(answer_field /title)" "claim after the lease ran out"
call GET /v1/records/k-dead
assert_eq abandoned "$(answer_field /status)" "GET after the lease ran out"
release_fifo "$T/dead.fifo"

# A client paused past its lease is fenced off.
blocked_client paused k-paused --lease 1s
fingerprint=$(idem show k-paused --json | jsonq /request/fingerprint)
kill -STOP "$(bg_pid paused)"
wait_until "the paused client's lease runs out" status_is k-paused abandoned
body=$(jq -nc --arg f "$fingerprint" '{key: "k-paused", fingerprint: $f}')
call POST /v1/claim "$body"
expect_problem 409
call POST /v1/claim "$(jq -c '. + {retry_abandoned: true}' <<<"$body")"
expect_http 201
assert_eq 2 "$(answer_field /attempt)" "the new attempt"
new=$(answer_field /attempt_token)
finish k-paused "$new" succeeded "\"stdout_b64\": \"$(printf new | base64 -w0)\""
expect_http 200
heartbeats_refused=$(log_count "$T/daemon.err" '"path":"/v1/heartbeat","remote":"127.0.0.1","status":409')
kill -CONT "$(bg_pid paused)"
# Its next heartbeat is refused, so it stops its command; its finish is refused too (75).
bg_wait paused
expect_rc 75
file_has "$T/paused.err" "heartbeat refused" || fail "client stderr: $(cat "$T/paused.err")"
file_has "$T/paused.err" "finish refused" || fail "client stderr: $(cat "$T/paused.err")"
(($(log_count "$T/daemon.err" '"path":"/v1/heartbeat","remote":"127.0.0.1","status":409') > heartbeats_refused)) ||
  fail "no refused heartbeat in the daemon's log"
file_has "$T/daemon.err" '"key":"k-paused","method":"POST","outcome":"stale","path":"/v1/finish"' ||
  fail "no refused finish in the daemon's log"
call GET /v1/records/k-paused
assert_eq succeeded "$(answer_field /status)" "status after the fenced finish"
assert_eq 2 "$(answer_field /attempt)" "attempt after the fenced finish"
assert_eq new "$(idem show k-paused --stdout)" "the new attempt's outcome stands"
stop_daemon
