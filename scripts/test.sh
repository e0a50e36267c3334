#!/usr/bin/env bash
# The whole test suite: installs the packages, builds with warnings as errors, runs every unit and
# end-to-end test through CTest and prints its summary. IDEM_SANITIZE=address (or 1) builds with
# ASan+UBSan (clang; the libFuzzer targets alongside), IDEM_SANITIZE=thread with TSan. Arguments
# go to ctest (e.g. -L unit).
# IDEM_BUILD_TARGETS="idem idem_unit_tests ..." builds only those targets (for a subset of the
# tests: the others would find no program); IDEM_BUILD_ONLY=1 builds and stops there (.ci/run
# builds a lane while another lane's tests run).
# The npm packages of tests/node (scripts/npm_deps.sh) are installed first: the proxy's tests
# drive a real Stripe SDK.
# The PostgreSQL tests run against a throwaway cluster of their own (scripts/pg_cluster.sh),
# stopped when this script ends however it ends; IDEM_TEST_PG_URL already set uses that server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/npm_deps.sh
build=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDEM_WERROR=ON -DIDEM_TESTS=ON -DIDEM_TEST_HOOKS=ON
  # Line tables only: what a backtrace needs, for a quarter less compile time than full -g.
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
# A unity build (the files of a target compiled sixteen at a time) compiles the suite in half the
# CPU time of one file at a time: the headers (CLI11, nlohmann/json, Catch2, the standard
# library) are parsed once per batch. IDEM_UNITY=0 builds file by file (what a change to one
# file rebuilds fastest).
if [[ ${IDEM_UNITY:-1} != 0 ]]; then
  flags+=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
else
  flags+=(-DCMAKE_UNITY_BUILD=OFF)
fi
case "${IDEM_SANITIZE:-}" in
  "" | 0) ;;
  1 | address)
    build=build-asan
    # clang, with the libFuzzer targets in the same build (IDEM_FUZZ: the code is instrumented
    # for coverage too, and fuzz/run.sh runs the targets from here with FUZZ_PREBUILT=1): one
    # build for the ASan lane and the fuzzing instead of two (about 340 CPU-seconds instead of
    # 650 from cold). Warnings are enforced by the plain build (GCC, -Werror).
    scripts/deps.sh clang libclang-rt-14-dev
    export CC=${IDEM_ASAN_CC:-clang} CXX=${IDEM_ASAN_CXX:-clang++}
    flags+=(-DIDEM_SANITIZE=ON -DIDEM_FUZZ=ON -DIDEM_WERROR=OFF)
    # A build-asan/ configured with GCC (before the lane moved to clang) cannot change compilers.
    if [[ -f $build/CMakeCache.txt ]] && ! grep -q '^IDEM_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
      rm -rf "$build"
    fi
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # LeakSanitizer's exit scan is half of a short idem run under ASan: it scans the daemon (and
    # the unit binary) only, unless IDEM_LEAK_CHECK=all (src/main.cpp).
    export IDEM_LEAK_CHECK=${IDEM_LEAK_CHECK:-daemon}
    ;;
  thread)
    build=build-tsan
    flags+=(-DIDEM_TSAN=ON -DIDEM_WERROR=OFF)
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(pwd)/scripts/tsan.supp"
    ;;
  *) echo "IDEM_SANITIZE must be address (or 1) or thread" >&2; exit 64 ;;
esac
if [[ $build != build ]]; then
  # A sanitizer build at -O1 with line tables only (what its reports need) compiles in half the
  # time of -O2 -g, and -O1 is what the sanitizers' own docs advise.
  flags+=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
fi
cmake -S . -B "$build" "${flags[@]}" >/dev/null
targets=()
read -r -a targets <<<"${IDEM_BUILD_TARGETS:-}"
cmake --build "$build" -j"$(nproc)" ${targets[@]+--target "${targets[@]}"}
[[ ${IDEM_BUILD_ONLY:-0} == 0 ]] || exit 0
if [[ -z ${IDEM_TEST_PG_URL:-} ]]; then
  pg_cluster=$(pwd)/scripts/pg_cluster.sh  # the trap runs after the cd below
  pg_env=$("$pg_cluster" start)
  eval "$pg_env"
  trap '"$pg_cluster" stop "$IDEM_TEST_PG_DIR"' EXIT
  trap 'exit 130' INT TERM
  echo "PostgreSQL test cluster: $IDEM_TEST_PG_URL (pid $IDEM_TEST_PG_PID)"
fi
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
