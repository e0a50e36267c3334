# shellcheck shell=bash
# For tests that need a large store quickly: fill_store fills one with the sqlite3 CLI (or psql) in
# a single transaction (seconds for 100k records, where `idem run` would take minutes). Source after lib.sh.

# fill_store DB N [PREFIX]: creates DB with idem (its schema, migrated) and adds N records
# PREFIX0000000.. started one second apart: odd ones finished and expired long ago, even ones
# finished and live until 2096, and i % 100 == 98 running under an owner on another host (alive
# as far as idem can tell). Prints nothing. On PostgreSQL (lib.sh's IDEM_TEST_BACKEND) DB must be
# $IDEM_DB, which stands for the store under test, filled with psql the same way.
fill_store() {
  local db=$1 n=$2 prefix=${3:-rec-}
  if [[ -n ${IDEM_STORE:-} ]]; then
    [[ $db == "$IDEM_DB" ]] || fail "fill_store: on PostgreSQL only the store under test"
    fill_pg_store "$n" "$prefix"
    return
  fi
  command -v sqlite3 >/dev/null || skip "needs the sqlite3 CLI"
  "$IDEM_BIN" --db "$db" ls >/dev/null
  sqlite3 "$db" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $n)
INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                     owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                     exit_code, output_bytes, request)
SELECT printf('$prefix%07d', i), printf('%064d', i), 'run',
       CASE WHEN i % 100 = 98 THEN 'running' ELSE 'succeeded' END, 1, 'elsewhere.invalid',
       'boot', 1, 1, 1700000000000 + i * 1000,
       CASE WHEN i % 100 = 98 THEN NULL ELSE 1700000000000 + i * 1000 + 5 END, 86400000,
       CASE WHEN i % 100 = 98 THEN NULL
            WHEN i % 2 = 1 THEN 1700000000000 + i * 1000 + 5 + 3600000
            ELSE 4000000000000 END,
       CASE WHEN i % 100 = 98 THEN NULL ELSE 0 END,
       6, '{"argv":["true"],"cwd":"/"}'
FROM n;
INSERT INTO outputs (key, attempt, output)
  SELECT key, attempt, x'01010600000068656c6c6f0a' FROM records
  WHERE substr(key, 1, length('$prefix')) = '$prefix';
PRAGMA wal_checkpoint(TRUNCATE);
SQL
}

fill_pg_store() {
  local n=$1 prefix=$2
  "$IDEM_BIN" ls >/dev/null
  psql -qX -v ON_ERROR_STOP=1 "$IDEM_STORE" >/dev/null <<SQL
INSERT INTO idem_records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                          owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                          exit_code, output, output_bytes, request)
SELECT '$prefix' || lpad(i::text, 7, '0'), lpad(i::text, 64, '0'), 'run',
       CASE WHEN i % 100 = 98 THEN 'running' ELSE 'succeeded' END, 1, 'elsewhere.invalid',
       'boot', 1, 1, 1700000000000 + i * 1000,
       CASE WHEN i % 100 = 98 THEN NULL ELSE 1700000000000 + i * 1000 + 5 END, 86400000,
       CASE WHEN i % 100 = 98 THEN NULL
            WHEN i % 2 = 1 THEN 1700000000000 + i * 1000 + 5 + 3600000
            ELSE 4000000000000 END,
       CASE WHEN i % 100 = 98 THEN NULL ELSE 0 END,
       '\\x01010600000068656c6c6f0a'::bytea, 6, '{"argv":["true"],"cwd":"/"}'
FROM generate_series(0, $n - 1) AS i;
ANALYZE idem_records;
SQL
}

# store_count WHERE: how many records of the store under test match the SQL condition WHERE.
store_count() {
  if [[ -n ${IDEM_STORE:-} ]]; then
    psql -qXAt -v ON_ERROR_STOP=1 "$IDEM_STORE" -c "SELECT count(*) FROM idem_records WHERE $1"
  else
    sqlite3 "$IDEM_DB" "SELECT count(*) FROM records WHERE $1"
  fi
}
