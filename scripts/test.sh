#!/usr/bin/env bash
# The whole test suite: installs the packages, builds with warnings as errors, runs every unit and
# end-to-end test through CTest and prints its summary. IDEM_SANITIZE=1 builds with ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
build=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDEM_WERROR=ON -DIDEM_TESTS=ON -DIDEM_TEST_HOOKS=ON)
if [ "${IDEM_SANITIZE:-0}" = 1 ]; then
  build=build-asan
  # Warnings are enforced by the plain build; GCC 12's -Wmaybe-uninitialized has false positives
  # inside libstdc++ once sanitizers change inlining.
  flags+=(-DIDEM_SANITIZE=ON -DIDEM_WERROR=OFF)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
cmake -S . -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
