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
    # One process for all: each file that differs is named once, at its first difference.
    said=$(mktemp)
    trap 'rm -f "$said"' EXIT
    if ! clang-format --dry-run --Werror --ferror-limit=1 --style=file "${files[@]}" 2>"$said"; then
      grep -oE '^[^:]+:[0-9]+:[0-9]+: error' "$said" | cut -d: -f1-2 | sort -u -t: -k1,1 |
        sed 's/$/: not formatted (bash scripts\/format.sh formats it)/'
      exit 1
    fi
    echo "format: ${#files[@]} files as .clang-format says"
    ;;
  "") clang-format -i --style=file "${files[@]}" ;;
  *) echo "usage: bash scripts/format.sh [--check]" >&2; exit 64 ;;
esac
