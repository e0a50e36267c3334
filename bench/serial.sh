#!/usr/bin/env bash
# Serial groups (contract §9) under load, three rows:
#   1. the 202 of a queued delivery with QUEUED (10,000) already waiting in its group: wrk -t2
#      -c20 for WRK_SECONDS on new keys of the held group; p99 (goal <= 10 ms);
#   2. the drain: the whole line (the QUEUED and what row 1 added) released at once and run one
#      at a time; its rate beside the same hook without a group answering deliveries sent one at a
#      time (wrk -t1 -c1: each waits for its answer); goal >= 0.9 of it;
#   3. `idem ls --limit 20` on a store of RECORDS (1,000,000) records, then with 10,000 queued
#      added to it (hyperfine -N, 30 runs each): the first page must not slow down.
# Every handler is the same small sh script (hold the group while a fifo is closed, else exit 0).
# The daemon listens on 127.0.0.1 on a port it picks and is stopped by its pid whatever happens.
# Usage: bench/serial.sh [IDEM_BIN]   (env: QUEUED, WRK_SECONDS, RECORDS)
set -euo pipefail
bench=$(cd "$(dirname "$0")" && pwd)
idem_bin=$(realpath "${1:-$bench/../build/idem}")
idem=$idem_bin
source "$bench/compare_lib.sh"
source "$bench/store_fill.sh"
source "$bench/compare_serve.sh"
queued=${QUEUED:-10000}
wrk_s=${WRK_SECONDS:-10}
records=${RECORDS:-1000000}
for tool in wrk curl hyperfine sqlite3; do
  command -v "$tool" >/dev/null || { echo "serial.sh needs $tool (apt-get install $tool)"; exit 1; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-serial.XXXXXX")
pid=""
cleanup() {
  [[ -z $pid ]] || kill "$pid" 2>/dev/null || true
  [[ ! -p $dir/hold ]] || { exec 9<>"$dir/hold"; exec 9>&-; } 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
export IDEM_DB=$dir/idem.db

serve_files  # wrk's new.lua: every request a new X-Delivery (its serve.json replaced below)
cat >handler.sh <<EOF
#!/bin/sh
[ "\$IDEM_HEADER_X_DELIVERY" = hold ] && read x < "$dir/hold"
exit 0
EOF
chmod +x handler.sh
cat >serve.json <<EOF
{"hooks": [
  {"path": "/q", "command": ["$dir/handler.sh"], "key": {"header": "X-Delivery"},
   "serial": {"max_pending": 1000000}},
  {"path": "/plain", "command": ["$dir/handler.sh"], "key": {"header": "X-Delivery"}}
]}
EOF
"$idem_bin" serve --config serve.json --listen 127.0.0.1:0 --port-file port 2>serve.log &
pid=$!
while [[ ! -s port ]]; do kill -0 "$pid" || { cat serve.log; exit 1; }; sleep 0.05; done
url=http://127.0.0.1:$(<port)
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); idem $("$idem_bin" --version)"

queued_now() { "$idem_bin" ls --status queued --keys | wc -l; }
# Whether anything waits or runs: one key read each, so the watching costs the drain nothing.
line_busy() {
  [[ -n $("$idem_bin" ls --status queued --keys --limit 1) ]] ||
    [[ -n $("$idem_bin" ls --status running --keys --limit 1) ]]
}

# 1. Hold the group, fill its line with QUEUED deliveries (one curl, 50 at a time), then time
#    new ones joining it.
mkfifo hold
curl -s -o /dev/null -H 'X-Delivery: hold' -d x "$url/q" &
until [[ $("$idem_bin" status /q#hold 2>/dev/null) == running ]]; do sleep 0.05; done
for ((i = 0; i < queued; i++)); do
  ((i == 0)) || echo next
  printf 'url = "%s/q"\nheader = "X-Delivery: fill-%d"\ndata = "x"\noutput = /dev/null\n' "$url" "$i"
done >fill.cfg
t0=$(now_us)
curl -s --no-progress-meter -Z --parallel-max 50 -K fill.cfg
echo "filled $queued queued deliveries in $((($(now_us) - t0) / 1000)) ms ($(queued_now) waiting)"
wrk -t2 -c20 -d"${wrk_s}s" --latency -s new.lua "$url/q" -- join >wrk-join.out
p99=$(awk '$1 == "99%" {v = $2; if (v ~ /us$/) v = v / 1000; else if (v ~ /ms$/) v = v + 0; else v = v * 1000; printf "%.2f", v}' wrk-join.out)
joined=$(awk '/requests in/ {print $1}' wrk-join.out)
non2xx=$(awk '/Non-2xx/ {print $NF}' wrk-join.out)
line=$(queued_now)
echo "row 1: $joined more joined a line of $queued, 202 p99 $p99 ms (goal <= 10), non-2xx ${non2xx:-0};" \
  "$(awk '/Requests\/sec/ {print $2}' wrk-join.out) req/s"

# 2. Release the line and time its drain; then the same deliveries one at a time, no group.
t0=$(now_us)
exec 9>hold
exec 9>&-
while line_busy; do sleep 0.1; done
drain_ms=$((($(now_us) - t0) / 1000))
drain_rate=$(awk -v n="$line" -v ms="$drain_ms" 'BEGIN {printf "%.0f", n * 1000 / ms}')
wrk -t1 -c1 -d"${wrk_s}s" -s new.lua "$url/plain" -- alone >wrk-alone.out
alone_rate=$(awk '/Requests\/sec/ {printf "%.0f", $2}' wrk-alone.out)
echo "row 2: drained $line in $drain_ms ms: $drain_rate/s; one at a time without a group:" \
  "$alone_rate/s; ratio $(ratio "$drain_rate" "$alone_rate") (goal >= 0.9)"
kill "$pid"
wait "$pid" || true
pid=""

# 3. The first page of ls on RECORDS records, then with 10,000 queued among them.
make_store big.db "$records"
hyperfine -N --style basic --warmup 3 --runs 30 --export-csv ls-before.csv \
  "$idem_bin --db big.db ls --limit 20" >/dev/null
sqlite3 big.db >/dev/null <<SQL
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 10000)
INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                     owner_pid, owner_start, started_at, ttl_ms, request, serial_group, queue_seq)
SELECT printf('/q#queued-%05d', i), printf('%064d', i), 'http', 'queued', 1, 'elsewhere', 'boot',
       1, 1, 1800000000000 + i, 86400000, '{"body_b64":""}', '/q#', i
FROM n;
SQL
hyperfine -N --style basic --warmup 3 --runs 30 --export-csv ls-after.csv \
  "$idem_bin --db big.db ls --limit 20" >/dev/null
before=$(awk -F, 'NR == 2 {printf "%.2f", $4 * 1000}' ls-before.csv)
after=$(awk -F, 'NR == 2 {printf "%.2f", $4 * 1000}' ls-after.csv)
echo "row 3: ls --limit 20 on $(commas "$records") records: $before ms; with 10,000 queued among" \
  "them: $after ms; ratio $(ratio "$after" "$before") (goal: the same time)"
