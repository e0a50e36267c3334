#!/usr/bin/env bash
# Following a running attempt (`idem tail -f`, the live feed of `idem run`), three rows:
#   1. write-to-display latency: a writer under `idem run` prints LINES lines, each the wall clock
#      in microseconds when it was written, one every ~10 ms; `idem tail -f` of that key is piped
#      to a reader that stamps each line's arrival. p50/p99/max of arrival - written, on a local
#      SQLite store (goal p99 <= 100 ms) and on PostgreSQL (a throwaway cluster of
#      scripts/pg_cluster.sh, --store URL; goal p99 <= 500 ms);
#   2. 8 followers: `idem run -k K -- sh -c 'head -c STREAM_BYTES /dev/zero'` (1 GiB, idem's
#      stdout to /dev/null) alone and with FOLLOWERS (8) `idem tail -f K` started as soon as the
#      key is running; A B A B, ROUNDS (3) of each; wall time and peak RSS (GNU time -f %M) of the
#      run, medians; goal: wall within 10%, RSS unchanged and <= 32 MiB; beside it the CPU
#      (user+sys, GNU time) of the run (idem, sh, head) and of the followers together, medians;
#   3. `idem run` without followers against the build before the feature (BASE_COMMIT, 82e6d52):
#      first run and replay of `true`, hyperfine -N as compare.sh's rows (ROUNDS rounds of RUNS
#      runs, order swapped every round), each binary on a store of its own; and first runs of
#      `head -c N MiB /dev/zero` for N in OUT_MIB (16 4), OUT_RUNS (30) runs a round, the same way
#      (the feed writes the captured part of an output: the first --max-output, 16 MiB, bytes).
# Usage: bench/follow.sh [IDEM_BIN [BASE_IDEM_BIN]]
#   IDEM_BIN defaults to build/idem (idem-pg beside it for the PostgreSQL row). Without
#   BASE_IDEM_BIN, BASE_COMMIT is built (Release, no tests) in a temporary worktree, removed at the
#   end. env: LAT_LINES (1000), STREAM_BYTES, FOLLOWERS, ROUNDS, RUNS (200), OUT_MIB, OUT_RUNS,
#   PG=0 (no PostgreSQL row), BASE=0 (no row 3).
set -euo pipefail
bench=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$bench/.." && pwd)
idem=$(realpath "${1:-$root/build/idem}")
base_bin=${2:-}
source "$bench/compare_lib.sh"
lines=${LAT_LINES:-1000}
stream_bytes=${STREAM_BYTES:-$((1 << 30))}
followers=${FOLLOWERS:-8}
rounds=${ROUNDS:-3}
runs=${RUNS:-200}
base_commit=${BASE_COMMIT:-82e6d52}
out_sizes=${OUT_MIB:-16 4}
out_runs=${OUT_RUNS:-30}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
for tool in hyperfine; do
  command -v "$tool" >/dev/null || { echo "follow.sh needs $tool (apt-get install $tool)"; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "follow.sh needs GNU time (apt-get install time)"; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-follow.XXXXXX")
pg_dir="" base_wt=""
cleanup() {
  local p
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  [[ -z $pg_dir ]] || "$root/scripts/pg_cluster.sh" stop "$pg_dir" || true
  [[ -z $base_wt ]] || git -C "$root" worktree remove --force "$base_wt" || true
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
export IDEM_DB=$dir/idem.db
rows=()
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); idem $("$idem" --version) ($idem)"
started=$(date -u '+%Y-%m-%d %H:%M UTC')

# The writer: waits for the file $1 (the follower is on), then LINES lines of its clock (µs).
cat >writer.sh <<'EOF'
until [ -e "$1" ]; do sleep 0.01; done
for ((i = 0; i < $2; i++)); do
  printf '%s\n' "${EPOCHREALTIME/./}"
  sleep 0.01
done
EOF
# The reader: each line as it comes, with its arrival (µs).
reader() { local l; while IFS= read -r l; do printf '%s %s\n' "$l" "${EPOCHREALTIME/./}"; done; }

# wait_running STORE_ARGS... -- KEY PID: until KEY's attempt runs (or PID, its run, is gone).
wait_running() {
  local key=$1 pid=$2; shift 2
  until [[ $("$idem" "$@" status "$key" 2>/dev/null) == running ]]; do
    kill -0 "$pid" 2>/dev/null || { echo "FAIL: the run of $key ended before it was seen running"; exit 1; }
    sleep 0.01
  done
}

# 1. latency NAME GOAL_MS [STORE_ARGS...]
latency() {
  local name=$1 goal=$2 key=lat-$1; shift 2
  echo "== write-to-display latency, $name: $lines lines, one every ~10 ms"
  rm -f "go-$name"
  "$idem" "$@" run -q -k "$key" -- bash "$dir/writer.sh" "$dir/go-$name" "$lines" \
    >/dev/null 2>"run-$name.err" &
  local rp=$!
  wait_running "$key" "$rp" "$@"
  { "$idem" "$@" tail -f "$key" 2>"tail-$name.err"; echo $? >"tail-$name.rc"; } | reader >"arrivals-$name" &
  local tp=$!
  sleep 0.3  # the follower's first look is done
  touch "go-$name"
  wait "$rp" || { cat "run-$name.err"; echo "FAIL: idem run ($name)"; exit 1; }
  wait "$tp"
  local rc got
  rc=$(<"tail-$name.rc") got=$(wc -l <"arrivals-$name")
  ((rc == 0 && got == lines)) ||
    { cat "tail-$name.err"; echo "FAIL: tail -f exited $rc with $got of $lines lines"; exit 1; }
  awk '{print $2 - $1}' "arrivals-$name" >"lat-$name"
  local p50 p99 max
  p50=$(pct 50 <"lat-$name") p99=$(pct 99 <"lat-$name") max=$(pct 100 <"lat-$name")
  echo "  p50 $p50 ms, p99 $p99 ms, max $max ms (load $(cut -d' ' -f1-3 /proc/loadavg))"
  rows+=("| write-to-display latency, $name ($lines lines) | p50 $p50 ms, p99 $p99 ms, max $max ms | p99 ≤ $goal ms | $(met "$p99" '<=' "$goal") |")
}

latency "SQLite" 100
if [[ ${PG:-1} != 0 ]]; then
  env=$("$root/scripts/pg_cluster.sh" start) || { echo "FAIL: pg_cluster.sh start"; exit 1; }
  eval "$env"
  pg_url=$IDEM_TEST_PG_URL pg_dir=$IDEM_TEST_PG_DIR
  unset IDEM_TEST_PG_URL IDEM_TEST_PG_DIR IDEM_TEST_PG_PID
  latency "PostgreSQL" 500 --store "$pg_url"
  "$root/scripts/pg_cluster.sh" stop "$pg_dir" || true
  pg_dir=""
fi

# 2. One run of STREAM_BYTES with N followers: prints "wall_us rss_kib max_follower_rss_kib
#    run_cpu_ms followers_cpu_ms" (CPU: user+sys of the process and its children, GNU time).
stream_run() {
  local n=$1 i=$2 key=big-$2 fps=() t0 t1 f j
  t0=$(now_us)
  /usr/bin/time -f "%M %U %S" -o "rss-$i" "$idem" run -q -k "$key" -- \
    sh -c "head -c $stream_bytes /dev/zero" >/dev/null 2>"big-$i.err" &
  local rp=$!
  wait_running "$key" "$rp"
  for ((j = 0; j < n; j++)); do
    /usr/bin/time -f "%M %U %S" -o "frss-$i-$j" "$idem" tail -f "$key" >/dev/null 2>"ftail-$i-$j.err" &
    fps+=($!)
  done
  wait "$rp" || { cat "big-$i.err"; echo "FAIL: idem run ($key)"; exit 1; }
  t1=$(now_us)
  for f in "${fps[@]}"; do wait "$f" || { cat ftail-"$i"-*.err; echo "FAIL: a follower of $key"; exit 1; }; done
  local fmax=0 fcpu=0 m u s
  for ((j = 0; j < n; j++)); do
    read -r m u s < <(tail -n 1 "frss-$i-$j")
    ((fmax >= m)) || fmax=$m
    fcpu=$(awk -v a="$fcpu" -v u="$u" -v s="$s" 'BEGIN {printf "%d", a + (u + s) * 1000}')
  done
  read -r m u s < <(tail -n 1 "rss-$i")
  echo "$((t1 - t0)) $m $fmax $(awk -v u="$u" -v s="$s" 'BEGIN {printf "%d", (u + s) * 1000}') $fcpu"
}
size="$((stream_bytes >> 20)) MiB"
((stream_bytes != 1 << 30)) || size="1 GiB"
echo "== $size through idem run, 0 vs $followers followers, $rounds runs each (A B A B)"
for ((r = 0; r < rounds; r++)); do
  a=$(stream_run 0 "a$r")
  echo "$a" >>stream-0
  echo "  0 followers: $(awk '{printf "%.2f s, RSS %.1f MiB, CPU %.2f s", $1 / 1e6, $2 / 1024, $4 / 1e3}' <<<"$a")"
  b=$(stream_run "$followers" "b$r")
  echo "$b" >>stream-n
  echo "  $followers followers: $(awk '{printf "%.2f s, RSS %.1f MiB, CPU %.2f s (followers up to %.1f MiB, CPU %.2f s together)", $1 / 1e6, $2 / 1024, $4 / 1e3, $3 / 1024, $5 / 1e3}' <<<"$b")"
done
w0=$(median $(cut -d' ' -f1 stream-0)) wn=$(median $(cut -d' ' -f1 stream-n))
m0=$(median $(cut -d' ' -f2 stream-0)) mn=$(median $(cut -d' ' -f2 stream-n))
fm=$(median $(cut -d' ' -f3 stream-n))
c0=$(median $(cut -d' ' -f4 stream-0)) cn=$(median $(cut -d' ' -f4 stream-n)) cf=$(median $(cut -d' ' -f5 stream-n))
w_ratio=$(ratio "$wn" "$w0") m_ratio=$(ratio "$mn" "$m0")
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
echo "  medians: wall $(ratio "$w0" 1000000) s vs $(ratio "$wn" 1000000) s ($w_ratio), RSS $(mib "$m0") vs $(mib "$mn") MiB ($m_ratio), CPU of the run $(ratio "$c0" 1000) s vs $(ratio "$cn" 1000) s, of the followers $(ratio "$cf" 1000) s"
ok=$(met "$w_ratio" '<=' 1.10)
[[ $ok == yes && $(met "$mn" '<=' $((32 * 1024))) == yes && $(met "$m_ratio" '<=' 1.05) == yes ]] || ok="**no**"
rows+=("| \`idem run\` of $size, $followers followers \`tail -f\` vs none ($rounds runs each, medians) | wall $(ratio "$wn" 1000000) s vs $(ratio "$w0" 1000000) s ($w_ratio×); peak RSS $(mib "$mn") vs $(mib "$m0") MiB ($m_ratio×); each follower ≤ $(mib "$fm") MiB; CPU of the run $(ratio "$cn" 1000) vs $(ratio "$c0" 1000) s, of the $followers followers $(ratio "$cf" 1000) s | wall ≤ 1.10×, RSS unchanged and ≤ 32 MiB | $ok |")

# 3. Against the build before the feature.
if [[ ${BASE:-1} != 0 ]]; then
  if [[ -z $base_bin ]]; then
    base_wt=$dir/base-src
    git -C "$root" worktree add --detach "$base_wt" "$base_commit" >/dev/null
    echo "== building $base_commit (Release) in $base_wt"
    cmake -S "$base_wt" -B "$base_wt/build" -DCMAKE_BUILD_TYPE=Release -DIDEM_TESTS=OFF \
      -DIDEM_POSTGRES=OFF >"$dir/base-build.log" 2>&1 &&
      cmake --build "$base_wt/build" -j2 --target idem >>"$dir/base-build.log" 2>&1 ||
      { tail -n 30 "$dir/base-build.log"; echo "FAIL: build of $base_commit"; exit 1; }
    base_bin=$base_wt/build/idem
  fi
  base_bin=$(realpath "$base_bin")
  echo "== idem run without followers: $("$idem" --version) vs the base $("$base_bin" --version) ($base_bin)"
  new_env="env IDEM_DB=$dir/new.db $idem" base_env="env IDEM_DB=$dir/base.db $base_bin"
  $new_env run -q -k finished -- true && $base_env run -q -k finished -- true
  $new_env run -q -k fresh -- true && $base_env run -q -k fresh -- true
  echo "-- replay of a finished key"
  hf_rounds replay "$new_env run -k finished -- true" "$base_env run -k finished -- true"
  rows+=("| replay of \`true\`, no followers | $HF_IDEM ms vs base $HF_PEER ms | ratio $HF_RATIO${HF_SPREAD:+ ($HF_SPREAD)} ≤ 1.05 | $(met "$HF_RATIO" '<=' 1.05) |")
  echo "-- $size through idem run, no followers, new and base alternating ($rounds runs each)"
  for ((r = 0; r < rounds; r++)); do
    a=$(stream_run 0 "c$r")
    echo "$a" >>stream-new
    b=$(IDEM_DB=$dir/base.db idem=$base_bin stream_run 0 "d$r")
    echo "$b" >>stream-base
    echo "  new $(awk '{printf "%.2f s, RSS %.1f MiB", $1 / 1e6, $2 / 1024}' <<<"$a"); base $(awk '{printf "%.2f s, RSS %.1f MiB", $1 / 1e6, $2 / 1024}' <<<"$b")"
  done
  w1=$(median $(cut -d' ' -f1 stream-new)) w2=$(median $(cut -d' ' -f1 stream-base))
  m1=$(median $(cut -d' ' -f2 stream-new)) m2=$(median $(cut -d' ' -f2 stream-base))
  rows+=("| \`idem run\` of $size, no followers, against the base ($rounds runs each, medians) | wall $(ratio "$w1" 1000000) s vs base $(ratio "$w2" 1000000) s ($(ratio "$w1" "$w2")×); peak RSS $(mib "$m1") vs base $(mib "$m2") MiB | none (context) | — |")
  # The captured part of a command's output (the default --max-output, 16 MiB) is what the feed
  # writes: a first run of OUT_MIB MiB each (record deleted before each run).
  for mib_out in $out_sizes; do
    echo "-- first run of head -c ${mib_out}MiB /dev/zero (record deleted before each, $out_runs runs a round)"
    bytes=$((mib_out << 20))
    $new_env run -q -k "out$mib_out" -- true && $base_env run -q -k "out$mib_out" -- true
    runs=$out_runs hf_rounds "out$mib_out" "$new_env run -q -k out$mib_out -- head -c $bytes /dev/zero" \
      "$base_env run -q -k out$mib_out -- head -c $bytes /dev/zero" \
      "$new_env rm out$mib_out" "$base_env rm out$mib_out"
    rows+=("| first run of \`head -c ${mib_out}MiB /dev/zero\`, no followers | $HF_IDEM ms vs base $HF_PEER ms | ratio $HF_RATIO${HF_SPREAD:+ ($HF_SPREAD)} ≤ 1.10 | $(met "$HF_RATIO" '<=' 1.10) |")
  done
  echo "-- first run of true (record deleted before each)"
  hf_rounds first "$new_env run -k fresh -- true" "$base_env run -k fresh -- true" \
    "$new_env rm fresh" "$base_env rm fresh"
  rows+=("| first run of \`true\`, no followers | $HF_IDEM ms vs base $HF_PEER ms | ratio $HF_RATIO${HF_SPREAD:+ ($HF_SPREAD)} ≤ 1.05 | $(met "$HF_RATIO" '<=' 1.05) |")
fi

echo
echo "Measured $started, idem $(git -C "$root" log -1 --format=%h -- src CMakeLists.txt 2>/dev/null || echo unknown); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| measure | result | goal | met |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
