#!/usr/bin/env bash
# How long `idem serve` takes to listen, and what a process start costs, for two builds: the
# median of N runs (default 30) of `idem serve --ledger --listen 127.0.0.1:0` from exec to its
# port file, and of 200 runs of `--version`. Since the static idem hands `idem serve` to idem-pg
# (docs/internals.md, "No NSS in the static idem"), the daemon's start includes idem-pg's dynamic
# loading; `idem run` is not concerned.
#
#   bench/serve_start.sh OLD_IDEM NEW_IDEM [N]
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_IDEM NEW_IDEM [N]" >&2; exit 64; }
runs=${3:-30}
median_ms() { sort -n | awk '{a[NR] = $1} END {printf "%.2f ms", a[int(NR / 2) + 1] / 1000}'; }
serve_start() {  # serve_start BIN: microseconds from exec to the port file, one line a run
  local dir pid t0 t1
  for ((i = 0; i < runs; i++)); do
    dir=$(mktemp -d)
    t0=${EPOCHREALTIME/./}
    "$1" serve --ledger --db "$dir/db" --listen 127.0.0.1:0 --port-file "$dir/port" 2>/dev/null &
    pid=$!
    until [[ -s $dir/port ]]; do kill -0 "$pid" 2>/dev/null || { echo "$1 serve exited" >&2; exit 1; }; done
    t1=${EPOCHREALTIME/./}
    kill -TERM "$pid"
    wait "$pid" || true
    echo $((t1 - t0))
    rm -rf "$dir"
  done
}
version() {  # version BIN: microseconds of `BIN --version`, 200 lines
  local t0 t1
  for ((i = 0; i < 200; i++)); do
    t0=${EPOCHREALTIME/./}
    "$1" --version >/dev/null
    t1=${EPOCHREALTIME/./}
    echo $((t1 - t0))
  done
}
for bin in "$1" "$2"; do
  pg=$(dirname "$bin")/idem-pg
  echo "$bin: --version $(version "$bin" | median_ms)" \
    "$([[ -x $pg ]] && echo "(idem-pg --version $(version "$pg" | median_ms))")," \
    "serve to listening $(serve_start "$bin" | median_ms)"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
