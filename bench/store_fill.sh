# shellcheck shell=bash
# The million-record store of bench/gc_scale.sh, compare.sh (its scale rows) and serial.sh, filled by the sqlite3 CLI in
# the schema of the idem under test ($idem_bin).

# outputs_sql DB: the SQL that gives the filled records their stored output ("hello\n"): a row of
# `outputs` each from schema 6, the record's own column before (an older idem being measured).
outputs_sql() {
  if [[ $(sqlite3 "$1" "SELECT count(*) FROM sqlite_master WHERE name = 'outputs'") == 1 ]]; then
    echo "INSERT INTO outputs (key, attempt, output)"
    echo "  SELECT key, attempt, x'01010600000068656c6c6f0a' FROM records;"
  else
    echo "UPDATE records SET output = x'01010600000068656c6c6f0a';"
  fi
}

# make_store PATH N: a store of N records created by the idem under test (its schema), filled by
# sqlite3. Record i started at T0 + i s; odd ones expired an hour after they finished (long ago),
# even ones expire in 2096; i % 1000 == 998 are running (owner on another host: alive).
make_store() {
  "$idem_bin" --db "$1" ls >/dev/null
  sqlite3 "$1" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $2)
INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                     owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                     exit_code, output_bytes, request)
SELECT printf('bench-%07d', i), printf('%064d', i), 'run',
       CASE WHEN i % 1000 = 998 THEN 'running' ELSE 'succeeded' END, 1, 'elsewhere', 'boot', 1, 1,
       1700000000000 + i * 1000,
       CASE WHEN i % 1000 = 998 THEN NULL ELSE 1700000000000 + i * 1000 + 5 END, 86400000,
       CASE WHEN i % 1000 = 998 THEN NULL
            WHEN i % 2 = 1 THEN 1700000000000 + i * 1000 + 5 + 3600000
            ELSE 4000000000000 END,
       CASE WHEN i % 1000 = 998 THEN NULL ELSE 0 END,
       6, '{"argv":["true"],"cwd":"/"}'
FROM n;
$(outputs_sql "$1")
PRAGMA wal_checkpoint(TRUNCATE);
SQL
  # One open by idem before timing anything (an older store is migrated here).
  "$idem_bin" --db "$1" ls --limit 1 >/dev/null
  # The fill's writes on disk before anything is timed: sqlite3 wrote them unsynced, and the
  # kernel's writeback of those hundreds of MiB would otherwise share the disk with gc and with
  # the runs measured beside it (their p99 on the "idle" store was over a second).
  sync "$1"
}
