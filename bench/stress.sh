#!/usr/bin/env bash
# Stress benchmark (issue 3, part 5): WORKERS concurrent loops of `idem run` over KEYS keys for
# SECONDS seconds on one SQLite store, with a short TTL so every key runs again and again.
# Checks what contract §8 promises under load and prints the claim latency:
#   - each key executes exactly once per TTL window (consecutive runs of a key are >= TTL apart,
#     and a key runs again soon after its record expires);
#   - no "database is locked" (or any other store error) reaches the user;
#   - the WAL stays bounded;
#   - latency of one `idem run` that is refused or replayed (process start + open + claim), p50
#     and p99, beside `flock -n LOCK true` measured the same way as the reference.
# Usage: bench/stress.sh [IDEM_BIN]   (env: WORKERS=256 KEYS=32 SECONDS_TOTAL=60 TTL_MS=3000)
set -euo pipefail
idem_bin=${1:-$(dirname "$0")/../build/idem}
idem_bin=$(realpath "$idem_bin")
workers=${WORKERS:-256}
keys=${KEYS:-32}
total=${SECONDS_TOTAL:-60}
ttl_ms=${TTL_MS:-3000}

dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-stress.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
export IDEM_DB=$dir/idem.db
cd "$dir"

# One worker: loops until the deadline; logs "latency_us exit_code" per attempt. The command logs
# "key start_ms end_ms" per execution (appends of one short line are atomic).
worker() {
  local id=$1 deadline=$2 key t0 t1 rc i=0
  while ((${EPOCHREALTIME/./} < deadline)); do
    key=k$(((id + i) % keys))
    i=$((i + 1))
    t0=${EPOCHREALTIME/./}
    rc=0
    "$idem_bin" run -q -k "$key" --ttl "${ttl_ms}ms" -- \
      sh -c 'a=$(date +%s%3N); echo "$IDEM_KEY $a $(date +%s%3N)" >>"$0"' "$dir/executions" \
      >/dev/null 2>>"$dir/errors.$id" || rc=$?
    t1=${EPOCHREALTIME/./}
    echo "$((t1 - t0)) $rc" >>"$dir/attempts.$id"
  done
}

wal_max=0
start=${EPOCHREALTIME/./}
deadline=$((start + total * 1000000))
for ((w = 0; w < workers; w++)); do worker "$w" "$deadline" & done
while ((${EPOCHREALTIME/./} < deadline)); do
  size=$(stat -c %s "$IDEM_DB-wal" 2>/dev/null || echo 0)
  ((size > wal_max)) && wal_max=$size
  sleep 0.5
done
wait

cat attempts.* >attempts
cat errors.* >errors 2>/dev/null || true
n_attempts=$(wc -l <attempts)
n_exec=$(wc -l <executions)
echo "workers=$workers keys=$keys seconds=$total ttl=${ttl_ms}ms"
echo "attempts: $n_attempts ($((n_attempts / total))/s); executions: $n_exec"
echo "exit codes:"; awk '{print $2}' attempts | sort | uniq -c | sed 's/^/  /'
fail=0
locked=$(grep -c 'database is locked' errors || true)
others=$(grep -vc 'is running in' errors || true)
echo "'database is locked' messages: $locked; other idem errors: $others"
((locked == 0 && others == 0)) || { fail=1; grep -v 'is running in' errors | sort | uniq -c | head; }
bad_codes=$(awk '$2 != 0 && $2 != 75' attempts | wc -l)
((bad_codes == 0)) || { echo "FAIL: $bad_codes attempts exited with neither 0 nor 75"; fail=1; }

# Once per TTL window: a key's next execution starts no earlier than TTL after the previous one
# finished, and (with 256 workers hammering) not much later either.
sort -k1,1 -k2,2n executions | awk -v ttl="$ttl_ms" '
  $1 == key { gap = $2 - end; if (gap < ttl) { early++; print "  early: " $1 " gap " gap "ms" }
              if (gap > maxgap) maxgap = gap }
  { key = $1; end = $3; per[$1]++ }
  END { n = 0; for (k in per) n++
        printf "keys executed: %d; executions per key: %.1f (ideal %.1f); largest gap %dms\n",
               n, NR / n, '"$total"' * 1000 / ttl, maxgap
        exit early > 0 }' || { echo "FAIL: a key ran twice within one TTL window"; fail=1; }

echo "WAL: largest seen $((wal_max / 1024)) KiB; now $(($(stat -c %s "$IDEM_DB-wal") / 1024)) KiB"
((wal_max < 64 * 1024 * 1024)) || { echo "FAIL: the WAL grew past 64 MiB"; fail=1; }
[[ $(sqlite3 "$IDEM_DB" 'PRAGMA integrity_check') == ok ]] || { echo "FAIL: integrity_check"; fail=1; }

pct() { sort -n | awk -v p="$1" '{v[NR]=$1} END {i=int(NR*p/100); if (i<1) i=1; printf "%.2f", v[i]/1000}'; }
p50=$(awk '$2 == 75 {print $1}' attempts | pct 50)
p99=$(awk '$2 == 75 {print $1}' attempts | pct 99)
echo "refused attempt (start + open + claim), under load: p50 ${p50} ms, p99 ${p99} ms"

# Reference, measured the same way without load: flock -n on a held lock vs idem refusing a
# running key. Ratios, not absolute times, are what compare across machines.
touch lock
flock lock sleep 30 &
"$idem_bin" run -k held -- sleep 30 &
sleep 0.5
quiet() {
  local n=300 t0 t1 i
  for ((i = 0; i < n; i++)); do
    t0=${EPOCHREALTIME/./}
    "$@" >/dev/null 2>&1 || true
    t1=${EPOCHREALTIME/./}
    echo $((t1 - t0))
  done
}
f50=$(quiet flock -n lock true | pct 50)
i50=$(quiet "$idem_bin" run -k held -- sleep 30 | pct 50)
echo "idle, refused: idem p50 ${i50} ms; flock -n p50 ${f50} ms; ratio idem/flock $(awk -v a="$i50" -v b="$f50" 'BEGIN {printf "%.2f", a / b}')"
exit $fail
