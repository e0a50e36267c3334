#!/usr/bin/env bash
# Scale benchmark (issue 8, points 1 and 2): a store of RECORDS records, half of them expired and
# interleaved with live ones (and one in a thousand running), built directly with the sqlite3
# CLI; then
#   - `idem gc` on it, timed, while LOOPS shell loops run `idem run -q -k NEW -- true` back to
#     back: every run must exit 0, and their latency (process start + open + claim + finish) is
#     reported as p50 / p99 / max;
#   - the first page of `idem ls` (--limit 20, table and --keys) and a prefix listing, timed,
#     on that store and on one of SMALL records, so the two can be compared.
# Usage: bench/gc_scale.sh [IDEM_BIN]   (env: RECORDS=1000000 SMALL=1000 LOOPS=2)
# Exits 1 if a concurrent run failed.
set -euo pipefail
idem_bin=$(realpath "${1:-$(dirname "$0")/../build/idem}")
source "$(dirname "$0")/store_fill.sh"
records=${RECORDS:-1000000}
small=${SMALL:-1000}
loops=${LOOPS:-2}

dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-gc-scale.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
cd "$dir"
now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }


pct() { sort -n | awk -v p="$1" '{v[NR]=$1} END {i=int(NR*p/100+0.999); if (i<1) i=1; if (i>NR) i=NR; printf "%.1f", v[i]/1000}'; }

# time_ms CMD...: wall time of CMD in ms (best of 3), output discarded.
time_ms() {
  local best=0 t0 t1 i
  for i in 1 2 3; do
    t0=$(now_us)
    "$@" >/dev/null
    t1=$(now_us)
    ((best == 0 || t1 - t0 < best)) && best=$((t1 - t0))
  done
  awk -v us="$best" 'BEGIN {printf "%.1f", us / 1000}'
}

# run_loop ID: back-to-back runs of new keys until gc.done appears; logs "latency_us exit".
run_loop() {
  local i=0 t0 t1 rc
  while [[ ! -e gc.done ]]; do
    t0=$(now_us)
    rc=0
    IDEM_DB=$dir/big.db "$idem_bin" run -q -k "probe-$1-$i" -- true 2>>"errors.$1" || rc=$?
    t1=$(now_us)
    echo "$((t1 - t0)) $rc" >>"runs.$1"
    i=$((i + 1))
  done
}

echo "idem: $idem_bin ($("$idem_bin" --version))"
t0=$(now_us)
make_store big.db "$records"
make_store small.db "$small"
echo "built stores of $records and $small records in $((($(now_us) - t0) / 1000000)) s"
due=$(sqlite3 big.db "SELECT count(*) FROM records WHERE expires_at <= CAST(strftime('%s','now') AS INTEGER) * 1000")

# ls_line: the first page, as table, keys, JSON, and a prefix's keys, on both stores.
ls_line() {
  local db n
  for db in small big; do
    n=$(sqlite3 "$db.db" 'SELECT count(*) FROM records')
    echo "ls on $n records: --limit 20 $(time_ms "$idem_bin" --db "$db.db" ls --limit 20) ms;" \
      "--keys --limit 20 $(time_ms "$idem_bin" --db "$db.db" ls --keys --limit 20) ms;" \
      "--all --keys --prefix bench-00001 $(time_ms "$idem_bin" --db "$db.db" ls --all --keys --prefix bench-00001) ms;" \
      "--json --limit 20 $(time_ms "$idem_bin" --db "$db.db" ls --json --limit 20) ms"
  done
  n=$(sqlite3 big.db 'SELECT count(*) FROM records')
  echo "ls --all --keys, all $n keys of the big store: $(time_ms "$idem_bin" --db big.db ls --all --keys) ms"
}
ls_line

# Runs on an idle store, for reference.
rm -f runs.* errors.*
for ((i = 0; i < 50; i++)); do
  t0=$(now_us)
  IDEM_DB=$dir/big.db "$idem_bin" run -q -k "idle-$i" -- true
  echo "$(($(now_us) - t0)) 0" >>runs.idle
done
idle_p50=$(awk '{print $1}' runs.idle | pct 50)
idle_p99=$(awk '{print $1}' runs.idle | pct 99)
rm -f runs.idle

# gc with concurrent runs.
for ((l = 0; l < loops; l++)); do run_loop "$l" & done
while [[ ! -s runs.0 ]]; do sleep 0.01; done
t0=$(now_us)
gc_rc=0
"$idem_bin" --db big.db gc >gc.out 2>gc.err || gc_rc=$?
gc_ms=$((($(now_us) - t0) / 1000))
touch gc.done
wait
cat runs.* >runs
cat errors.* >errors
n_runs=$(wc -l <runs)
failed=$(awk '$2 != 0' runs | wc -l)
echo "records: $records, due for gc: $due"
echo "gc: exit $gc_rc, '$(cat gc.out gc.err | tr '\n' ' ')' in $gc_ms ms"
echo "concurrent runs during gc ($loops loops): $n_runs, failed $failed;" \
  "latency p50 $(awk '{print $1}' runs | pct 50) ms, p99 $(awk '{print $1}' runs | pct 99) ms," \
  "max $(awk '{print $1}' runs | pct 100) ms"
echo "runs on the idle store: p50 $idle_p50 ms, p99 $idle_p99 ms"
((failed == 0)) || { echo "FAIL: runs failed during gc:"; sort errors | uniq -c | head -5; }
[[ $(sqlite3 big.db 'PRAGMA integrity_check') == ok ]] || { echo "FAIL: integrity_check"; failed=1; }

# ls: the first page on both stores (the big one after gc), and every key of the big one.
ls_line
((failed == 0))
