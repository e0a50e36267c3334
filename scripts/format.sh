#!/usr/bin/env bash
# The C++ sources in .clang-format's style (Debian 12's clang-format): formats them in place, or
# with --check names each file that differs and fails (CI's "format" lane).
#   bash scripts/format.sh          # format every tracked .cpp/.hpp/.h
#   bash scripts/format.sh --check  # exit 1 and one line per file that is not formatted
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format: clang-format is not installed (apt-get install clang-format)" >&2; exit 69; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
case ${1:-} in
  --check)
    bad=0
    for f in "${files[@]}"; do
      clang-format --style=file "$f" | cmp -s - "$f" ||
        { echo "not formatted: $f (bash scripts/format.sh formats it)"; bad=1; }
    done
    ((bad == 0)) && echo "format: ${#files[@]} files as .clang-format says"
    exit "$bad"
    ;;
  "") clang-format -i --style=file "${files[@]}" ;;
  *) echo "usage: bash scripts/format.sh [--check]" >&2; exit 64 ;;
esac
