#!/usr/bin/env bash
# The delivery-log page's cost against the store's size (issue 25, point 4): two stores of hook
# deliveries, SMALL (1,000) and RECORDS (1,000,000) records, built directly with the sqlite3 CLI in
# the schema of the idem under test (one in ten failed, one in a thousand running); an
# `idem serve --ui` on each, on 127.0.0.1; then the median of RUNS fetches with curl of:
#   - the first page (/ui: 50 rows, newest first);
#   - the first page of the failed ones (/ui?status=failed);
#   - a page deep in the listing (/ui?after=CURSOR, a cursor at the middle of the store);
#   - the live update's fragment (/ui/rows).
# Each row prints both times and their ratio (big / small); the goal is a ratio near 1: no OFFSET,
# no count of the table, one index range per page.
# Usage: bench/ui_page.sh [IDEM_BIN]   (env: RECORDS=1000000 SMALL=1000 RUNS=30)
set -euo pipefail
idem_bin=$(realpath "${1:-$(dirname "$0")/../build/idem}")
records=${RECORDS:-1000000}
small=${SMALL:-1000}
runs=${RUNS:-30}
command -v sqlite3 >/dev/null || { echo "sqlite3 is missing (scripts/deps.sh installs it)" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is missing (scripts/deps.sh installs it)" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-ui-page.XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }

# make_store PATH N: N deliveries of hook /hooks/x, record i started at T0 + i s.
make_store() {
  "$idem_bin" --db "$1" ls >/dev/null
  sqlite3 "$1" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $2)
INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                     owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                     exit_code, output_bytes, request)
SELECT printf('/hooks/x#d-%07d', i), printf('%064d', i), 'http',
       CASE WHEN i % 1000 = 998 THEN 'running' WHEN i % 10 = 3 THEN 'failed' ELSE 'succeeded' END,
       1, 'elsewhere', 'boot', 1, 1, 1700000000000 + i * 1000,
       CASE WHEN i % 1000 = 998 THEN NULL ELSE 1700000000000 + i * 1000 + 5 END, 0, NULL,
       CASE WHEN i % 1000 = 998 THEN NULL WHEN i % 10 = 3 THEN 1 ELSE 0 END,
       0, '{"method":"POST","path":"/hooks/x","headers":{},"body_b64":"e30="}'
FROM n;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
  "$idem_bin" --db "$1" ls --limit 1 >/dev/null
}

# serve NAME: `idem serve --ui` on NAME.db; sets the variable NAME_url.
serve() {
  "$idem_bin" --db "$1.db" serve --ui --listen 127.0.0.1:0 --port-file "$1.port" 2>"$1.log" &
  pids+=($!)
  local i
  for i in $(seq 200); do [[ -s $1.port ]] && break; sleep 0.05; done
  [[ -s $1.port ]] || { echo "idem serve on $1.db did not start: $(cat "$1.log")" >&2; exit 1; }
  printf -v "$1_url" 'http://127.0.0.1:%s' "$(<"$1.port")"
}

# median_ms URL: the median of RUNS fetches (after 3 warm-ups), in ms; fails on a non-200.
median_ms() {
  local i code t0 t1
  for i in 1 2 3; do curl -sS -o /dev/null "$1"; done
  for i in $(seq "$runs"); do
    t0=$(now_us)
    code=$(curl -sS -o /dev/null -w '%{http_code}' "$1")
    t1=$(now_us)
    [[ $code == 200 ]] || { echo "GET $1 answered $code" >&2; exit 1; }
    echo $((t1 - t0))
  done | sort -n | awk '{v[NR]=$1} END {printf "%.2f", v[int((NR+1)/2)]/1000}'
}

# cursor N: the page's cursor at record N (its start and key in hex).
cursor() {
  printf '%s.%s' $((1700000000000 + $1 * 1000)) "$(printf '/hooks/x#d-%07d' "$1" | od -An -tx1 | tr -d ' \n')"
}

echo "idem: $idem_bin ($("$idem_bin" --version))"
t0=$(now_us)
make_store big.db "$records"
make_store small.db "$small"
echo "built stores of $records and $small records in $((($(now_us) - t0) / 1000000)) s"
serve big
serve small
# shellcheck disable=SC2154  # set by serve
echo
echo "| page | $small records | $records records | ratio |"
echo "|---|---|---|---|"
row() {
  local what=$1 small_path=$2 big_path=$3 a b
  a=$(median_ms "$small_url$small_path")
  b=$(median_ms "$big_url$big_path")
  echo "| $what | $a ms | $b ms | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b / a}') |"
}
row "first page (/ui)" /ui /ui
row "first page of failed (/ui?status=failed)" '/ui?status=failed' '/ui?status=failed'
row "a page in the middle (/ui?after=...)" "/ui?after=$(cursor $((small / 2)))" \
  "/ui?after=$(cursor $((records / 2)))"
row "live update (/ui/rows)" /ui/rows /ui/rows
