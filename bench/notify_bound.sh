#!/usr/bin/env bash
# notify_bound.sh — what many failing deliveries cost the daemon in notify commands: the most
# notify processes alive at once, the daemon's threads and its peak RSS (VmHWM), with notify
# commands that block until released (as a slow mail server would).
#
#   bench/notify_bound.sh [IDEM_BIN] [FAILURES OUTPUT_MIB [PARALLEL]]
#
# Defaults: build/idem, 400 failures with no output sent 32 at a time, then 30 failures with
# 16 MiB outputs each sent one at a time. The daemon runs with its default notifications limits.
set -euo pipefail
bin=${1:-build/idem}
bin=$(realpath "$bin")
command -v curl >/dev/null || { echo "curl is missing" >&2; exit 1; }
T=$(mktemp -d /tmp/idem-notify-bound.XXXXXX)
pid=
cleanup() {
  touch "$T/release"
  [[ -z $pid ]] || kill -TERM "$pid" 2>/dev/null || true
  [[ -z $pid ]] || wait "$pid" 2>/dev/null || true
  [[ -n ${KEEP:-} ]] || rm -rf "$T"
}
trap cleanup EXIT

run_case() {  # run_case FAILURES OUTPUT_MIB PARALLEL (deliveries sent at once)
  local failures=$1 mib=$2 parallel=$3
  rm -rf "$T/case" && mkdir -p "$T/case/live"
  export LIVE=$T/case/live RELEASE=$T/release MIB=$mib
  rm -f "$RELEASE"
  cat >"$T/case/notify.sh" <<'EOF'
#!/bin/sh
me=$(mktemp -d "$LIVE/n.XXXXXX")
cat >/dev/null
while [ ! -e "$RELEASE" ]; do sleep 0.05; done
rmdir "$me"
EOF
  cat >"$T/case/handler.sh" <<'EOF'
#!/bin/sh
[ "$MIB" -gt 0 ] && head -c "$((MIB * 1048576))" /dev/zero | tr '\0' 'x'
exit 1
EOF
  chmod +x "$T/case/notify.sh" "$T/case/handler.sh"
  cat >"$T/case/serve.json" <<EOF
{"hooks": [{"path": "/h", "command": ["$T/case/handler.sh"], "key": {"header": "X-Key"},
            "max_concurrency": 64, "max_queue": 1000,
            "notify": {"command": ["$T/case/notify.sh"], "timeout": "120s"}}]}
EOF
  IDEM_DB=$T/case/idem.db "$bin" serve --config "$T/case/serve.json" --listen 127.0.0.1:0 \
    --port-file "$T/case/port" 2>"$T/case/log" &
  pid=$!
  for _ in $(seq 1 500); do [[ -s $T/case/port ]] && break; sleep 0.02; done
  local url=http://127.0.0.1:$(<"$T/case/port")/h most=0 threads=0 n
  local sent=()
  for i in $(seq 1 "$failures"); do
    curl -sS -o /dev/null -X POST -H "X-Key: k$i" --data-binary x "$url" &
    sent+=($!)
    if ((i % parallel == 0)); then wait "${sent[@]}" || true; sent=(); fi
  done
  ((${#sent[@]} == 0)) || wait "${sent[@]}" || true
  # Let the notifications settle: the count of live ones stops growing for a second.
  local still=0 last=-1
  while ((still < 20)); do
    n=$(find "$LIVE" -mindepth 1 -maxdepth 1 | wc -l)
    ((n > most)) && most=$n
    t=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status")
    ((t > threads)) && threads=$t
    if ((n == last)); then still=$((still + 1)); else still=0; fi
    last=$n
    sleep 0.05
  done
  local hwm
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
  printf '%s failures, %s MiB output each: %s notify commands alive at most, %s daemon threads, VmHWM %s MiB, dropped %s\n' \
    "$failures" "$mib" "$most" "$threads" "$((hwm / 1024))" "$(grep -c 'dropped' "$T/case/log" || true)"
  touch "$RELEASE"
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
}

if [[ -n ${2:-} ]]; then
  run_case "$2" "${3:-0}" "${4:-32}"
else
  run_case 400 0 32
  # One delivery at a time: what stays is what the notifications hold, not the handlers' output.
  run_case 30 16 1
fi
