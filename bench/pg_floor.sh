#!/usr/bin/env bash
# What bounds the PostgreSQL row (issue 39): at CLIENTS concurrent processes (default 8), `idem
# run` of `true` on new keys, bench/pg_floor.c (a process per attempt too: Debian's libpq, one
# connection, the claim, `true`, the outcome) and pgbench -C sending the same SQL from one process
# with a new connection per attempt, against a throwaway local cluster (scripts/pg_cluster.sh,
# stopped by its pid whatever the outcome). The row's measure is pgbench -C's rate over idem's;
# the floor's over idem's shows what a process per attempt with libpq costs by itself.
#   bench/pg_floor.sh [IDEM_BIN]    # without it, builds idem Release into build-bench/
#   ROUNDS (3), PG_SECONDS (10), CLIENTS (8); the order reversed every other round; the ratios
#   are the medians of the rounds' ratios.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-3}
pg_s=${PG_SECONDS:-10}
clients=${CLIENTS:-8}
"$root/scripts/deps.sh" postgresql libpq-dev gcc
idem=$("$root/bench/idem_binary.sh" "$@")
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-pg-floor.XXXXXX")
# shellcheck source=bench/compare_lib.sh
source "$root/bench/compare_lib.sh"
# shellcheck source=bench/compare_pg.sh
source "$root/bench/compare_pg.sh"
cleanup() {
  local j
  for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pg_cleanup
  rm -rf "$dir"
}
trap cleanup EXIT

pg_floor_bin=$dir/pg_floor
gcc -O2 "$root/bench/pg_floor.c" -I"$(pg_config --includedir)" -lpq -o "$pg_floor_bin"
pg_start
IDEM_STORE=$pg_url "$idem" run -q -k pg-done -- true
pg_floor_files
echo "idem: $idem ($("$idem" --version)); $(date -u '+%Y-%m-%d %H:%M UTC');" \
  "load: $(cut -d' ' -f1-3 /proc/loadavg); $clients processes, ${pg_s} s a side"
declare -A rate
c_i=() c_f=() f_i=()
for ((r = 0; r < rounds; r++)); do
  order=(idem floor pgbench)
  ((r % 2 == 0)) || order=(pgbench floor idem)
  for who in "${order[@]}"; do
    case $who in
      idem) pg_idem_rate "first-$r" "$clients"; rate[idem]=$P_RATE ;;
      floor) pg_idem_rate "floor-$r" "$clients"; rate[floor]=$P_RATE ;;
      pgbench)
        rm -f "$dir/pg/floor.$clients.-C".*  # pg_floor counts every log of its prefix
        pg_floor "$clients" -C
        rate[pgbench]=$F_TPS
        ;;
    esac
    ((${P_FAILED:-0} == 0 && ${F_FAILED:-0} == 0)) ||
      { echo "FAIL: $who had failed attempts"; exit 1; }
  done
  c_i+=("$(ratio "${rate[pgbench]}" "${rate[idem]}")")
  c_f+=("$(ratio "${rate[pgbench]}" "${rate[floor]}")")
  f_i+=("$(ratio "${rate[floor]}" "${rate[idem]}")")
  echo "  round $r: idem ${rate[idem]}/s, floor ${rate[floor]}/s, pgbench -C ${rate[pgbench]}/s;" \
    "time per claim over pgbench -C's: idem ${c_i[-1]}, floor ${c_f[-1]}"
done
echo
echo "| time per claim | median of $rounds rounds | each round |"
echo "|---|---|---|"
median_row "idem / pgbench -C (the row; goal ≤ 1.5)" "${c_i[@]}"
median_row "floor / pgbench -C" "${c_f[@]}"
median_row "idem / floor" "${f_i[@]}"
