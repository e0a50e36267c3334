# shellcheck shell=bash
# The PostgreSQL rows of bench/compare.sh, against a throwaway local cluster
# (scripts/pg_cluster.sh: 127.0.0.1, fsync on, scram-sha-256; stopped by its pid by pg_cleanup,
# which compare.sh's exit trap calls whatever the outcome):
#   claims/s and p99 of `idem run` (first run, replay) with 1, 8 and 32 concurrent processes,
#     beside pgbench sending the same SQL (claim INSERT ... ON CONFLICT + outcome UPDATE), with
#     kept connections and with a new connection per attempt (-C);
#   `idem serve` replays and new deliveries with the store on PostgreSQL beside SQLite;
#   gc of RECORDS records on PostgreSQL with two loops of runs alongside.
# Every idem command gets the cluster's URL in IDEM_STORE (which wins over compare.sh's IDEM_DB)
# for its own environment only.

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
pg_url="" pg_dir=""
pg_clients=(1 8 32)

# pg_start: the throwaway cluster, unless it runs already; sets pg_url and pg_dir (PGPASSFILE
# exported for idem, psql and pgbench alike: the password is never on argv).
pg_start() {
  local env
  mkdir -p "$dir/pg"
  [[ -z $pg_url ]] || return 0
  env=$("$root/scripts/pg_cluster.sh" start) || { echo "FAIL: pg_cluster.sh start"; exit 1; }
  eval "$env"
  pg_url=$IDEM_TEST_PG_URL pg_dir=$IDEM_TEST_PG_DIR
  unset IDEM_TEST_PG_URL IDEM_TEST_PG_DIR IDEM_TEST_PG_PID
  echo "  PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') at ${pg_url#*@} (fsync on)"
}

# pg_cleanup: stops the cluster (by the pid in its postmaster.pid) and removes it.
pg_cleanup() {
  [[ -n $pg_dir ]] || return 0
  "$root/scripts/pg_cluster.sh" stop "$pg_dir" || true
  pg_dir="" pg_url=""
}

pg_sql() { "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -d "$pg_url" "$@"; }

# pg_loop MODE ID DEADLINE: back-to-back `idem run`s until DEADLINE (µs), each a process of its
# own; logs "start_us end_us exit" per attempt to pg/att.MODE.N.ID. first: a new key each
# attempt; replay: the finished key pg-done; floor: bench/pg_floor.c ($pg_floor_bin, built by
# pg_floor.sh) on a new key each attempt instead of idem.
pg_loop() {
  local mode=$1 id=$2 deadline=$3 n=0 t0 rc key
  local att=$dir/pg/att.$mode.$id err=$dir/pg/err.$mode.$id
  while (($(now_us) < deadline)); do
    n=$((n + 1))
    key=pg-done
    [[ $mode != first* && $mode != floor* ]] || key=pg-$mode-$id-$n
    t0=$(now_us)
    rc=0
    if [[ $mode == floor* ]]; then
      PG_FLOOR_URL=$pg_url "$pg_floor_bin" "$key" 2>>"$err" || rc=$?
    else
      IDEM_STORE=$pg_url "$idem" run -q -k "$key" -- true 2>>"$err" || rc=$?
    fi
    echo "$t0 $(now_us) $rc" >>"$att"
  done
}

# pg_idem_rate MODE CLIENTS: CLIENTS loops for PG_SECONDS; sets P_RATE (attempts/s), P_P99 (ms,
# start to exit of each process) and P_FAILED (attempts that did not exit 0).
pg_idem_rate() {
  local mode=$1 c=$2 w deadline tag=$1.$2
  deadline=$(($(now_us) + pg_s * 1000000))
  for ((w = 0; w < c; w++)); do pg_loop "$tag" "$w" "$deadline" & done
  wait
  cat "$dir"/pg/att."$tag".* >"$dir/pg/att.$tag"
  P_RATE=$(awk -v s="$pg_s" 'END {printf "%.0f", NR / s}' "$dir/pg/att.$tag")
  P_P99=$(awk '{print $2 - $1}' "$dir/pg/att.$tag" | pct 99)
  P_FAILED=$(awk '$3 != 0' "$dir/pg/att.$tag" | wc -l)
  local who="idem run"
  [[ $mode != floor* ]] || who=pg_floor
  echo "  $who, $mode, $c processes: $P_RATE/s, p99 $P_P99 ms, $P_FAILED failed"
  ((P_FAILED == 0)) || cat "$dir"/pg/err."$tag".* | sort | uniq -c | head -3
}

# pg_floor_files: a scratch schema holding a copy of idem's records table (its columns, defaults,
# constraints and indexes), and the pgbench script of one attempt: idem's claim of a new key
# (INSERT ... ON CONFLICT DO NOTHING) and its outcome (UPDATE conditioned on the attempt), each
# its own commit as in idem, with the parameters idem sends (the extended protocol).
pg_floor_files() {
  pg_sql -c 'CREATE SCHEMA bench_floor' \
    -c 'CREATE TABLE bench_floor.idem_records (LIKE public.idem_records INCLUDING ALL)'
  cat >"$dir/pg/floor.sql" <<'SQL'
\set n random(1, 9000000000000000000)
INSERT INTO bench_floor.idem_records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid, owner_start, started_at, ttl_ms, request, attempt_token, lease_expires, replay_failures, owner_machine_id, owner_pid_ns) VALUES ('floor-' || :client_id || '-' || :n, repeat('f', 64), 'run', 'running', 1, 'host', 'boot', 4242, 1234567, 1700000000000, 86400000, '{"argv":["true"],"cwd":"/"}', 'token0123456789abcdef', NULL, false, 'machine', 4026531836) ON CONFLICT (key) DO NOTHING RETURNING attempt;
UPDATE bench_floor.idem_records SET status = 'succeeded', finished_at = 1700000000005, expires_at = 1700086400005, exit_code = 0, signal = NULL, timed_out = false, output = ''::bytea, output_bytes = 0, output_truncated = false, note = '', response = NULL, attempt_token = '', lease_expires = NULL WHERE key = 'floor-' || :client_id || '-' || :n AND attempt = 1 AND status = 'running';
SQL
}

# pg_floor CLIENTS CONNECT: pgbench with the script above for PG_SECONDS (CONNECT: -C for a new
# connection per attempt, or empty); sets F_TPS (attempts/s) and F_P99 (ms, from the
# per-transaction log: with -C each transaction's time includes its connection).
pg_floor() {
  local c=$1 how=${2:-kept} prefix=$dir/pg/floor.$1.${2:-kept} out
  out=$prefix.out
  local args=(-n -M extended -f "$dir/pg/floor.sql" -c "$c" -j "$((c < 2 ? 1 : 2))" -T "$pg_s"
    -l --log-prefix "$prefix.log")
  [[ $how != -C ]] || args+=(-C)
  "$pg_bin/pgbench" "${args[@]}" -d "$pg_url" >"$out" 2>&1 || { cat "$out"; echo "FAIL: pgbench"; exit 1; }
  cat "$prefix".log.* >"$prefix.all"
  F_TPS=$(awk -v s="$pg_s" 'END {printf "%.0f", NR / s}' "$prefix.all")
  F_P99=$(awk '{print $3}' "$prefix.all" | pct 99)
  F_FAILED=$(awk '/number of failed transactions/ {print $5}' "$out")
  echo "  pgbench, $c clients, ${2:-kept connections}: $F_TPS/s, p99 $F_P99 ms, ${F_FAILED:-0} failed"
}

# bench_pg_claims: the claim rows, at 1, 8 and 32 clients: idem's first runs and replays, and
# pgbench's floor with kept connections and with -C. The goal at 8 clients: idem's time per
# claim (the floor's rate over idem's) within 1.5x of pgbench -C's.
bench_pg_claims() {
  echo "== PostgreSQL: idem run (1, 8, 32 processes, ${pg_s}s each) vs pgbench sending the same SQL"
  pg_start
  IDEM_STORE=$pg_url "$idem" run -q -k pg-done -- true
  pg_floor_files
  local c fr fp rr rp kr kp cr cp
  for c in "${pg_clients[@]}"; do
    pg_idem_rate first "$c"
    fr=$P_RATE fp=$P_P99
    local failed=$P_FAILED
    pg_idem_rate replay "$c"
    rr=$P_RATE rp=$P_P99 failed=$((failed + P_FAILED))
    pg_floor "$c"
    kr=$F_TPS kp=$F_P99
    pg_floor "$c" -C
    cr=$F_TPS cp=$F_P99
    local goal="none (context)" ok="—" vs_c vs_k
    vs_c=$(ratio "$cr" "$fr") vs_k=$(ratio "$kr" "$fr")
    if ((c == 8)); then
      goal="≤ 1.5× pgbench -C (time per claim)"
      ok=$(met "$vs_c" '<=' 1.5)
    fi
    ((failed == 0)) || ok='**no**'
    row "PostgreSQL, \`idem run\` claims, $c process$( ((c > 1)) && echo es)" \
      "first run $(commas "$fr")/s, p99 $fp ms; replay $(commas "$rr")/s, p99 $rp ms; $failed failed" \
      "pgbench -C $(commas "$cr")/s, p99 $cp ms; kept connections $(commas "$kr")/s, p99 $kp ms" \
      "${vs_c}× (-C), ${vs_k}× (kept)" "$goal" "$ok"
  done
}

bench_pg_serve() {
  local mode label
  pg_start
  for mode in dup new; do
    label="duplicate deliveries (replays)"
    [[ $mode == dup ]] || label="new deliveries running \`/bin/true\`"
    echo "== serve, ${label//\`/}: store on PostgreSQL vs SQLite"
    serve_compare "$mode" pg sqlite
    row "\`serve\` on PostgreSQL, $label" "$(commas "$S_IRPS") req/s, p99 $S_IP99 ms" \
      "SQLite store $(commas "$S_WRPS") req/s, p99 $S_WP99 ms" "$(ratio "$S_IRPS" "$S_WRPS")× req/s" \
      "none (context)" "$( ((S_BAD == 0)) && echo — || echo '**no**')"
    ((S_BAD == 0)) || echo "  (non-2xx answers or socket errors: $S_BAD)"
  done
}

# pg_fill N: N records in idem's own tables (created by idem first), laid out as compare_load.sh's
# fill does (odd ones expired, even ones live, one in a thousand running under an owner on another
# host), each with its stored output and its one attempt in the history, as idem writes them.
pg_fill() {
  IDEM_STORE=$pg_url "$idem" ls >/dev/null
  pg_sql >/dev/null <<SQL
SET synchronous_commit = off;
INSERT INTO idem_records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                          owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                          exit_code, output, output_bytes, request)
SELECT 'bench-' || lpad(i::text, 7, '0'), lpad(i::text, 64, '0'), 'run',
       CASE WHEN i % 1000 = 998 THEN 'running' ELSE 'succeeded' END, 1, 'elsewhere', 'boot', 1, 1,
       1700000000000 + i * 1000,
       CASE WHEN i % 1000 = 998 THEN NULL ELSE 1700000000000 + i * 1000 + 5 END, 86400000,
       CASE WHEN i % 1000 = 998 THEN NULL
            WHEN i % 2 = 1 THEN 1700000000000 + i * 1000 + 5 + 3600000
            ELSE 4000000000000 END,
       CASE WHEN i % 1000 = 998 THEN NULL ELSE 0 END,
       '\x01010600000068656c6c6f0a'::bytea, 6, '{"argv":["true"],"cwd":"/"}'
FROM generate_series(0, $1 - 1) AS i;
INSERT INTO idem_attempts (key, number, started_by, owner_host, owner_pid, started_at, ended_at,
                           outcome, reason, exit_code)
SELECT key, attempt, kind, owner_host, owner_pid, started_at, finished_at, status,
       CASE WHEN status = 'running' THEN '' ELSE 'exit' END, exit_code
FROM idem_records WHERE key LIKE 'bench-%';
VACUUM ANALYZE idem_records;
VACUUM ANALYZE idem_attempts;
SQL
}

# pg_scale_loop ID: runs of new keys until pg/gc.done exists; logs "latency_us exit".
pg_scale_loop() {
  local i=0 t0 rc
  while [[ ! -e $dir/pg/gc.done ]]; do
    t0=$(now_us)
    rc=0
    IDEM_STORE=$pg_url "$idem" run -q -k "probe-$1-$i" -- true 2>>"$dir/pg/gc-err.$1" || rc=$?
    echo "$(($(now_us) - t0)) $rc" >>"$dir/pg/gc-runs.$1"
    i=$((i + 1))
  done
}

# bench_pg_gc: gc of RECORDS records (half of them expired) on PostgreSQL while two loops run
# `idem run` on new keys: gc's time, the runs, how many failed, their p99 beside the idle p99.
bench_pg_gc() {
  echo "== PostgreSQL: gc of $records records (half expired), 2 loops of runs alongside"
  local t0 i idle99 gc_ms gc_rc=0 l
  pg_start
  t0=$(now_us)
  pg_fill "$records"
  echo "  filled in $((($(now_us) - t0) / 1000)) ms"
  for ((i = 0; i < 50; i++)); do
    t0=$(now_us)
    IDEM_STORE=$pg_url "$idem" run -q -k "pg-idle-$i" -- true
    echo "$(($(now_us) - t0))" >>"$dir/pg/gc-idle"
  done
  idle99=$(pct 99 <"$dir/pg/gc-idle")
  for l in 0 1; do pg_scale_loop "$l" & done
  while [[ ! -s $dir/pg/gc-runs.0 ]]; do sleep 0.01; done
  t0=$(now_us)
  IDEM_STORE=$pg_url "$idem" gc >"$dir/pg/gc.out" 2>&1 || gc_rc=$?
  gc_ms=$((($(now_us) - t0) / 1000))
  touch "$dir/pg/gc.done"
  wait
  cat "$dir"/pg/gc-runs.? >"$dir/pg/gc-runs"
  local n failed p99 left
  n=$(wc -l <"$dir/pg/gc-runs")
  failed=$(awk '$2 != 0' "$dir/pg/gc-runs" | wc -l)
  p99=$(awk '{print $1}' "$dir/pg/gc-runs" | pct 99)
  left=$(pg_sql -At -c "SELECT count(*) FROM idem_records WHERE key LIKE 'bench-%'")
  echo "  gc: exit $gc_rc in $gc_ms ms ($(tr '\n' ' ' <"$dir/pg/gc.out")); $left filled records left;" \
    "runs alongside: $n, failed $failed, p99 $p99 ms; idle p99 $idle99 ms"
  ((failed == 0)) || sort "$dir"/pg/gc-err.? | uniq -c | head -5
  row "PostgreSQL, \`gc\` of $(commas $((records / 2))) expired among $(commas "$records"), 2 loops of runs alongside" \
    "gc $(awk -v ms="$gc_ms" 'BEGIN {printf "%.1f", ms / 1000}') s; $n runs, $failed failed, p99 $p99 ms" \
    "runs on the idle store: p99 $idle99 ms" "p99 $(ratio "$p99" "$idle99")×" "0 failed runs, gc exit 0" \
    "$( ((failed == 0 && gc_rc == 0)) && echo yes || echo '**no**')"
}
