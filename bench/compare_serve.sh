# shellcheck shell=bash
# The serve rows of bench/compare.sh: wrk -t2 -c20 --latency against `idem serve` and Debian's
# `webhook`, both on 127.0.0.1, both running /bin/true per delivery and answering once it exited.

# Writes the two servers' configs and wrk's request scripts into $dir.
serve_files() {
  # idem: one hook keyed by a header; 20 handlers at once, as many as wrk's connections
  # (webhook has no cap).
  cat >"$dir/serve.json" <<'EOF'
{"hooks": [{"path": "/hook", "command": ["/bin/true"], "key": {"header": "X-Delivery"},
            "max_concurrency": 20}]}
EOF
  # webhook: answers after the command exited, like idem (its default answers before).
  cat >"$dir/hooks.json" <<'EOF'
[{"id": "hook", "execute-command": "/bin/true", "include-command-output-in-response": true}]
EOF
  cat >"$dir/dup.lua" <<'EOF'
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Delivery"] = "duplicate"
EOF
  # Every request a new delivery id: PREFIX-THREAD-N (PREFIX given after --, unique per run).
  cat >"$dir/new.lua" <<'EOF'
wrk.method = "POST"
wrk.body = "{}"
local threads = 0
function setup(thread) thread:set("tid", threads); threads = threads + 1 end
function init(args) prefix = args[1] or "d"; n = 0 end
function request()
  n = n + 1
  return wrk.format(nil, nil, {["Content-Type"] = "application/json",
                               ["X-Delivery"] = prefix .. "-" .. tid .. "-" .. n})
end
EOF
}

# start_idem_serve: sets SERVE_PID and SERVE_URL (a free port chosen by the daemon).
start_idem_serve() {
  rm -f "$dir/serve.port"
  "$idem" serve --config "$dir/serve.json" --listen 127.0.0.1:0 --port-file "$dir/serve.port" \
    2>>"$dir/serve.log" &
  SERVE_PID=$!
  pids+=("$SERVE_PID")
  await_port_file "$SERVE_PID" serve "idem serve"
  SERVE_URL=http://127.0.0.1:$(<"$dir/serve.port")/hook
}

# await_port_file PID NAME WHAT: waits until PID has written $dir/NAME.port; fails the run with
# the tail of $dir/NAME.log if WHAT (PID) exits first.
await_port_file() {
  local i
  for ((i = 0; i < 500; i++)); do
    [[ -s $dir/$2.port ]] && return 0
    kill -0 "$1" 2>/dev/null || { tail -5 "$dir/$2.log"; echo "FAIL: $3 exited"; exit 1; }
    sleep 0.01
  done
}

# start_webhook: sets WEBHOOK_PID and WEBHOOK_URL, on a port nothing listens on (retried if
# another process takes it first).
start_webhook() {
  local port i try
  for ((try = 0; try < 20; try++)); do
    port=$((20000 + RANDOM % 40000))
    [[ -z $(ss -Htln "sport = :$port") ]] || continue
    webhook -hooks "$dir/hooks.json" -ip 127.0.0.1 -port "$port" >>"$dir/webhook.log" 2>&1 &
    WEBHOOK_PID=$!
    pids+=("$WEBHOOK_PID")
    for ((i = 0; i < 500; i++)); do
      curl -s -o /dev/null -X POST "http://127.0.0.1:$port/hooks/hook" && break
      kill -0 "$WEBHOOK_PID" 2>/dev/null || break
      sleep 0.01
    done
    if kill -0 "$WEBHOOK_PID" 2>/dev/null; then WEBHOOK_URL=http://127.0.0.1:$port/hooks/hook; return; fi
  done
  tail -5 "$dir/webhook.log"
  echo "FAIL: webhook did not start"
  exit 1
}

# start_floor: sets FLOOR_PID and FLOOR_URL; $floor is bench/serve_floor.c built (serve_floor.sh).
# With FLOOR_STORE set, the floor answers the hook's deliveries from that store of idem's.
start_floor() {
  rm -f "$dir/floor.port"
  "$floor" "$dir/floor.port" ${FLOOR_STORE:+"$FLOOR_STORE" "/hook#"} 2>>"$dir/floor.log" &
  FLOOR_PID=$!
  pids+=("$FLOOR_PID")
  await_port_file "$FLOOR_PID" floor serve_floor
  FLOOR_URL=http://127.0.0.1:$(<"$dir/floor.port")/hook
}

# stop_pid PID: TERM, then KILL after 5 s.
stop_pid() {
  local i
  kill -TERM "$1" 2>/dev/null || return 0
  for ((i = 0; i < 500; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.01; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# wrk_run URL SCRIPT TAG: sets WRK_RPS, WRK_P99 (ms) and WRK_BAD (non-2xx answers + socket errors).
wrk_run() {
  local out=$dir/wrk-$3.out
  wrk -t2 -c20 -d"${wrk_s}s" --latency -s "$dir/$2" "$1" -- "$3" >"$out" 2>&1 ||
    { cat "$out"; echo "FAIL: wrk"; exit 1; }
  WRK_RPS=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$out")
  WRK_P99=$(awk '$1 == "99%" {v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
    m = (u == "us") ? v / 1000 : (u == "s") ? v * 1000 : (u == "m") ? v * 60000 : v
    printf "%.1f", m}' "$out")
  WRK_BAD=$(awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(/,/, ""); n += $4 + $6 + $8 + $10}
    END {print n + 0}' "$out")
  echo "  $3: $WRK_RPS req/s, p99 $WRK_P99 ms, bad answers $WRK_BAD"
  ((WRK_BAD == 0)) || grep -E 'Non-2xx|Socket errors' "$out" | sed 's/^/    /'
}

# serve_start WHO: starts one side, sets SIDE_URL and SIDE_PID. idem: the daemon on compare.sh's
# SQLite store (also "sqlite"); pg: the same daemon on the PostgreSQL cluster of compare_pg.sh;
# webhook; floor (bench/serve_floor.c). idem's side gets the duplicate delivery once before wrk,
# so that every request of the dup load is a replay.
serve_start() {
  case $1 in
    webhook) start_webhook; SIDE_URL=$WEBHOOK_URL SIDE_PID=$WEBHOOK_PID; return ;;
    floor) start_floor; SIDE_URL=$FLOOR_URL SIDE_PID=$FLOOR_PID; return ;;
    pg) IDEM_STORE=$pg_url start_idem_serve ;;
    *) start_idem_serve ;;
  esac
  SIDE_URL=$SERVE_URL SIDE_PID=$SERVE_PID
  curl -s -o /dev/null -X POST -H 'X-Delivery: duplicate' --data '{}' "$SERVE_URL"
}

# serve_compare MODE (dup or new) [A B]: ROUNDS rounds of wrk against side A (default idem) and
# side B (default webhook), alternating which goes first. Sets S_IRPS S_IP99 (A's medians over
# rounds), S_WRPS S_WP99 (B's) and S_BAD.
serve_compare() {
  local mode=$1 a=${2:-idem} b=${3:-webhook} r irps=() ip99=() wrps=() wp99=()
  S_BAD=0
  serve_files
  for ((r = 0; r < rounds; r++)); do
    local order=("$a" "$b") who
    ((r % 2 == 0)) || order=("$b" "$a")
    for who in "${order[@]}"; do
      serve_start "$who"
      wrk_run "$SIDE_URL" "$mode.lua" "$who-$mode-$r"
      stop_pid "$SIDE_PID"
      if [[ $who == "$a" ]]; then irps+=("$WRK_RPS") ip99+=("$WRK_P99"); else wrps+=("$WRK_RPS") wp99+=("$WRK_P99"); fi
      S_BAD=$((S_BAD + WRK_BAD))
    done
  done
  S_IRPS=$(median "${irps[@]}") S_IP99=$(median "${ip99[@]}")
  S_WRPS=$(median "${wrps[@]}") S_WP99=$(median "${wp99[@]}")
}

bench_serve_replays() {
  echo "== serve, duplicate deliveries (replays)  vs  webhook running /bin/true"
  serve_compare dup
  local r
  r=$(ratio "$S_IRPS" "$S_WRPS")
  row "\`serve\`, duplicate deliveries (replays)" "$(commas "$S_IRPS") req/s, p99 $S_IP99 ms" \
    "\`webhook\` running \`/bin/true\`: $(commas "$S_WRPS") req/s, p99 $S_WP99 ms" "$r× req/s" \
    "≥ 30× webhook, p99 ≤ 20 ms" \
    "$([[ $(met "$r" '>=' 30) == yes && $(met "$S_IP99" '<=' 20) == yes && $S_BAD == 0 ]] && echo yes || echo '**no**')"
  ((S_BAD == 0)) || echo "  (non-2xx answers or socket errors: $S_BAD)"
}

bench_serve_new() {
  echo "== serve, new deliveries running /bin/true  vs  webhook"
  serve_compare new
  local r
  r=$(ratio "$S_IRPS" "$S_WRPS")
  row "\`serve\`, new deliveries running \`/bin/true\`" "$(commas "$S_IRPS") req/s, p99 $S_IP99 ms" \
    "webhook $(commas "$S_WRPS") req/s, p99 $S_WP99 ms" "$r× req/s" "≥ 1.2× webhook" \
    "$([[ $(met "$r" '>=' 1.2) == yes && $S_BAD == 0 ]] && echo yes || echo '**no**')"
  ((S_BAD == 0)) || echo "  (non-2xx answers or socket errors: $S_BAD)"
}
