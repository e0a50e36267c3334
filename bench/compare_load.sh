# shellcheck shell=bash
# The load rows of bench/compare.sh: WORKERS concurrent loops (contention) and a store of RECORDS
# records (scale).

# contend_loop TOOL MODE ID DEADLINE: back-to-back attempts until DEADLINE (µs); logs
# "start_us end_us exit" per attempt to att.TOOL.MODE.ID. The command is `date +%s%6N` (it
# prints when it started, appended to out.TOOL.MODE.ID, so start-to-command is the claim).
# distinct: a new key (idem) or a new lock file (flock) per attempt; shared: one key with a
# 200 ms TTL (runs again and again, replays in between), one lock file taken with -n.
contend_loop() {
  local tool=$1 mode=$2 id=$3 deadline=$4 n=0 t0 rc tag=$1.$2.$3
  local att=$dir/contend/att.$tag out=$dir/contend/out.$tag err=$dir/contend/err.$tag
  while (($(now_us) < deadline)); do
    n=$((n + 1))
    t0=$(now_us)
    rc=0
    case $tool.$mode in
      idem.distinct) "$idem" run -q -k "c-$id-$n" -- date +%s%6N >>"$out" 2>>"$err" || rc=$? ;;
      idem.shared) "$idem" run -q --quiet-replay --ttl 200ms -k shared -- date +%s%6N >>"$out" 2>>"$err" || rc=$? ;;
      flock.distinct) flock "$dir/contend/lock-$id-$n" date +%s%6N >>"$out" 2>>"$err" || rc=$? ;;
      flock.shared) flock -n "$dir/contend/lock-shared" date +%s%6N >>"$out" 2>>"$err" || rc=$? ;;
    esac
    echo "$t0 $(now_us) $rc" >>"$att"
  done
}

# contend_stats TOOL MODE: sets C_RATE (attempts/s), C_P50/C_P99 (start to exit, ms), C_CL50/
# C_CL99 (start to command, ms; distinct keys, where every attempt runs), C_CODES, C_BUSY.
contend_stats() {
  local t=$1.$2 f
  cat "$dir"/contend/att."$t".* >"$dir/contend/att.$t"
  cat "$dir"/contend/err."$t".* >"$dir/contend/err.$t" 2>/dev/null || : >"$dir/contend/err.$t"
  C_RATE=$(awk -v s="$contend_s" 'END {printf "%.0f", NR / s}' "$dir/contend/att.$t")
  C_P50=$(awk '{print $2 - $1}' "$dir/contend/att.$t" | pct 50)
  C_P99=$(awk '{print $2 - $1}' "$dir/contend/att.$t" | pct 99)
  C_CODES=$(awk '{c[$3]++} END {for (k in c) printf "%s exit %s, ", c[k], k}' "$dir/contend/att.$t")
  C_BUSY=$(( $(grep -ci 'locked\|busy' "$dir/contend/err.$t" || true) + $(awk '$3 == 74' "$dir/contend/att.$t" | wc -l) ))
  C_CL50=n/a C_CL99=n/a
  if [[ $2 == distinct ]]; then
    for f in "$dir"/contend/att."$t".*; do paste -d' ' "$f" "${f/att./out.}"; done |
      awk 'NF == 4 {print $4 - $1}' >"$dir/contend/claim.$t"
    C_CL50=$(pct 50 <"$dir/contend/claim.$t")
    C_CL99=$(pct 99 <"$dir/contend/claim.$t")
  fi
  echo "  $1: ${C_RATE}/s (${C_CODES%, }); attempt p50 $C_P50 ms, p99 $C_P99 ms;" \
    "claim p50 $C_CL50 ms, p99 $C_CL99 ms; busy errors $C_BUSY"
}

# bench_contention MODE: WORKERS loops of idem, then of flock, for CONTEND_SECONDS each.
bench_contention() {
  local mode=$1 tool w deadline
  echo "== contention: $workers workers, $mode keys, ${contend_s}s each: idem run vs flock"
  mkdir -p "$dir/contend"
  for tool in idem flock; do
    deadline=$(($(now_us) + contend_s * 1000000))
    for ((w = 0; w < workers; w++)); do contend_loop "$tool" "$mode" "$w" "$deadline" & done
    wait
    contend_stats "$tool" "$mode"
    eval "${tool}_rate=\$C_RATE ${tool}_p99=\$C_P99 ${tool}_cl50=\$C_CL50 ${tool}_cl99=\$C_CL99 ${tool}_busy=\$C_BUSY"
  done
  local what="claim p50 $idem_cl50 ms, p99 $idem_cl99 ms" peer="claim p50 $flock_cl50 ms, p99 $flock_cl99 ms"
  [[ $mode == distinct ]] || { what="attempt p99 $idem_p99 ms"; peer="attempt p99 $flock_p99 ms"; }
  local unit=runs/s
  [[ $mode == distinct ]] || unit=attempts/s
  local label="distinct keys"
  [[ $mode == distinct ]] || label="one shared key (200 ms TTL)"
  row "$workers workers, $label" "$idem_rate $unit, $what, $idem_busy busy errors" \
    "\`flock\` $flock_rate $unit, $peer" "$(ratio "$idem_rate" "$flock_rate")× $unit" \
    "0 busy errors" "$( ((idem_busy == 0)) && echo yes || echo '**no**')"
}

# scale_loop ID: runs of new keys on the big store until scale/gc.done exists.
scale_loop() {
  local i=0 t0 rc
  while [[ ! -e $dir/scale/gc.done ]]; do
    t0=$(now_us)
    rc=0
    "$idem" --db "$dir/scale/big.db" run -q -k "probe-$1-$i" -- true 2>>"$dir/scale/err.$1" || rc=$?
    echo "$(($(now_us) - t0)) $rc" >>"$dir/scale/runs.$1"
    i=$((i + 1))
  done
}

# bench_scale: ls's first page on RECORDS records beside 1,000 (hyperfine), runs on the idle big
# store, then gc with two loops of runs alongside (every run must exit 0).
bench_scale() {
  echo "== scale: a store of $records records (half expired) beside one of 1,000"
  mkdir -p "$dir/scale"
  local t0 i
  t0=$(now_us)
  idem_bin=$idem make_store "$dir/scale/big.db" "$records"
  idem_bin=$idem make_store "$dir/scale/small.db" 1000
  echo "  stores filled in $((($(now_us) - t0) / 1000)) ms"
  hf_rounds ls "$idem --db $dir/scale/big.db ls --limit 20" "$idem --db $dir/scale/small.db ls --limit 20"
  row "\`ls\` first page (\`--limit 20\`), $(commas "$records") records" "$HF_IDEM ms" "1,000 records $HF_PEER ms" \
    "$HF_RATIO${HF_SPREAD:+ ($HF_SPREAD)}" "≤ 1.5× (size-independent)" "$(met "$HF_RATIO" '<=' 1.5)"
  for ((i = 0; i < 50; i++)); do
    t0=$(now_us)
    "$idem" --db "$dir/scale/big.db" run -q -k "idle-$i" -- true
    echo "$(($(now_us) - t0))" >>"$dir/scale/idle"
  done
  local idle99 gc_ms gc_rc=0 l
  idle99=$(pct 99 <"$dir/scale/idle")
  for l in 0 1; do scale_loop "$l" & done
  while [[ ! -s $dir/scale/runs.0 ]]; do sleep 0.01; done
  t0=$(now_us)
  "$idem" --db "$dir/scale/big.db" gc >"$dir/scale/gc.out" 2>&1 || gc_rc=$?
  gc_ms=$((($(now_us) - t0) / 1000))
  touch "$dir/scale/gc.done"
  wait
  cat "$dir"/scale/runs.? >"$dir/scale/runs"
  local n failed p50 p99
  n=$(wc -l <"$dir/scale/runs")
  failed=$(awk '$2 != 0' "$dir/scale/runs" | wc -l)
  p50=$(awk '{print $1}' "$dir/scale/runs" | pct 50)
  p99=$(awk '{print $1}' "$dir/scale/runs" | pct 99)
  echo "  gc: exit $gc_rc in $gc_ms ms ($(tr '\n' ' ' <"$dir/scale/gc.out")); runs alongside: $n," \
    "failed $failed, p50 $p50 ms, p99 $p99 ms; idle p99 $idle99 ms"
  ((failed == 0)) || sort "$dir"/scale/err.? | uniq -c | head -5
  row "\`gc\` of $(commas $((records / 2))) expired among $(commas "$records"), 2 loops of runs alongside" \
    "gc $(awk -v ms="$gc_ms" 'BEGIN {printf "%.1f", ms / 1000}') s; $n runs, $failed failed, p99 $p99 ms" \
    "runs on the idle store: p99 $idle99 ms" "p99 $(ratio "$p99" "$idle99")×" "gc ≤ 15 s, 0 failed runs, exit 0" \
    "$( ((failed == 0 && gc_rc == 0 && gc_ms <= 15000)) && echo yes || echo '**no**')"
}
