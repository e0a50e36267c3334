#!/usr/bin/env bash
# The PostgreSQL store under a role without CREATE: on a schema idem has not created yet it is
# refused with exit 74 and a message that says why, nothing run; once the schema's owner has
# run idem (which creates and migrates the tables) and granted SELECT, INSERT, UPDATE and DELETE,
# every command works under that role. Migrating a schema an older idem made needs CREATE too.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
[[ -n ${IDEM_TEST_PG_URL:-} ]] ||
  skip "IDEM_TEST_PG_URL is not set (scripts/test.sh starts a test cluster)"

# The test's schema, owned by the cluster's administrator, as lib.sh's are.
suffix=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
_pg_schema=idem_test_$suffix
admin() { psql -qXAt -v ON_ERROR_STOP=1 "$IDEM_TEST_PG_URL" -c "$1"; }
admin "CREATE SCHEMA $_pg_schema"
owner_url="$IDEM_TEST_PG_URL?options=-csearch_path%3D$_pg_schema"
owner() { psql -qXAt -v ON_ERROR_STOP=1 "$owner_url" -c "$1"; }

# The job's role: may log in and use the schema, may not create in it. Its password only in a
# 0600 password file (a copy of the cluster's with one line more).
app=idem_app_$suffix
password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
admin "CREATE ROLE $app LOGIN PASSWORD '$password'; GRANT USAGE ON SCHEMA $_pg_schema TO $app"
(umask 077 && { cat "$PGPASSFILE"; echo "*:*:*:$app:$password"; } >"$T/pgpass")
export PGPASSFILE=$T/pgpass
app_url="${IDEM_TEST_PG_URL/\/\/*@/\/\/$app@}?options=-csearch_path%3D$_pg_schema"
export IDEM_STORE=$app_url

# A fresh schema: the role cannot create the tables. Refused, said why, nothing ran, nothing made.
capture fresh idem run -k k -- touch "$T/ran"
expect_rc 74
assert_idem_error
file_has "$T/fresh.err" "permission denied" || fail "the refusal does not say why: $(cat "$T/fresh.err")"
[[ ! -e $T/ran ]] || fail "the command ran on a store that could not be created"
assert_eq 0 "$(admin "SELECT count(*) FROM pg_tables WHERE schemaname = '$_pg_schema'")" "tables made"

# The owner runs idem once (the first open creates and migrates), then grants the four rights.
IDEM_STORE=$owner_url idem ls >/dev/null
admin "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA $_pg_schema TO $app"

# Every command, under the role.
capture run idem run -k k -- sh -c 'echo ran >> "$1"; echo out' sh "$T/ran"
expect_rc 0
capture replay idem run -k k -- sh -c 'echo ran >> "$1"; echo out' sh "$T/ran"
expect_rc 0
assert_same "$T/run.out" "$T/replay.out"
assert_lines 1 "$T/ran"
idem run -k short --ttl 1s -- true
capture ls idem ls --keys
expect_rc 0
assert_bytes "$T/ls.out" 'short\nk\n'
assert_status k succeeded
capture show idem show k --stdout
assert_bytes "$T/show.out" 'out\n'
IDEM_TEST_CLOCK_OFFSET_MS=5000 capture gc idem gc
expect_rc 0
assert_bytes "$T/gc.out" 'removed 1\n'
capture rm idem rm k
expect_rc 0
assert_status k none
if idem begin -k scripted; then idem end -k scripted; fi
assert_status scripted succeeded

# A schema an older idem made: the migration needs CREATE too, so the role is refused as on a
# fresh one, and the schema is left as it was (the owner runs the new idem once).
version=$(owner 'SELECT version FROM idem_schema')
owner 'UPDATE idem_schema SET version = 0'
capture older idem run -k k2 -- touch "$T/ran2"
expect_rc 74
assert_idem_error
file_has "$T/older.err" "permission denied" || fail "the refusal does not say why: $(cat "$T/older.err")"
[[ ! -e $T/ran2 ]] || fail "the command ran on a store that could not be migrated"
assert_eq 0 "$(owner 'SELECT version FROM idem_schema')" "version after the refusal"
owner "UPDATE idem_schema SET version = $version"
assert_status scripted succeeded

admin "DROP OWNED BY $app; DROP ROLE $app"
