# shellcheck shell=bash
# The CLI rows of bench/compare.sh: hyperfine -N, idem and its peer in each invocation.

# Replay of a finished key against `flock -n` on a free lock (both: start, open, one check, exit).
bench_replay() {
  echo "== replay of a finished key: idem run -k finished -- true  vs  flock -n L true"
  "$idem" run -q -k finished -- true
  touch "$dir/L"
  hf_rounds replay "$idem run -k finished -- true" "flock -n $dir/L true"
  row "replay of a finished key" "$HF_IDEM ms" "\`flock -n L true\` $HF_PEER ms" \
    "$HF_RATIO${HF_SPREAD:+ ($HF_SPREAD)}" "≤ 0.7× flock" "$(met "$HF_RATIO" '<=' 0.7)"
}

# First run of `true`: every timed run is a new claim on the same store (the prepare step, not
# timed, deletes the record of the previous one). The store's durability is as shipped.
bench_first_run() {
  echo "== first run of true: idem run -k fresh -- true (record deleted before each)  vs  flock -n L true"
  "$idem" run -q -k fresh -- true
  hf_rounds first "$idem run -k fresh -- true" "flock -n $dir/L true" "$idem rm fresh" "true"
  row "first run of \`true\` (claim and outcome durable)" "$HF_IDEM ms" "flock $HF_PEER ms" \
    "$HF_RATIO${HF_SPREAD:+ ($HF_SPREAD)}" "≤ 1.3× flock" "$(met "$HF_RATIO" '<=' 1.3)"
}

bench_version() {
  echo "== idem --version  vs  true"
  hf_rounds version "$idem --version" "true"
  row "\`idem --version\`" "$HF_IDEM ms" "\`true\` $HF_PEER ms" "$HF_RATIO${HF_SPREAD:+ ($HF_SPREAD)}" \
    "≤ 1.5× \`true\`" "$(met "$HF_RATIO" '<=' 1.5)"
}

# Streaming: a command writes STREAM_BYTES through `idem run` (default 16 MiB cap on what is
# stored); idem's peak RSS (GNU time's %M: the largest resident set of idem and its child), and
# the wall time beside the same stream piped without idem.
bench_stream() {
  local size="$((stream_bytes >> 20)) MiB"
  ((stream_bytes != 1 << 30)) || size="1 GiB"
  echo "== idem run streaming $size: peak RSS"
  local t0 t1 t2 n rss
  t0=$(now_us)
  n=$(/usr/bin/time -f %M -o "$dir/rss" "$idem" run -q -k stream -- head -c "$stream_bytes" /dev/zero | wc -c)
  t1=$(now_us)
  head -c "$stream_bytes" /dev/zero | wc -c >/dev/null
  t2=$(now_us)
  ((n == stream_bytes)) || { echo "FAIL: $n bytes came through, not $stream_bytes"; exit 1; }
  rss=$(awk '{printf "%.1f", $1 / 1024}' "$dir/rss")
  local ti tp
  ti=$(awk -v us=$((t1 - t0)) 'BEGIN {printf "%.2f", us / 1e6}')
  tp=$(awk -v us=$((t2 - t1)) 'BEGIN {printf "%.2f", us / 1e6}')
  echo "  peak RSS $rss MiB; $ti s through idem, $tp s without"
  row "\`idem run\` streaming $size (16 MiB cap)" "peak RSS $rss MiB, $ti s" \
    "\`head \| wc\` $tp s" "time $(ratio "$ti" "$tp")" "RSS ≤ 32 MiB" "$(met "$rss" '<=' 32)"
}
