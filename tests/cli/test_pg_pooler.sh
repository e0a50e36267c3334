#!/usr/bin/env bash
# The PostgreSQL store behind PgBouncer in transaction pooling mode, with a pool smaller than the
# number of clients so that server sessions really are shared: the first opens migrate the schema,
# 32 concurrent runs of one key execute once (the rest refused with 75), the replay is byte-exact,
# --wait, begin/end, each, ls/show/rm/gc work, and `idem serve` answers a delivery and its
# duplicate. idem keeps no session state it relies on: no advisory locks, no LISTEN/NOTIFY, no
# named prepared statements.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
[[ -n ${IDEM_TEST_PG_URL:-} ]] ||
  skip "IDEM_TEST_PG_URL is not set (scripts/test.sh starts a test cluster)"
pgbouncer=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
[[ -x $pgbouncer ]] || skip "no pgbouncer (scripts/deps.sh installs it)"

# The cluster's port (scripts/pg_cluster.sh), and the set-up docs/store-and-postgresql.md gives
# for a pooler: the job's role with its schema and its lock_timeout as the role's defaults, since
# PgBouncer passes no `options` and keeps no session setting to one client (see the end). The
# role owns its schema (CREATE: the first open migrates); its password only in 0600 files.
pg_port=${IDEM_TEST_PG_URL##*:}
pg_port=${pg_port%%/*}
suffix=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
user=idem_pool_$suffix
schema=idem_test_$suffix
password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
admin() { psql -qXAt -v ON_ERROR_STOP=1 "$IDEM_TEST_PG_URL" -c "$1"; }
admin "CREATE ROLE $user LOGIN PASSWORD '$password'; CREATE SCHEMA $schema AUTHORIZATION $user;
  ALTER ROLE $user SET search_path = $schema; ALTER ROLE $user SET lock_timeout = '30s'"
sql() { psql -qXAt "$IDEM_TEST_PG_URL?options=-csearch_path%3D$schema" -c "$1"; }  # past the pooler

# PgBouncer's files in a folder of its own, 0600, owned by the user it runs as: it refuses root,
# so as root it runs as Debian's postgres user (which may pass through $T to its folder).
pgb=$T/pgbouncer
mkdir -m 0700 "$pgb"
as_user=()
if (($(id -u) == 0)); then
  chown postgres: "$pgb"
  chmod 0711 "$T"
  as_user=(setpriv --reuid=postgres --regid=postgres --clear-groups --)
fi
(umask 077 && printf '"%s" "%s"\n' "$user" "$password" >"$pgb/users.txt")
[[ $(id -u) -ne 0 ]] || chown postgres: "$pgb/users.txt"

# start_pooler: PgBouncer on a free loopback port (a port someone holds makes it exit at once:
# another is tried), as bg process `pooler`, so cleanup kills it by its pid whatever happens.
# Sets POOL_PORT and POOL_URL, and PGPASSFILE to a copy of the cluster's with the pooler's port.
start_pooler() {
  local tries
  for ((tries = 0; tries < 10; tries++)); do
    POOL_PORT=$((20000 + RANDOM % 40000))
    cat >"$pgb/pgbouncer.ini" <<EOF
[databases]
idem = host=127.0.0.1 port=$pg_port dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $POOL_PORT
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $pgb/users.txt
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
logfile = $pgb/pgbouncer.log
EOF
    chmod 0600 "$pgb/pgbouncer.ini"
    [[ $(id -u) -ne 0 ]] || chown postgres: "$pgb/pgbouncer.ini"
    bg pooler "${as_user[@]}" "$pgbouncer" "$pgb/pgbouncer.ini"
    POOL_URL="postgresql://$user@127.0.0.1:$POOL_PORT/idem"
    _pooler_up_or_gone() { psql -qXAt "$POOL_URL" -c 'SELECT 1' >/dev/null 2>&1 || bg_exited pooler; }
    wait_until "pgbouncer answers or exits" _pooler_up_or_gone
    bg_running pooler && return 0
    bg_wait pooler
  done
  fail "pgbouncer did not start: $(tail -n 5 "$pgb/pgbouncer.log" 2>/dev/null)"
}
(umask 077 && { cat "$PGPASSFILE"; echo "127.0.0.1:*:*:$user:$password"; } >"$T/pgpass")
export PGPASSFILE=$T/pgpass
start_pooler
export IDEM_STORE=$POOL_URL

# 32 processes on a database with no idem tables yet: the schema is created once, the command
# runs once (it waits on the gate until every other attempt has been refused with 75), each
# process's connection a client of a pool of 4 server connections.
N=32
mkfifo "$T/gate"
cmd=(sh -c 'echo "run $$" >> "$1"; read x < "$2"; printf "out\0\377 $$\n"; echo "err $$" >&2; exit 3'
  sh "$T/count" "$T/gate")
exited_count() {
  local i n=0
  for ((i = 0; i < N; i++)); do
    if bg_exited "a$i"; then n=$((n + 1)); fi
  done
  ((n >= $1))
}
for ((i = 0; i < N; i++)); do
  bg "a$i" idem run -k shared --replay-failures -- "${cmd[@]}"
done
wait_until "the command starts" test -s "$T/count"
wait_until "$((N - 1)) attempts are refused" exited_count $((N - 1))
release_fifo "$T/gate"
ran=0 refused=0
for ((i = 0; i < N; i++)); do
  bg_wait "a$i"
  case $rc in
    3) ran=$((ran + 1)) winner=$i ;;
    75) refused=$((refused + 1)) && assert_idem_error "a$i" ;;
    *) fail "attempt $i exited $rc: $(cat -v "$T/a$i.err")" ;;
  esac
done
assert_eq "1 $((N - 1))" "$ran $refused" "attempts that ran / were refused with 75"
assert_lines 1 "$T/count"
assert_eq 12 "$(sql 'SELECT version FROM idem_schema')" "schema version"
assert_eq 1 "$(sql 'SELECT count(*) FROM idem_records')" "records"
servers=$(sql "SELECT count(*) FROM pg_stat_activity WHERE usename = '$user'")
((servers <= 4)) || fail "$servers server connections behind a pool of 4"

# The replay, through the pooler: the same bytes on each stream, the same exit code.
capture replay idem run -k shared --replay-failures -- "${cmd[@]}"
expect_rc 3
assert_same "$T/a$winner.out" "$T/replay.out"
assert_same "$T/a$winner.err" "$T/replay.err"
assert_lines 1 "$T/count"

# --wait (it reads the row again: nothing to be notified of), begin/end and each.
wcmd=(sh -c 'echo x >> "$1"; read x < "$2"; echo waited' sh "$T/wcount" "$T/gate")
bg holder idem run -k waited -- "${wcmd[@]}"
wait_until "the holder's command starts" test -s "$T/wcount"
bg waiter idem run -v -k waited --wait 60s -- "${wcmd[@]}"
wait_until "the waiter says it waits" file_has "$T/waiter.err" "idem: waiting"
release_fifo "$T/gate"
bg_wait holder
expect_rc 0
bg_wait waiter
expect_rc 0
assert_same "$T/holder.out" "$T/waiter.out"
assert_lines 1 "$T/wcount"
if idem begin -k scripted; then idem end -k scripted; fi
assert_status scripted succeeded
printf '{"id":"m1"}\n{"id":"m2"}\n{"id":"m1"}\n' >"$T/feed.jsonl"
capture each idem each --key-field /id --jobs 2 -- sh -c 'cat >> "$1"' sh "$T/handled" <"$T/feed.jsonl"
expect_rc 0
assert_lines 2 "$T/handled"
for key in waited scripted m1 m2; do idem rm "$key" >/dev/null; done

# Inspection and cleaning.
idem run -k short --ttl 1s -- echo short >/dev/null
capture ls idem ls --keys
expect_rc 0
assert_bytes "$T/ls.out" 'short\nshared\n'
capture show idem show shared --json
expect_rc 0
assert_eq failed "$(jsonq /status <"$T/show.out")" "status in show --json"
assert_eq 3 "$(jsonq /exit_code <"$T/show.out")" "exit code in show --json"
capture show-out idem show shared --stdout
assert_same "$T/a$winner.out" "$T/show-out.out"
IDEM_TEST_CLOCK_OFFSET_MS=5000 capture gc idem gc
expect_rc 0
assert_bytes "$T/gc.out" 'removed 1\n'
capture rm idem rm shared
expect_rc 0
assert_eq 0 "$(sql 'SELECT count(*) FROM idem_records')" "records after gc and rm"

# The daemon against the pooler: a delivery runs its handler, the duplicate is the stored answer.
cat >"$T/serve.json" <<EOF
{"hooks": [{"path": "/hooks/p", "command": ["sh", "-c", "cat >> \"\$1\"; echo \" ran \$IDEM_KEY\"", "sh", "$T/deliveries"],
            "key": {"header": "X-Key"}}]}
EOF
start_daemon "$T/serve.json"
request POST /hooks/p 'first body' 'X-Key: d1'
assert_eq 200 "$(<"$T/resp.status")" "status of the delivery"
assert_bytes "$T/resp.body" ' ran d1\n'
request POST /hooks/p 'first body' 'X-Key: d1'
assert_eq 200 "$(<"$T/resp.status")" "status of the duplicate"
assert_bytes "$T/resp.body" ' ran d1\n'
grep -qix 'idempotent-replayed: true' "$T/resp.headers" || fail "the duplicate is not a replay"
assert_bytes "$T/deliveries" 'first body'
stop_daemon
assert_eq succeeded "$(idem status '/hooks/p#d1')" "status of the delivery's record"

# A claim waits for a row lock no longer than its busy timeout behind the pooler, with no default
# on the role and another client's long setting left on a server connection: its transaction
# carries its own lock_timeout (SET LOCAL with its BEGIN), whichever server connection it gets.
idem run -k held -- false >/dev/null || true  # failed: the next attempt claims it again
admin "ALTER ROLE $user RESET lock_timeout"
IDEM_BUSY_TIMEOUT=10m idem ls >/dev/null  # leaves 10 minutes on one server connection's session
mkfifo "$T/locker.sql"
bg locker psql -qXAt "$IDEM_TEST_PG_URL?options=-csearch_path%3D$schema" -f "$T/locker.sql"
exec 8>"$T/locker.sql"
printf "BEGIN;\nSELECT key FROM idem_records WHERE key = 'held' FOR UPDATE;\n\\! touch %s\n" \
  "$T/locked" >&8
wait_until "the locker holds the row" test -e "$T/locked"
for i in 1 2 3; do
  capture "lock$i" env IDEM_BUSY_TIMEOUT=1s "$IDEM_BIN" run -k held -- false
  expect_rc 74
  file_has "$T/lock$i.err" "lock timeout" || fail "unexpected error: $(cat "$T/lock$i.err")"
done
exec 8>&-
bg_wait locker
admin "ALTER ROLE $user SET lock_timeout = '30s'"

# What PgBouncer before 1.20 (Debian 12 has 1.18) does not carry: libpq's `options` (a
# search_path, a setting) is refused as an unsupported startup parameter, so the schema is set on
# the role. Later versions parse it and pass the parameters they track.
version=$("$pgbouncer" --version | awk 'NR == 1 { print $2 }')
if [[ $(printf '%s\n1.20\n' "$version" | sort -V | head -n 1) != 1.20 ]]; then
  capture options env IDEM_STORE="$POOL_URL?options=-csearch_path%3Didem" "$IDEM_BIN" ls
  expect_rc 74
  assert_idem_error options
  file_has "$T/options.err" "unsupported startup parameter" ||
    fail "unexpected error for options: $(cat "$T/options.err")"
fi

kill -TERM "$(bg_pid pooler)"
bg_wait pooler
admin "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE; DROP ROLE $user"
