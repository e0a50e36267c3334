#!/usr/bin/env bash
# Leases on PostgreSQL (contract §1, §8.6), as one host sees them: a claim of run, each and serve
# carries the lease --lease asks for, which idem renews while the command runs, so a command that
# runs for several leases keeps its key and records its outcome; the lease ends with the attempt.
# (Other hosts, vanished and paused owners: test_pg_hosts.sh; lost connections: test_pg_faults.sh.)
export IDEM_TEST_BACKEND=postgres  # lib.sh: a fresh schema of its own, skipped without a cluster
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
url=$IDEM_STORE
unset IDEM_LEASE
sql() { psql -qAtX "$url" -c "$1"; }
lease_of() { sql "SELECT coalesce(lease_expires, 0) FROM idem_records WHERE key = '$1'"; }

# The lease of a running key has moved on past the first one it was given: renewals went through.
renewed_past() {  # renewed_past KEY FIRST_LEASE
  local now
  now=$(lease_of "$1")
  [[ -n $now && $now -gt $(($2 + 500)) ]]
}

# 1. run: a 1 s lease, a command that runs until told; renewals move the lease on; the outcome
# is recorded and the lease ends with it.
bg long idem run -k long --lease 1s -- sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done; echo done' sh "$T/go"
has_lease() { [[ $(lease_of long) -gt 0 ]]; }
wait_until "the claim of 'long' holds a lease" has_lease
first=$(lease_of long)
wait_until "the lease of 'long' is renewed" renewed_past long "$first"
assert_eq running "$(idem status long)" "status while renewed"
touch "$T/go"
bg_wait long
expect_rc 0
assert_bytes "$T/long.out" 'done\n'
assert_eq succeeded "$(idem status long)" "status after the run"
assert_eq 0 "$(lease_of long)" "lease of a finished attempt"

# On SQLite --lease is accepted and nothing is leased (owners there are all on one host).
capture sqlite env -u IDEM_STORE IDEM_DB="$T/s.db" "$IDEM_BIN" run -k s --lease 1s -- true
expect_rc 0
[[ $(sqlite3 "$T/s.db" "SELECT coalesce(lease_expires, 0) FROM records WHERE key = 's'") == 0 ]] ||
  fail "a SQLite claim carries a lease"

# 2. each: the same for a message's handler.
rm -f "$T/go"
printf '{"id":"m1"}\n' >"$T/messages"
# (A background job's stdin is /dev/null unless the job itself redirects it.)
bg each sh -c 'exec "$@" <"$0"' "$T/messages" "$IDEM_BIN" each --key-field /id --lease 1s -- \
  sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done; cat' sh "$T/go"
has_each_lease() { [[ $(lease_of m1) -gt 0 ]]; }
wait_until "the claim of 'm1' holds a lease" has_each_lease
first=$(lease_of m1)
wait_until "the lease of 'm1' is renewed" renewed_past m1 "$first"
touch "$T/go"
bg_wait each
expect_rc 0
assert_eq succeeded "$(idem status m1)" "status of the message"

# 3. serve: a delivery's handler that runs for several leases; answered 200, recorded.
rm -f "$T/go"
cat >"$T/handler" <<SH
#!/bin/sh
while [ ! -e "$T/go" ]; do sleep 0.05; done
echo handled
SH
chmod +x "$T/handler"
printf '{"hooks": [{"path": "/hooks/slow", "command": ["%s"], "key": {"header": "X-Key"}}]}\n' \
  "$T/handler" >"$T/serve.json"
start_daemon "$T/serve.json" --lease 1s
RESP=slow bg delivery post /hooks/slow 'body' 'X-Key: d1'
has_delivery_lease() { [[ $(lease_of '/hooks/slow#d1') -gt 0 ]]; }
wait_until "the delivery's claim holds a lease" has_delivery_lease
first=$(lease_of '/hooks/slow#d1')
wait_until "the delivery's lease is renewed" renewed_past '/hooks/slow#d1' "$first"
touch "$T/go"
bg_wait delivery
expect_rc 0
RESP=slow expect_http 200
assert_eq succeeded "$(idem status '/hooks/slow#d1')" "status of the delivery"
stop_daemon

