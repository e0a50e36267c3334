#!/usr/bin/env bash
# The PostgreSQL store (on the test cluster, $IDEM_TEST_PG_URL): concurrent first runs on a new
# database create the schema once and run the command once; an unreachable server, a refused
# login or a newer schema is exit 74 with nothing run and no password shown; the static idem
# hands a PostgreSQL store to idem-pg.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
[[ -n ${IDEM_TEST_PG_URL:-} ]] ||
  skip "IDEM_TEST_PG_URL is not set (scripts/test.sh starts a test cluster)"

# A schema of its own, dropped when the test ends well.
_pg_schema=idem_test_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
psql -qX "$IDEM_TEST_PG_URL" -c "CREATE SCHEMA $_pg_schema"
url="$IDEM_TEST_PG_URL?options=-csearch_path%3D$_pg_schema"
export IDEM_STORE=$url
sql() { psql -qAtX "$url" -c "$1"; }

# 32 processes start at once on a schema with no idem tables yet (cron on several hosts): the
# schema is created once, the command runs once, the others are refused as running (75) or
# replay it (0).
N=32
for ((i = 0; i < N; i++)); do
  bg "f$i" "$IDEM_BIN" run -k fresh -- sh -c 'echo x >> "$1"' sh "$T/fresh.count"
done
for ((i = 0; i < N; i++)); do
  bg_wait "f$i"
  [[ $rc == 0 || $rc == 75 ]] || fail "first run $i exited $rc: $(cat -v "$T/f$i.err")"
done
assert_lines 1 "$T/fresh.count"
assert_eq 12 "$(sql 'SELECT version FROM idem_schema')" "schema version"
assert_eq succeeded "$(idem status fresh)" "status of the key"

# The static idem has no libpq: it runs idem-pg for a PostgreSQL store, with the same arguments.
capture replay idem run -k fresh -- sh -c 'echo x >> "$1"' sh "$T/fresh.count"
expect_rc 0
assert_lines 1 "$T/fresh.count"

# A closed port: 74 at once, nothing runs, the store named without its password.
closed="postgresql://idem:s3cret@127.0.0.1:1/postgres"
capture closed env IDEM_STORE="$closed" "$IDEM_BIN" run -k k -- touch "$T/ran"
expect_rc 74
assert_idem_error
file_has "$T/closed.err" "127.0.0.1" || fail "the error does not name the server: $(cat "$T/closed.err")"
! file_has "$T/closed.err" s3cret || fail "the password is shown: $(cat "$T/closed.err")"
[[ ! -e $T/ran ]] || fail "a command ran with the server unreachable"

# A wrong password in the URL (it wins over PGPASSFILE): refused, 74, never shown.
port=${IDEM_TEST_PG_URL##*:}
port=${port%%/*}
capture login env IDEM_STORE="postgresql://idem:wr0ng-pw@127.0.0.1:$port/postgres" "$IDEM_BIN" ls
expect_rc 74
assert_idem_error
! file_has "$T/login.err" wr0ng-pw || fail "the password is shown: $(cat "$T/login.err")"

# A schema newer than this idem: refused, nothing runs, nothing changed.
version=$(sql 'SELECT version FROM idem_schema')
sql 'UPDATE idem_schema SET version = 99'
capture newer idem run -k other -- touch "$T/ran"
expect_rc 74
file_has "$T/newer.err" "newer than this idem" || fail "unclear refusal: $(cat "$T/newer.err")"
[[ ! -e $T/ran ]] || fail "a command ran on a newer schema"
sql "UPDATE idem_schema SET version = $version"

# gc and rm on the server: expired records go, running ones stay.
idem run -k short --ttl 1s -- true
IDEM_TEST_CLOCK_OFFSET_MS=5000 capture gc idem gc
expect_rc 0
assert_bytes "$T/gc.out" 'removed 1\n'
capture rm idem rm fresh
expect_rc 0
assert_eq none "$(idem status fresh)" "status after rm"

