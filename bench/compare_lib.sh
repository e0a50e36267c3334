# shellcheck shell=bash
# Helpers of bench/compare.sh: clocks, percentiles, goal checks, the result table, hyperfine.

now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }

# pct P: the P-th percentile (nearest rank) of the microsecond values on stdin, in ms.
pct() {
  sort -n | awk -v p="$1" '{v[NR] = $1}
    END {if (NR == 0) {print "n/a"; exit} i = int(NR * p / 100 + 0.999); if (i < 1) i = 1
         if (i > NR) i = NR; printf "%.2f", v[i] / 1000}'
}

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# median_row LABEL VALUE...: a table row of LABEL, the values' median and each value in order.
median_row() { local label=$1; shift; echo "| $label | $(median "$@") | $* |"; }

# commas N: N with thousands separators (1000000 -> 1,000,000).
commas() { echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }

# ratio A B: A / B with two decimals ("n/a" when either is missing or B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"; else printf "%.2f", a / b}'; }

# met VALUE OP LIMIT: "yes" when VALUE OP LIMIT holds (OP is <= or >=), else "**no**".
met() {
  awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
    ok = (v != "n/a") && ((op == "<=" && v + 0 <= l + 0) || (op == ">=" && v + 0 >= l + 0))
    print ok ? "yes" : "**no**"}'
}

# row MEASURE IDEM PEER RATIO GOAL MET: prints the result and keeps it for the final table.
row() {
  printf '  => %s: idem %s; peer %s; ratio %s; goal %s: %s\n' "$1" "$2" "$3" "$4" "$5" "${6//\*/}"
  rows+=("| $1 | $2 | $3 | $4 | $5 | $6 |")
}

commit_of() {
  local c
  # The last commit that changed what is built (the bench scripts and docs do not count).
  c=$(git -C "$root" log -1 --format=%h -- src CMakeLists.txt 2>/dev/null) || { echo "unknown"; return; }
  git -C "$root" diff --quiet HEAD -- src CMakeLists.txt 2>/dev/null || c="$c+changes"
  echo "$c"
}

machine_line() {
  local cpu os
  cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
  os=$(. /etc/os-release && echo "$PRETTY_NAME")
  machine="$(nproc) cores ($cpu), $os, kernel $(uname -r)"
  echo "machine: $machine"
  echo "idem: $idem ($("$idem" --version)), source $(commit_of)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "sizes: rounds=$rounds runs=$runs wrk=${wrk_s}s workers=$workers contend=${contend_s}s" \
    "stream=$((stream_bytes >> 20))MiB records=$records"
  started=$(date -u '+%Y-%m-%d %H:%M UTC')
}

# hf_rounds NAME IDEM_CMD PEER_CMD [IDEM_PREPARE PEER_PREPARE]: ROUNDS hyperfine -N invocations,
# each timing both commands (their order alternating from one round to the next). Sets HF_IDEM
# and HF_PEER (ms, the median over rounds of each round's median) and HF_RATIO (the median of the
# rounds' ratios) and HF_SPREAD (the lowest and highest ratio).
hf_rounds() {
  local name=$1 icmd=$2 pcmd=$3 iprep=${4:-} pprep=${5:-} r args csv ratios=() is=() ps=()
  for ((r = 0; r < rounds; r++)); do
    csv=$dir/hf-$name-$r.csv
    if ((r % 2 == 0)); then args=(-n idem "$icmd" -n peer "$pcmd"); else args=(-n peer "$pcmd" -n idem "$icmd"); fi
    local prep=()
    if [[ -n $iprep ]]; then
      if ((r % 2 == 0)); then prep=(--prepare "$iprep" --prepare "$pprep"); else prep=(--prepare "$pprep" --prepare "$iprep"); fi
    fi
    hyperfine -N --style basic --warmup $((runs / 10 + 1)) --runs "$runs" "${prep[@]}" \
      --export-csv "$csv" "${args[@]}" >"$dir/hf-$name-$r.out" 2>&1 ||
      { cat "$dir/hf-$name-$r.out"; echo "FAIL: hyperfine ($name)"; exit 1; }
    local i p
    i=$(awk -F, '$1 == "idem" {printf "%.3f", $4 * 1000}' "$csv")
    p=$(awk -F, '$1 == "peer" {printf "%.3f", $4 * 1000}' "$csv")
    is+=("$i") ps+=("$p") ratios+=("$(ratio "$i" "$p")")
    echo "  round $((r + 1)): idem $i ms, peer $p ms, ratio ${ratios[-1]}"
  done
  HF_IDEM=$(median "${is[@]}" | awk '{printf "%.2f", $1}')
  HF_PEER=$(median "${ps[@]}" | awk '{printf "%.2f", $1}')
  HF_RATIO=$(median "${ratios[@]}")
  HF_SPREAD=$(printf '%s\n' "${ratios[@]}" | sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {print (lo == hi) ? "" : lo "–" hi}')
}

print_table() {
  echo
  echo "Measured $started on $machine; idem $(commit_of); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "| measure | idem | peer | ratio | goal | met |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
}
