#!/usr/bin/env bash
# The delivery-log page's cost against the store's size, and what its live update costs the
# deliveries (issue 25, point 4; issue 33, point 7). Two stores built directly with the sqlite3 CLI
# in the schema of the idem under test: SMALL (1,000) and RECORDS (1,000,000) records, hook
# deliveries of /hooks/x answered 200 or, one in ten, 500 (failed), one in a thousand running,
# and one in a thousand a `run` record (exit 0, or 3 when failed); no ledger record. An
# `idem serve --ui` on each, on 127.0.0.1, the big one with the hook configured (/bin/true).
#   1. Every filter shape of the page, the median of RUNS fetches with curl at both sizes and
#      their ratio (the goal: near 1, every filter read from an index or bounded by the page's
#      budget of entries read).
#   2. Deliveries under load (wrk -t2 -c20 for LOAD_S seconds, each a new delivery id) on the big
#      store, alone and then with POLLERS clients fetching the live update of a rare filter
#      (/ui/rows?status=failed&front=run) back to back: requests/s and p99 of both.
# Usage: bench/ui_page.sh [IDEM_BIN]
#   env: RECORDS=1000000 SMALL=1000 RUNS=30 POLLERS=4 LOAD_S=10
set -euo pipefail
bench_dir=$(realpath "$(dirname "$0")")
idem_bin=$(realpath "${1:-$bench_dir/../build/idem}")
records=${RECORDS:-1000000}
small=${SMALL:-1000}
runs=${RUNS:-30}
pollers=${POLLERS:-4}
load_s=${LOAD_S:-10}
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

# page_get URL PATH: fetches the page's PATH (/ui?..., /ui/rows?...) from the page's own
# listener at URL, writing the HTTP status. How the page is reached (its listener, the UI token
# of the file beside the store as a bearer token) is here alone.
declare -A ui_token=()
page_get() {
  curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${ui_token[$1]}" "$1$2"
}

# make_store PATH N: N records, record i started at T0 + i s (see the head of this file).
make_store() {
  "$idem_bin" --db "$1" ls >/dev/null
  sqlite3 "$1" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $2),
r AS (SELECT i, i % 1000 = 998 AS running, i % 10 = 3 AS failed, i % 1000 = 500 AS run FROM n)
INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                     owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                     exit_code, output_bytes, request, response)
SELECT CASE WHEN run THEN printf('run-%07d', i) ELSE printf('/hooks/x#d-%07d', i) END,
       printf('%064d', i), CASE WHEN run THEN 'run' ELSE 'http' END,
       CASE WHEN running THEN 'running' WHEN failed THEN 'failed' ELSE 'succeeded' END,
       1, 'elsewhere', 'boot', 1, 1, 1700000000000 + i * 1000,
       CASE WHEN running THEN NULL ELSE 1700000000000 + i * 1000 + 5 END, 0, NULL,
       CASE WHEN running THEN NULL WHEN failed THEN 3 ELSE 0 END,
       0, '{"method":"POST","path":"/hooks/x","headers":{},"body_b64":"e30="}',
       CASE WHEN running OR run THEN NULL WHEN failed THEN '{"status":500,"headers":[]}'
            ELSE '{"status":200,"headers":[]}' END
FROM r;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
  "$idem_bin" --db "$1" ls --limit 1 >/dev/null
}

# serve NAME: `idem serve --ui` on NAME.db with the hook; sets the variables NAME_url (the hooks'
# listener) and NAME_ui (the page's).
serve() {
  cat >"$1.json" <<'EOF'
{"hooks": [{"path": "/hooks/x", "command": ["/bin/true"], "key": {"header": "X-Delivery"},
            "max_concurrency": 20}]}
EOF
  "$idem_bin" --db "$1.db" serve --ui --config "$1.json" --listen 127.0.0.1:0 \
    --port-file "$1.port" 2>"$1.log" &
  pids+=($!)
  local i
  for i in $(seq 200); do [[ -s $1.port ]] && break; sleep 0.05; done
  [[ -s $1.port ]] || { echo "idem serve on $1.db did not start: $(cat "$1.log")" >&2; exit 1; }
  printf -v "$1_url" 'http://127.0.0.1:%s' "$(<"$1.port")"
  local ui
  ui=$(grep -o '"ui":"[^"]*"' "$1.log" | sed 's/^"ui":"//; s#/ui/"$##')
  printf -v "$1_ui" '%s' "$ui"
  ui_token[$ui]=$(<"$1.db.ui-token")
}

# median_ms URL PATH: the median of RUNS fetches (after 3 warm-ups), in ms; fails on a non-200.
median_ms() {
  local i code t0 t1
  for i in 1 2 3; do page_get "$1" "$2" >/dev/null; done
  for i in $(seq "$runs"); do
    t0=$(now_us)
    code=$(page_get "$1" "$2")
    t1=$(now_us)
    [[ $code == 200 ]] || { echo "GET $2 answered $code" >&2; exit 1; }
    echo $((t1 - t0))
  done | sort -n | awk '{v[NR]=$1} END {printf "%.2f", v[int((NR+1)/2)]/1000}'
}

# cursor N: the page's cursor at hook delivery N (its start and key in hex).
cursor() {
  printf '%s.%s' $((1700000000000 + $1 * 1000)) "$(printf '/hooks/x#d-%07d' "$1" | od -An -tx1 | tr -d ' \n')"
}

# time_at N: the page's since/until form of record N's start (UTC).
time_at() { date -u -d "@$((1700000000 + $1))" +%Y-%m-%dT%H:%M:%S; }

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
  local what=$1 small_path=$2 big_path=${3:-$2} a b
  a=$(median_ms "$small_ui" "$small_path")
  b=$(median_ms "$big_ui" "$big_path")
  echo "| $what | $a ms | $b ms | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b / a}') |"
}
row "first page (\`/ui\`)" /ui
row "failed (\`?status=failed\`)" '/ui?status=failed'
row "front run, rare (\`?front=run\`)" '/ui?front=run'
row "failed runs, rare (\`?status=failed&front=run\`)" '/ui?status=failed&front=run'
row "no match (\`?front=ledger\`)" '/ui?front=ledger'
row "a hook (\`?hook=/hooks/x\`)" '/ui?hook=%2Fhooks%2Fx'
row "a key prefix, rare (\`?prefix=run-\`)" '/ui?prefix=run-'
row "since and until (an hour in the middle)" \
  "/ui?since=$(time_at $((small / 2)))&until=$(time_at $((small / 2 + 3600)))" \
  "/ui?since=$(time_at $((records / 2)))&until=$(time_at $((records / 2 + 3600)))"
row "HTTP 5xx (\`?result=5xx\`)" '/ui?result=5xx'
row "exit ≠ 0, rare (\`?result=exit_nonzero\`)" '/ui?result=exit_nonzero'
row "combined (\`?status=failed&front=hook&result=5xx&hook=...\`)" \
  '/ui?status=failed&front=hook&result=5xx&hook=%2Fhooks%2Fx'
row "a page in the middle (\`?after=...\`)" "/ui?after=$(cursor $((small / 2)))" \
  "/ui?after=$(cursor $((records / 2)))"
row "failed, in the middle (\`?status=failed&after=...\`)" \
  "/ui?status=failed&after=$(cursor $((small / 2)))" \
  "/ui?status=failed&after=$(cursor $((records / 2)))"
row "live update of a rare filter (\`/ui/rows?status=failed&front=run\`)" \
  '/ui/rows?status=failed&front=run'

command -v wrk >/dev/null || { echo; echo "wrk is missing: no delivery rows (apt-get install wrk)"; exit 0; }
# new.lua: every request a new delivery id, as compare.sh's serve rows send them.
# shellcheck source=bench/compare_serve.sh
source "$bench_dir/compare_serve.sh"
serve_files
# deliveries TAG: wrk's requests/s, p99 (ms) and non-2xx answers, on the big store's hook.
deliveries() {
  wrk -t2 -c20 -d"${load_s}s" --latency -s new.lua "$big_url/hooks/x" -- "$1" >"wrk-$1.out" 2>&1
  awk '/^Requests\/sec:/ {rps = $2}
    $1 == "99%" {v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
      p99 = (u == "us") ? v / 1000 : (u == "s") ? v * 1000 : v}
    /Non-2xx/ {bad = $NF}
    END {printf "%.0f req/s, p99 %.2f ms, %d non-2xx", rps, p99, bad}' "wrk-$1.out"
}
echo
echo "| deliveries on $records records (wrk -t2 -c20, ${load_s} s) | result |"
echo "|---|---|"
echo "| alone | $(deliveries alone) |"
touch polling
for ((p = 0; p < pollers; p++)); do
  (n=0; while [[ -e polling ]]; do page_get "$big_ui" '/ui/rows?status=failed&front=run' >/dev/null; n=$((n + 1)); done; echo "$n" >"polls-$p") &
  pids+=($!)
done
result=$(deliveries polled)
rm -f polling
wait "${pids[@]:2}" 2>/dev/null || true
polls=0
for ((p = 0; p < pollers; p++)); do polls=$((polls + $(cat "polls-$p" 2>/dev/null || echo 0))); done
echo "| with $pollers clients polling \`/ui/rows?status=failed&front=run\` back to back ($polls fetches) | $result |"
