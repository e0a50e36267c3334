#!/usr/bin/env bash
# What bounds the "serve new deliveries" row (issue 39): wrk -t2 -c20 with a new delivery id on
# every request against `idem serve`, Debian's webhook and bench/serve_floor.c, each running
# /bin/true per delivery and answering once it exited. The floor does nothing else (no store, no
# output captured), so no server that runs the command per delivery goes above it on this
# machine; its ratio to webhook is the most the row can reach here.
#   bench/serve_floor.sh [IDEM_BIN]    # without it, builds idem Release into build-bench/
#   ROUNDS (3), WRK_SECONDS (10); the three sides in one rotation, its order reversed every other
#   round; the ratios are the medians of the rounds' ratios.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-3}
wrk_s=${WRK_SECONDS:-10}
"$root/scripts/deps.sh" wrk webhook curl gcc
idem=$("$root/bench/idem_binary.sh" "$@")
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-serve-floor.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
mkdir store
export IDEM_DB=$dir/store/idem.db
# shellcheck source=bench/compare_lib.sh
source "$root/bench/compare_lib.sh"
# shellcheck source=bench/compare_serve.sh
source "$root/bench/compare_serve.sh"

floor=$dir/serve_floor
gcc -O2 -pthread "$root/bench/serve_floor.c" -o "$floor"
serve_files
echo "idem: $idem ($("$idem" --version)); webhook $(webhook -version 2>&1 | head -1);" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
sides=(idem floor webhook)
declare -A rps
i_w=() f_w=() i_f=()
for ((r = 0; r < rounds; r++)); do
  order=("${sides[@]}")
  ((r % 2 == 0)) || order=(webhook floor idem)
  for who in "${order[@]}"; do
    serve_start "$who"
    wrk_run "$SIDE_URL" new.lua "$who-new-$r"
    stop_pid "$SIDE_PID"
    ((WRK_BAD == 0)) || { echo "FAIL: $who answered $WRK_BAD bad answers"; exit 1; }
    rps[$who]=$WRK_RPS
  done
  i_w+=("$(ratio "${rps[idem]}" "${rps[webhook]}")")
  f_w+=("$(ratio "${rps[floor]}" "${rps[webhook]}")")
  i_f+=("$(ratio "${rps[idem]}" "${rps[floor]}")")
  echo "  round $r: idem ${rps[idem]}, floor ${rps[floor]}, webhook ${rps[webhook]} req/s;" \
    "idem/webhook ${i_w[-1]}, floor/webhook ${f_w[-1]}, idem/floor ${i_f[-1]}"
done
echo
echo "| measure | median of $rounds rounds | each round |"
echo "|---|---|---|"
echo "| idem / webhook | $(median "${i_w[@]}") | ${i_w[*]} |"
echo "| floor / webhook | $(median "${f_w[@]}") | ${f_w[*]} |"
echo "| idem / floor | $(median "${i_f[@]}") | ${i_f[*]} |"
