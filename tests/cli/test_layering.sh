#!/usr/bin/env bash
# The dependency rule of ARCHITECTURE.md, kept: every `#include "folder/..."` in src/ names a folder
# its own folder may include, as the rule's table in ARCHITECTURE.md says (this script reads the
# table from there, so the rule is written once), and a library header listed there is included
# only by the folders it names. A folder of src/ the table does not know fails too, so a new layer
# is placed in the rule first. The check also runs on a small tree with a forbidden edge and must
# catch it.
tests_dir=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}" && pwd)
root=$(cd "$tests_dir/.." && pwd)
source "$tests_dir/cli/lib.sh"

# The table: the indented lines from "    folder  may include" up to the next blank line.
sed -n '/^    folder  *may include/,/^$/p' "$root/ARCHITECTURE.md" | tail -n +2 | sed '/^$/d' >"$T/rule"
(($(wc -l <"$T/rule") >= 6)) || fail "no dependency table in ARCHITECTURE.md (see its 'folder  may include' block)"

declare -A may=()     # folder (or main.cpp) -> the folders it may include, space-separated
declare -A except=()  # "FILE HEADER" -> 1: an allowed edge outside the table
declare -A header=()  # <library header> -> the folders that may include it
while read -r kind rest; do
  read -ra words <<<"${rest%%(*}"  # the words before a "(reason)"
  case $kind in
    except) except["${words[0]} ${words[1]}"]=1 ;;
    header) header[${words[0]}]="${words[*]:1}" ;;
    *) may[$kind]=" ${words[*]} " ;;
  esac
done <"$T/rule"

# check SRC: prints every include of SRC that breaks the rule; fails if there is one.
check() {
  local src=$1 file rel folder inc target bad=0
  while IFS= read -r file; do
    rel=${file#"$src"/}
    folder=${rel%%/*}
    [[ -n ${may[$folder]-} ]] || { echo "$rel: folder '$folder' is not in the rule"; bad=1; continue; }
    while IFS= read -r inc; do
      if [[ $inc == \<* ]]; then
        [[ -z ${header[$inc]-} || " ${header[$inc]} " == *" $folder "* ]] ||
          { echo "$rel includes $inc (only: ${header[$inc]})"; bad=1; }
        continue
      fi
      [[ $inc == */* ]] || continue  # beside itself
      target=${inc%%/*}
      [[ ${may[$folder]} == *" $target "* || -n ${except["$rel $inc"]-} ]] ||
        { echo "$rel includes \"$inc\": $folder may include only${may[$folder]% }"; bad=1; }
    done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*(["<][^">]+[">]).*/\1/p' "$file" |
      sed -E 's/^"(.*)"$/\1/')
  done < <(find "$src" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) | LC_ALL=C sort)
  return $bad
}

# The check catches a forbidden edge (a front's room including another's, the transport including
# what the fronts share), an unknown folder and a misplaced library header.
mkdir -p "$T/bad/util" "$T/bad/store" "$T/bad/gadgets" "$T/bad/net" "$T/bad/hooks"
echo '#include "core/key.hpp"' >"$T/bad/util/x.cpp"
echo '#include "cli/common.hpp"' >"$T/bad/store/y.cpp"
echo '#include "util/fd.hpp"' >"$T/bad/gadgets/z.cpp"
printf '#include <sqlite3.h>\n  #include "store/store.hpp"\n' >"$T/bad/net/w.cpp"
echo '#include "proxy/rules.hpp"' >"$T/bad/hooks/v.cpp"  # one front's room in another's
echo '#include "front/route.hpp"' >"$T/bad/net/u.cpp"     # the transport knows no front
if check "$T/bad" >"$T/bad.out"; then fail "the check passed a tree with forbidden edges"; fi
assert_eq 7 "$(wc -l <"$T/bad.out")" "violations found in the bad tree: $(cat "$T/bad.out")"

# The code keeps the rule.
check "$root/src" >"$T/src.out" || fail "includes that break the dependency rule of ARCHITECTURE.md:
$(cat "$T/src.out")"
