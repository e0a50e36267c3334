#!/usr/bin/env bash
# A store locked by another process: a delivery is answered 503 within --busy-timeout (default
# 3s), not after the 30 s a command waits; no answer shows the store's path (the log has it);
# /healthz says 503 while the store cannot be written and 200 again once it can.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_http_lib.sh"
command -v sqlite3 >/dev/null || fail "sqlite3 is missing (scripts/deps.sh installs it)"
start_daemon "$T/serve.json"

post /hooks/x 'before' 'X-Key: before'
expect_http 200
get /healthz
expect_http 200

# Another process takes the write lock and keeps it.
mkfifo "$T/sql"
sqlite3 "$IDEM_DB" <"$T/sql" >/dev/null 2>&1 &
BG[locker]=$!
exec 7>"$T/sql"
printf '.timeout 20000\nBEGIN IMMEDIATE;\nUPDATE records SET note = note;\n' >&7
locked() {
  local r=0
  # A new key each time: one that ran before the lock was taken would only be replayed,
  # which takes no lock, so the probe would never see it.
  probes=$((${probes:-0} + 1))
  IDEM_BUSY_TIMEOUT=0 "$IDEM_BIN" run -k "probe-$probes" -- true >/dev/null 2>&1 || r=$?
  ((r == 74))
}
wait_until "the locker holds the write lock" locked

start=$(now_ms)
post /hooks/x 'while locked' 'X-Key: locked'
elapsed=$(($(now_ms) - start))
expect_problem 503
assert_header Retry-After 5
((elapsed >= 2500 && elapsed < 6000)) ||
  fail "a delivery to a locked store was answered after $elapsed ms; want about --busy-timeout 3s"
! grep -qF "$T" "$T/resp.body" || fail "the 503 shows the store's path: $(cat "$T/resp.body")"
wait_until "the refused delivery is logged" file_has "$T/daemon.err" '"key":"locked"'
grep '"key":"locked"' "$T/daemon.err" | grep -qF "$IDEM_DB" ||
  fail "the log line of the 503 does not name the store: $(grep '"key":"locked"' "$T/daemon.err")"

healthz_says() {  # healthz_says STATUS
  RESP=health get /healthz
  [[ $(RESP=health http_status) == "$1" ]]
}
wait_until "/healthz reports the locked store" healthz_says 503
RESP=health expect_problem 503
! grep -qF "$T" "$T/health.body" || fail "/healthz shows the store's path: $(cat "$T/health.body")"

# The lock goes away: /healthz and deliveries recover without a restart.
printf 'COMMIT;\n' >&7
exec 7>&-
wait_until "/healthz reports the store usable again" healthz_says 200
post /hooks/x 'while locked' 'X-Key: locked'
expect_http 200
assert_body '{"key":"locked","bytes":12}\n'

# --busy-timeout sets the bound; a bad value is a usage error.
stop_daemon
capture badbusy idem serve --config "$T/serve.json" --listen 127.0.0.1:0 --busy-timeout 5x
expect_rc 64
assert_idem_error
integrity_ok
