#!/usr/bin/env bash
# The idem a benchmark measures: the binary given as $1 (printed as an absolute path), else a
# Release build without the test hooks made in build-bench/ (its path printed once it is built).
#   idem=$("$root/bench/idem_binary.sh" "$@")
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if (($# > 0)); then
  realpath "$1"
  exit 0
fi
cmake -S "$root" -B "$root/build-bench" -DCMAKE_BUILD_TYPE=Release -DIDEM_TESTS=OFF >/dev/null
cmake --build "$root/build-bench" -j"$(nproc)" --target idem >/dev/null
echo "$root/build-bench/idem"
