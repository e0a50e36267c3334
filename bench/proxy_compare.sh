#!/usr/bin/env bash
# idem's Idempotency-Key proxy beside npm's express-idempotency, measured in the same run:
#   express: an express app whose POST /orders goes through express-idempotency (its default
#            in-memory store) and answers a small JSON order (bench/node/express_app.js);
#   idem:    `idem serve --upstream` in front of a plain node:http server answering the same
#            (bench/node/upstream.js), with its store as shipped (SQLite, durable claims).
# Two loads, wrk -t2 -c20 --latency, POST /orders with a JSON body:
#   replays:  the same Idempotency-Key on every request, so all but the first are replays
#             (goal: idem >= 5x express's req/s);
#   new keys: a new key on every request (a wrk Lua script numbering them per thread), so every
#             request is a first one: for context, no goal.
# ROUNDS rounds (default 3), the order of the two servers swapped every round; figures are the
# medians of the rounds, the ratio the median of the rounds' ratios.
# Usage: bench/proxy_compare.sh [IDEM_BIN]
#   Without IDEM_BIN, builds idem (Release, no test hooks) into build-bench/ as compare.sh does.
#   WRK_SECONDS (default 10), ROUNDS; QUICK=1 for a smoke run (1 round of 2 s).
# Installs wrk with apt-get and the npm packages with scripts/npm_deps.sh when missing. Prints a
# Markdown table at the end; exit 0 even when the goal is missed, 1 if a measurement failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=${QUICK:-0}
if ((quick)); then d_rounds=1 d_wrk=2; else d_rounds=3 d_wrk=10; fi
rounds=${ROUNDS:-$d_rounds}
wrk_s=${WRK_SECONDS:-$d_wrk}

"$root/scripts/deps.sh" wrk curl
"$root/scripts/npm_deps.sh"
idem=$("$root/bench/idem_binary.sh" "$@")
export NODE_PATH=$root/tests/node/node_modules

dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-proxy-compare.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/store"
rows=()

source "$root/bench/compare_lib.sh"
source "$root/bench/compare_serve.sh"  # wrk_run, stop_pid

body='{"amount":1000,"currency":"eur"}'
write_lua() {
  cat >"$dir/replay.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Idempotency-Key"] = "replayed-order"
EOF
  # Every request a new key: PREFIX-THREAD-N (PREFIX given after --, unique per run).
  cat >"$dir/new.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
local threads = 0
function setup(thread) thread:set("tid", threads); threads = threads + 1 end
function init(args) prefix = args[1] or "k"; n = 0 end
function request()
  n = n + 1
  return wrk.format(nil, nil, {["Content-Type"] = "application/json",
                               ["Idempotency-Key"] = prefix .. "-" .. tid .. "-" .. n})
end
EOF
}

# wait_port PID FILE LOG: waits until PID has written its port into FILE; prints the port.
wait_port() {
  local i
  for ((i = 0; i < 1000; i++)); do
    [[ -s $2 ]] && { head -1 "$2"; return; }
    kill -0 "$1" 2>/dev/null || break
    sleep 0.01
  done
  tail -5 "$3" >&2
  echo "FAIL: server $1 did not start" >&2
  exit 1
}

# start_node NAME SCRIPT: starts bench/node/SCRIPT; sets NODE_PID and NODE_PORT.
start_node() {
  rm -f "$dir/$1.port"
  node "$root/bench/node/$2" "$dir/$1.port" 2>>"$dir/$1.log" &
  NODE_PID=$!
  pids+=("$NODE_PID")
  NODE_PORT=$(wait_port "$NODE_PID" "$dir/$1.port" "$dir/$1.log")
}

# start_side WHO: the server(s) of one side; sets SIDE_URL (POST /orders), SIDE_STATS (GET of
# the creations count) and SIDE_PIDS.
start_side() {
  if [[ $1 == express ]]; then
    start_node express express_app.js
    SIDE_PIDS=("$NODE_PID")
    SIDE_URL=http://127.0.0.1:$NODE_PORT/orders SIDE_STATS=http://127.0.0.1:$NODE_PORT/stats
    return
  fi
  start_node upstream upstream.js
  SIDE_PIDS=("$NODE_PID")
  SIDE_STATS=http://127.0.0.1:$NODE_PORT/stats
  rm -f "$dir/serve.port"
  "$idem" serve --upstream "http://127.0.0.1:$NODE_PORT" --listen 127.0.0.1:0 \
    --port-file "$dir/serve.port" 2>>"$dir/serve.log" &
  pids+=("$!")
  SIDE_PIDS+=("$!")
  SIDE_URL=http://127.0.0.1:$(wait_port "$!" "$dir/serve.port" "$dir/serve.log")/orders
}
stop_side() { local p; for p in "${SIDE_PIDS[@]}"; do stop_pid "$p"; done; }

# created: how many orders the side's handler created.
created() { curl -sS "$SIDE_STATS" | sed 's/[^0-9]//g'; }

# Figures by "WHO MODE", space-separated, one a round.
declare -A RPS=() P99=()
last() { local a; read -ra a <<<"$1"; echo "${a[-1]}"; }

# measure WHO MODE ROUND: one wrk run against a fresh side (idem: a fresh store); adds to RPS and
# P99. Replays: the key is used once before wrk, and the run must create nothing more.
measure() {
  local who=$1 mode=$2 tag=$1-$2-$3
  IDEM_DB=$dir/store/$tag.db start_side "$who"
  if [[ $mode == replay ]]; then
    curl -sS -o /dev/null -X POST -H 'Content-Type: application/json' \
      -H 'Idempotency-Key: replayed-order' --data "$body" "$SIDE_URL"
  fi
  wrk_run "$SIDE_URL" "$mode.lua" "$tag"
  local n
  n=$(created)
  echo "    orders created: $n"
  if [[ $mode == replay ]] && ((n != 1)); then echo "FAIL: $who created $n orders for one key"; exit 1; fi
  stop_side
  RPS[$who $mode]+="$WRK_RPS " P99[$who $mode]+="$WRK_P99 "
  BAD=$((BAD + WRK_BAD))
}

# compare MODE: ROUNDS rounds of both sides. Sets I_RPS I_P99 E_RPS E_P99 (medians), RATIO (the
# median of the rounds' ratios) and SPREAD.
compare() {
  local mode=$1 r who ratios=() i e
  for ((r = 0; r < rounds; r++)); do
    local order=(idem express)
    ((r % 2 == 0)) || order=(express idem)
    for who in "${order[@]}"; do measure "$who" "$mode" "$r"; done
    i=$(last "${RPS[idem $mode]}") e=$(last "${RPS[express $mode]}")
    ratios+=("$(ratio "$i" "$e")")
    echo "  round $((r + 1)): idem $i req/s, express $e req/s, ratio ${ratios[-1]}"
  done
  # shellcheck disable=SC2086  # the figures are space-separated on purpose
  {
    I_RPS=$(median ${RPS[idem $mode]}) I_P99=$(median ${P99[idem $mode]})
    E_RPS=$(median ${RPS[express $mode]}) E_P99=$(median ${P99[express $mode]})
  }
  RATIO=$(median "${ratios[@]}")
  SPREAD=$(printf '%s\n' "${ratios[@]}" | sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {print (lo == hi) ? "" : " (" lo "–" hi ")"}')
}

BAD=0
write_lua
started=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "machine: $(nproc) cores ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)), $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "idem: $idem ($("$idem" --version)), source $(commit_of); node $(node --version)," \
  "express $(node -p 'require("express/package.json").version')," \
  "express-idempotency $(node -p 'require("express-idempotency/package.json").version')"
echo "load at start: $(uptime)"
echo "wrk -t2 -c20 -d${wrk_s}s, $rounds rounds"

echo "== replays: one Idempotency-Key on every request"
compare replay
row "replays (one key)" "$(commas "$I_RPS") req/s, p99 $I_P99 ms" \
  "$(commas "$E_RPS") req/s, p99 $E_P99 ms" "$RATIO×$SPREAD" "≥ 5× express" "$(met "$RATIO" '>=' 5)"
echo "== new keys: a new Idempotency-Key on every request"
compare new
row "new keys (every request a first one)" "$(commas "$I_RPS") req/s, p99 $I_P99 ms" \
  "$(commas "$E_RPS") req/s, p99 $E_P99 ms" "$RATIO×$SPREAD" "none (context)" "—"
((BAD == 0)) || echo "non-2xx answers or socket errors: $BAD (see above)"

echo
echo "Measured $started; idem $(commit_of); load at the end: $(uptime)."
echo
echo "| load | idem serve --upstream | express-idempotency | ratio idem/express | goal | met |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
((BAD == 0)) || exit 1
