#!/usr/bin/env bash
# A daemon killed while it forwards a keyed request (contract §8.3): whether the upstream acted is
# unknown, so the key is never forwarded again on its own: the retry gets 409 until someone
# removes the record, and the store passes its integrity check.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"
# A killed owner is abandoned once its lease runs out on PostgreSQL (await_abandoned); SQLite
# takes no lease.
export IDEM_LEASE=2s

start_upstream up
start_serve --upstream "$UURL"
mkfifo "$T/hold"
bg client curl -sS --max-time 60 -X POST -H 'Idempotency-Key: cut-1' -H "X-Answer-Hold: $T/hold" \
  --data-binary '{"c":1}' "$URL/orders"
reached() { [[ $(upstream_count /orders) == 1 ]]; }
wait_until "the request reaches the upstream" reached
kill_daemon
release_fifo "$T/hold"
bg_wait client

DAEMON=again
start_serve --upstream "$UURL"
# On PostgreSQL the attempt's lease decides: it is abandoned once that has run out.
[[ -z ${_pg_schema:-} ]] || await_abandoned proxy#-#cut-1
post /orders '{"c":1}' 'Idempotency-Key: cut-1'
expect_problem 409
assert_eq "Earlier request abandoned" "$(jsonq /title <"$T/resp.body")" "title"
assert_eq idempotency_error "$(jsonq /error/type <"$T/resp.body")" "error.type"
assert_eq 1 "$(upstream_count /orders)" "calls after the retry"
assert_eq abandoned "$(record_status proxy#-#cut-1)" "record of cut-1"
integrity_ok

# Removing the record lets the retry through.
idem rm proxy#-#cut-1 >/dev/null
post /orders '{"c":1}' 'Idempotency-Key: cut-1'
expect_http 200
assert_eq 2 "$(upstream_count /orders)" "calls after rm and the retry"
stop_daemon again
