#!/usr/bin/env bash
# What bounds the serve rows (issue 39): wrk -t2 -c20 against `idem serve`, Debian's webhook and
# bench/serve_floor.c, all on 127.0.0.1.
# - New deliveries (a new delivery id on every request): each side runs /bin/true per delivery
#   and answers once it exited. The floor does nothing else (no store, no output captured), so no
#   server that runs the command per delivery goes above it on this machine; its ratio to webhook
#   is the most the row can reach here.
# - Duplicate deliveries (one id, every request after the first a replay): webhook runs /bin/true
#   each time as before; idem and the floor answer from idem's store, the floor with one read of
#   the record per request and nothing else (no body, no replay counted, no log), so its ratio to
#   webhook is the most an answer read from SQLite reaches here.
#   bench/serve_floor.sh [IDEM_BIN]    # without it, builds idem Release into build-bench/
#   ROUNDS (3), WRK_SECONDS (10); the three sides in one rotation, its order reversed every other
#   round; the ratios are the medians of the rounds' ratios.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-3}
wrk_s=${WRK_SECONDS:-10}
"$root/scripts/deps.sh" wrk webhook curl gcc libsqlite3-dev
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
gcc -O2 -pthread "$root/bench/serve_floor.c" -o "$floor" -lsqlite3
serve_files
echo "idem: $idem ($("$idem" --version)); webhook $(webhook -version 2>&1 | head -1);" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
sides=(idem floor webhook)

# compare_three MODE: ROUNDS rotations of the three sides under MODE's load (new or dup), then
# the table of their ratios.
compare_three() {
  local mode=$1 r who order
  local -A rps
  local i_w=() f_w=() i_f=()
  for ((r = 0; r < rounds; r++)); do
    order=("${sides[@]}")
    ((r % 2 == 0)) || order=(webhook floor idem)
    for who in "${order[@]}"; do
      serve_start "$who"
      wrk_run "$SIDE_URL" "$mode.lua" "$who-$mode-$r"
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
  echo "| $mode deliveries | median of $rounds rounds | each round |"
  echo "|---|---|---|"
  median_row "idem / webhook" "${i_w[@]}"
  median_row "floor / webhook" "${f_w[@]}"
  median_row "idem / floor" "${i_f[@]}"
  echo
}

compare_three new
# The duplicate's record, made once by idem's side (serve_start), is what the floor reads.
serve_start idem
stop_pid "$SIDE_PID"
FLOOR_STORE=$IDEM_DB compare_three dup
