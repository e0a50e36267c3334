#!/usr/bin/env bash
# Replay is byte-exact: NUL bytes, no final newline, arbitrary binary, large output on both
# streams (which also proves idem drains both pipes: a 64 KiB pipe would block the writer).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

# NUL bytes and no final newline, on both streams.
printf 'a\0b\0\0c' >"$T/want.out"
printf '\0err\0\n\0x' >"$T/want.err"
cmd=(sh -c 'cat "$1"; cat "$2" >&2; echo x >> "$3"' sh "$T/want.out" "$T/want.err" "$T/counter")
capture r1 idem run -k nul -- "${cmd[@]}"
expect_rc 0
assert_same "$T/want.out" "$T/r1.out"
assert_same "$T/want.err" "$T/r1.err"
capture r2 idem run -k nul -- "${cmd[@]}"
expect_rc 0
assert_same "$T/want.out" "$T/r2.out"
assert_same "$T/want.err" "$T/r2.err"
assert_lines 1 "$T/counter"
idem show nul --stdout >"$T/show.out"
assert_same "$T/want.out" "$T/show.out"
idem show nul --stderr >"$T/show.err"
assert_same "$T/want.err" "$T/show.err"

# 200 KiB of random binary on stdout, then on both streams at once.
"$(helper genbytes)" 204800 7 >"$T/blob"
capture b1 idem run -k blob -- cat "$T/blob"
expect_rc 0
assert_same "$T/blob" "$T/b1.out"
assert_empty "$T/b1.err"
capture b2 idem run -k blob -- cat "$T/blob"
expect_rc 0
assert_same "$T/blob" "$T/b2.out"
assert_empty "$T/b2.err"

cat "$T/blob" "$T/blob" >"$T/blob2"
both=(sh -c 'cat "$1"; cat "$1" >&2; cat "$1"; cat "$1" >&2' sh "$T/blob")
capture c1 idem run -k both -- "${both[@]}"
expect_rc 0
assert_same "$T/blob2" "$T/c1.out"
assert_same "$T/blob2" "$T/c1.err"
capture c2 idem run -k both -- "${both[@]}"
expect_rc 0
assert_same "$T/blob2" "$T/c2.out"
assert_same "$T/blob2" "$T/c2.err"

# The exit code is replayed with the bytes.
capture e1 idem run -k code --replay-failures -- sh -c 'printf "\0partial"; exit 42'
expect_rc 42
capture e2 idem run -k code --replay-failures -- sh -c 'printf "\0partial"; exit 42'
expect_rc 42
assert_bytes "$T/e2.out" '\0partial'
