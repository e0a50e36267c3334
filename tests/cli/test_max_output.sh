#!/usr/bin/env bash
# --max-output caps the stored copy (the head, marked truncated); live output always passes whole.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

"$(helper genbytes)" $((50 * 1024 * 1024)) 11 >"$T/src"
head -c 1048576 "$T/src" >"$T/head"
capture big idem run -k big --max-output 1MiB -- cat "$T/src"
expect_rc 0
assert_same "$T/src" "$T/big.out"
assert_empty "$T/big.err"
idem show big --stdout >"$T/stored"
assert_eq 1048576 "$(wc -c <"$T/stored")" "stored stdout size"
assert_same "$T/head" "$T/stored"
idem show big --json >"$T/big.json"
assert_eq true "$(jsonq /truncated <"$T/big.json")" "truncated flag"
capture replay idem run -k big --max-output 1MiB -- cat "$T/src"
expect_rc 0
assert_same "$T/head" "$T/replay.out"
rm -f "$T/src" "$T/big.out"

# Under the cap nothing is truncated.
capture small idem run -k small --max-output 1MiB -- printf 'tiny'
expect_rc 0
assert_eq false "$(idem show small --json | jsonq /truncated)" "truncated flag under the cap"

# The cap counts both streams in write order: the stored copy is the head of the interleaving.
pieces=("o:$(printf 'o%.0s' {1..60})" "e:$(printf 'e%.0s' {1..60})")
capture mixed idem run -k mixed --max-output 100 -- "$(helper interleave)" "${pieces[@]}"
expect_rc 0
assert_bytes "$T/mixed.out" '%s' "$(printf 'o%.0s' {1..60})"
assert_bytes "$T/mixed.err" '%s' "$(printf 'e%.0s' {1..60})"
idem show mixed --stdout >"$T/mixed.stored.out"
idem show mixed --stderr >"$T/mixed.stored.err"
assert_bytes "$T/mixed.stored.out" '%s' "$(printf 'o%.0s' {1..60})"
assert_bytes "$T/mixed.stored.err" '%s' "$(printf 'e%.0s' {1..40})"
assert_eq true "$(idem show mixed --json | jsonq /truncated)" "truncated flag of the mixed record"
