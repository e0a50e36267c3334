#!/usr/bin/env bash
# What TLS costs `idem serve`: the same daemon (one binary, one config) over plain HTTP and over
# TLS (--cert/--key, a self-signed P-256 certificate made here; TLS 1.3), measured in the same
# run. Three loads, wrk -t2 -c20 --latency:
#   replays:     POST of a delivery already done, on kept-alive connections (the TLS record
#                layer alone);
#   healthz:     GET /healthz on kept-alive connections (the server's floor);
#   new conns:   GET /healthz with Connection: close, so every request is a new connection and,
#                over TLS, a full handshake.
# ROUNDS rounds (default 3), which side goes first swapped every round; figures are the medians
# of the rounds, the ratio TLS/plain the median of the rounds' ratios. No goal: context.
# Usage: bench/tls_compare.sh [IDEM_BIN]   (without it, builds build-bench/ as compare.sh does)
#   WRK_SECONDS (default 10), ROUNDS; QUICK=1 for a smoke run (1 round of 2 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=${QUICK:-0}
if ((quick)); then d_rounds=1 d_wrk=2; else d_rounds=3 d_wrk=10; fi
rounds=${ROUNDS:-$d_rounds}
wrk_s=${WRK_SECONDS:-$d_wrk}

"$root/scripts/deps.sh" wrk curl openssl
idem=$("$root/bench/idem_binary.sh" "$@")
dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-tls-compare.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
rows=()
source "$root/bench/compare_lib.sh"
source "$root/bench/compare_serve.sh"  # serve_files (serve.json, dup.lua), stop_pid, wrk_run

serve_files
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
cat >"$dir/healthz.lua" <<'LUA'
wrk.method = "GET"
LUA
cat >"$dir/close.lua" <<'LUA'
wrk.method = "GET"
wrk.headers["Connection"] = "close"
LUA

# start SIDE: a fresh daemon (and store) over plain HTTP or TLS; sets BASE and SIDE_PID.
start() {
  local tls=() scheme=http
  [[ $1 == plain ]] || { tls=(--cert "$dir/cert.pem" --key "$dir/key.pem"); scheme=https; }
  rm -f "$dir/serve.port"
  IDEM_DB=$dir/$1-$RANDOM.db "$idem" serve --config "$dir/serve.json" --listen 127.0.0.1:0 \
    --port-file "$dir/serve.port" "${tls[@]}" 2>>"$dir/serve.log" &
  SIDE_PID=$!
  pids+=("$SIDE_PID")
  local i
  for ((i = 0; i < 500; i++)); do
    [[ -s $dir/serve.port ]] && break
    kill -0 "$SIDE_PID" 2>/dev/null || { tail -5 "$dir/serve.log"; echo "FAIL: idem serve exited"; exit 1; }
    sleep 0.01
  done
  BASE=$scheme://127.0.0.1:$(<"$dir/serve.port")
}

declare -A RPS=() P99=()
BAD=0
# compare LOAD PATH SCRIPT: ROUNDS rounds of both sides; sets T_RPS T_P99 P_RPS P_P99 RATIO.
compare() {
  local load=$1 path=$2 script=$3 r side ratios=() t p
  for ((r = 0; r < rounds; r++)); do
    local order=(plain tls)
    ((r % 2 == 0)) || order=(tls plain)
    for side in "${order[@]}"; do
      start "$side"
      curl -sSk -o /dev/null -X POST -H 'X-Delivery: duplicate' --data '{}' "$BASE/hook"
      wrk_run "$BASE$path" "$script" "$side-$load-$r"
      stop_pid "$SIDE_PID"
      RPS[$side]+="$WRK_RPS " P99[$side]+="$WRK_P99 "
      BAD=$((BAD + WRK_BAD))
      [[ $side == tls ]] && t=$WRK_RPS || p=$WRK_RPS
    done
    ratios+=("$(ratio "$t" "$p")")
  done
  # shellcheck disable=SC2086  # space-separated on purpose
  {
    T_RPS=$(median ${RPS[tls]}) T_P99=$(median ${P99[tls]})
    P_RPS=$(median ${RPS[plain]}) P_P99=$(median ${P99[plain]})
  }
  RPS=() P99=()
  RATIO=$(median "${ratios[@]}")
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "idem: $idem ($("$idem" --version)), source $(commit_of); $(openssl version)"
echo "load at start: $(uptime)"
for load in "replays|/hook|dup.lua" "healthz|/healthz|healthz.lua" "new conns|/healthz|close.lua"; do
  IFS='|' read -r name path script <<<"$load"
  echo "== $name"
  compare "${name// /-}" "$path" "$script"
  row "$name" "$(commas "$T_RPS") req/s, p99 $T_P99 ms" "$(commas "$P_RPS") req/s, p99 $P_P99 ms" \
    "$RATIO×" "none (context)" "—"
done
((BAD == 0)) || echo "non-2xx answers or socket errors: $BAD (see above)"
echo
echo "Measured $started; load at the end: $(uptime)."
echo
echo "| load | idem serve over TLS | idem serve over HTTP | ratio TLS/HTTP | goal | met |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
((BAD == 0)) || exit 1
