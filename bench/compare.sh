#!/usr/bin/env bash
# Side-by-side benchmark of idem against the tools people run today, every figure measured in the
# same run as its peer and printed as a ratio next to its goal:
#   replay of a finished key, first run of `true`, `--version`   (hyperfine -N vs flock / true)
#   `serve` duplicate and new deliveries                          (wrk -t2 -c20 vs Debian's webhook)
#   `run` streaming 1 GiB through the 16 MiB cap                  (peak RSS)
#   8 workers on distinct keys and on one shared key              (vs flock, same loop)
#   a store of 1,000,000 records: ls first page, gc, runs during gc
#   PostgreSQL (a throwaway local cluster): `idem run` claims at 1, 8, 32 processes beside
#     pgbench sending the same SQL; serve on PostgreSQL beside SQLite; gc of RECORDS records
#   the Idempotency-Key proxy beside express-idempotency (bench/proxy_compare.sh)
# Usage: bench/compare.sh [IDEM_BIN]
#   Without IDEM_BIN, builds idem (Release, no test hooks) into build-bench/.
#   QUICK=1: a smoke run of a few seconds (small sizes, short runs; the figures mean little).
#   ROUNDS, RUNS, WRK_SECONDS, WORKERS, CONTEND_SECONDS, STREAM_BYTES, RECORDS, PG_SECONDS
#   override the sizes; PG=0 skips the PostgreSQL rows, PROXY=0 the proxy rows.
# Installs its peers with apt-get when missing. Prints a Markdown table at the end; exit 0 even
# when a goal is missed (the table says which), 1 if a measurement itself could not be taken.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=${QUICK:-0}
if ((quick)); then d_rounds=1 d_runs=20 d_wrk=1 d_contend=1 d_stream=$((64 << 20)) d_records=20000
else d_rounds=3 d_runs=300 d_wrk=10 d_contend=10 d_stream=$((1 << 30)) d_records=1000000; fi
pg=${PG:-1}
proxy=${PROXY:-1}
pg_s=${PG_SECONDS:-$d_contend}
rounds=${ROUNDS:-$d_rounds}
runs=${RUNS:-$d_runs}
wrk_s=${WRK_SECONDS:-$d_wrk}
workers=${WORKERS:-8}
contend_s=${CONTEND_SECONDS:-$d_contend}
stream_bytes=${STREAM_BYTES:-$d_stream}
records=${RECORDS:-$d_records}

"$root/scripts/deps.sh" hyperfine wrk webhook time util-linux sqlite3 curl
idem=$("$root/bench/idem_binary.sh" "$@")

# Debian's default PATH: `true`, `date` and `head`, started by idem and flock alike, are found at
# the same cost on every machine.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-compare.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  local j; for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ! declare -F pg_cleanup >/dev/null || pg_cleanup
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
mkdir store
export IDEM_DB=$dir/store/idem.db
rows=()  # Markdown rows of the final table

source "$root/bench/compare_lib.sh"
source "$root/bench/compare_cli.sh"
source "$root/bench/compare_serve.sh"
source "$root/bench/store_fill.sh"
source "$root/bench/compare_load.sh"
source "$root/bench/compare_pg.sh"
source "$root/bench/compare_proxy.sh"

machine_line
bench_replay
bench_first_run
bench_version
bench_serve_replays
bench_serve_new
bench_stream
bench_contention distinct
bench_contention shared
bench_scale
if ((pg)); then
  bench_pg_claims
  bench_pg_serve
  bench_pg_gc
  pg_cleanup
fi
((proxy == 0)) || bench_proxy
print_table
