#!/usr/bin/env bash
# Builds idem's libFuzzer targets with clang and runs each for SECONDS (default 15) on a copy of
# its seed corpus (fuzz/corpus/<target>/, never written to). Exits non-zero if any target
# crashes, naming it and keeping the crashing input.
#
#   fuzz/run.sh [SECONDS]
#
# Environment: FUZZ_BUILD=dir to build in (and reuse) a given directory instead of a temporary
# one; FUZZ_TARGETS="key base64" to run only some targets; FUZZ_CC/FUZZ_CXX for another clang;
# FUZZ_BUILD_ONLY=1 to build the targets and stop; FUZZ_PREBUILT=1 to run the targets already
# built in FUZZ_BUILD without configuring or building (.ci/run: the ASan lane's build, which
# scripts/test.sh configures with clang and IDEM_FUZZ, holds them); FUZZ_JOBS=N to run N targets
# at a time.
# Needs cmake, idem's build dependencies, clang and the libFuzzer runtime (Debian 12:
# apt install clang libclang-rt-14-dev). Installs nothing itself.
set -euo pipefail

seconds=${1:-15}
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds == 0)); then
  echo "usage: fuzz/run.sh [SECONDS]  (a whole number of seconds per target)" >&2
  exit 2
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
cc=${FUZZ_CC:-clang}
cxx=${FUZZ_CXX:-clang++}

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz/run.sh: $cxx not found; on Debian: apt install clang libclang-rt-14-dev" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/idem-fuzz.XXXXXX")
build=${FUZZ_BUILD:-$work/build}

# A missing libFuzzer runtime otherwise shows up as a link error deep in the build log.
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
  >"$work/probe.cpp"
if ! "$cxx" -fsanitize=fuzzer "$work/probe.cpp" -o "$work/probe" 2>"$work/probe.log"; then
  cat "$work/probe.log" >&2
  echo "fuzz/run.sh: $cxx cannot link libFuzzer; on Debian: apt install libclang-rt-14-dev" >&2
  rm -rf "$work"
  exit 2
fi

targets=()
if [[ -n ${FUZZ_TARGETS:-} ]]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  for source in "$here"/fuzz_*.cpp; do
    name=${source##*/fuzz_}
    targets+=("${name%.cpp}")
  done
fi

if [[ ${FUZZ_PREBUILT:-0} != 0 ]]; then
  [[ -n ${FUZZ_BUILD:-} ]] || { echo "fuzz/run.sh: FUZZ_PREBUILT needs FUZZ_BUILD" >&2; exit 2; }
  for name in "${targets[@]}"; do
    [[ -x $build/fuzz/fuzz_$name ]] ||
      { echo "fuzz/run.sh: $build/fuzz/fuzz_$name is not built" >&2; rm -rf "$work"; exit 2; }
  done
else
  echo "== building ${targets[*]} in $build"
  if ! CC=$cc CXX=$cxx cmake -S "$root" -B "$build" -DIDEM_FUZZ=ON -DIDEM_TESTS=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >"$work/configure.log" 2>&1; then
    cat "$work/configure.log" >&2
    echo "fuzz/run.sh: configuring failed (log kept in $work)" >&2
    exit 2
  fi
  if ! cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}" >"$work/build.log" 2>&1
  then
    tail -n 50 "$work/build.log" >&2
    echo "fuzz/run.sh: building failed (log kept in $work)" >&2
    exit 2
  fi
fi

if [[ ${FUZZ_BUILD_ONLY:-0} != 0 ]]; then
  rm -rf "$work"
  exit 0
fi

# Halt at undefined behaviour so it counts as a crash (the targets also set this as their
# default; the library of fuzz/run.sh's own build has recoverable UBSan).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# fuzz_one NAME: runs one target on its corpus; its report goes to $work/NAME.report, and
# $work/NAME.crashed exists if it crashed.
fuzz_one() {
  local name=$1 corpus="$work/corpus/$1" log="$work/$1.log" runs rate inputs
  mkdir -p "$corpus"
  if [[ -d $here/corpus/$name ]]; then cp -R "$here/corpus/$name/." "$corpus/"; fi
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$work/artifacts/$name-")
  if [[ -f $here/dict/$name.dict ]]; then args+=(-dict="$here/dict/$name.dict"); fi
  {
    echo "== fuzz_$name for ${seconds}s"
    if "$build/fuzz/fuzz_$name" "${args[@]}" "$corpus" >"$log" 2>&1; then
      runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
      rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
      echo "   ok: ${runs:-?} runs, ${rate:-?} exec/s, corpus $(find "$corpus" -type f | wc -l) inputs"
    else
      touch "$work/$name.crashed"
      tail -n 40 "$log" | sed 's/^/   | /'
      inputs=$(find "$work/artifacts" -name "$name-*")
      echo "   CRASHED: fuzz_$name; input: ${inputs:-(none saved)}"
    fi
  } >"$work/$name.report"
}

# FUZZ_JOBS targets at a time (default 1; each takes one core for its SECONDS); the reports are
# printed in the targets' order.
jobs=${FUZZ_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz/run.sh: FUZZ_JOBS must be a whole number >= 1" >&2; exit 2; }
mkdir -p "$work/artifacts"
running=0
for name in "${targets[@]}"; do
  if ((running == jobs)); then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$name" &
  running=$((running + 1))
done
wait
failed=()
for name in "${targets[@]}"; do
  cat "$work/$name.report"
  if [[ -e $work/$name.crashed ]]; then failed+=("$name"); fi
done

if ((${#failed[@]} > 0)); then
  echo "fuzz/run.sh: crashed: ${failed[*]} (logs, corpora and inputs kept in $work;" \
    "reproduce with $build/fuzz/fuzz_<target> <input>)" >&2
  exit 1
fi
rm -rf "$work"
echo "fuzz/run.sh: all ${#targets[@]} targets ran ${seconds}s each without a crash"
