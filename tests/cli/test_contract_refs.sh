#!/usr/bin/env bash
# The code, tests and docs cite the contract as "contract §N" (or §N.M for a guarantee): every
# such reference names a section of docs/contract.md ("## N. ...") or an item M of its numbered
# list under that section, so a clone holds what each one points at. The check also runs on a
# reference to a section that does not exist, and must catch it.
tests_dir=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}" && pwd)
root=$(cd "$tests_dir/.." && pwd)
source "$tests_dir/cli/lib.sh"

contract=$root/docs/contract.md
[[ -f $contract ]] || fail "no docs/contract.md"

# sections: "N" per "## N. " heading, and "N.M" per numbered item "M. " under it.
awk '
  /^## [0-9]+[a-z]?\. / { s = $2; sub(/\.$/, "", s); print s; next }
  /^[0-9]+\. / && s != "" { m = $1; sub(/\.$/, "", m); print s "." m }
' "$contract" >"$T/sections"
(($(wc -l <"$T/sections") >= 15)) || fail "too few sections read: $(tr '\n' ' ' <"$T/sections")"

# check DIR...: prints each reference that names no section; fails if there is one.
check() {
  local bad=0 line where ref
  while IFS= read -r line; do
    [[ $line =~ ^([^:]+:[0-9]+):.*§([0-9]+[a-z]?(\.[0-9]+)?)$ ]] || continue
    where=${BASH_REMATCH[1]} ref=${BASH_REMATCH[2]}
    grep -qxF -- "$ref" "$T/sections" || { echo "$where: contract §$ref is not in docs/contract.md"; bad=1; }
  done < <(grep -rnoE --exclude=test_contract_refs.sh 'contract §[0-9]+[a-z]?(\.[0-9]+)?' "$@")
  return $bad
}

mkdir -p "$T/bad"
printf '// see contract §6b and §8.3\n// contract §8.3 holds; contract §13 does not\n' >"$T/bad/x.cpp"
if check "$T/bad" >"$T/bad.out"; then fail "a reference to a missing section passed"; fi
assert_eq "$T/bad/x.cpp:2: contract §13 is not in docs/contract.md" "$(cat "$T/bad.out")" "the bad reference"

check "$root/src" "$root/tests" "$root/bench" "$root/fuzz" "$root/docs" "$root/man" \
  "$root/README.md" "$root/ARCHITECTURE.md" "$root/HACKING.md" >"$T/refs.out" ||
  fail "references to no section: $(cat "$T/refs.out")"
count=$(grep -rhoE 'contract §' "$root/src" "$root/tests" | wc -l)
((count >= 50)) || fail "only $count references found in src/ and tests/: is the pattern right?"
