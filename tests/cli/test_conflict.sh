#!/usr/bin/env bash
# A key reused with a different fingerprint is refused with 65 and nothing runs.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture a idem run -k c -- sh -c 'echo "$0" >> "$1"' A "$T/counter"
expect_rc 0
capture b idem run -k c -- sh -c 'echo "$0" >> "$1"' B "$T/counter"
expect_rc 65
assert_idem_error
# -q (and --quiet-replay) silence only 75: a conflict still prints its line.
capture bq idem run -k c -q --quiet-replay -- sh -c 'echo "$0" >> "$1"' B "$T/counter"
expect_rc 65
assert_idem_error
assert_same "$T/b.err" "$T/bq.err"
assert_bytes "$T/counter" 'A\n'
assert_status c succeeded

# Argument boundaries are part of the fingerprint.
check_conflict() {  # check_conflict KEY -- FIRST_ARGV... -- SECOND_ARGV...
  local key=$1 i
  shift 2
  for ((i = 1; i <= $#; i++)); do [[ ${!i} == -- ]] && break; done
  capture "$key-1" idem run -k "$key" -- "${@:1:i-1}"
  expect_rc 0
  capture "$key-2" idem run -k "$key" -- "${@:i+1}"
  expect_rc 65
  assert_idem_error
}
check_conflict space -- printf '%s|' 'b c' -- printf '%s|' b c
check_conflict join -- printf '%s|' ab c -- printf '%s|' a bc
check_conflict empty-arg -- printf '%s|' '' -- printf '%s|'
check_conflict equals -- printf '%s|' 'a=b' -- printf '%s|' a =b

# A failed record keeps its fingerprint: another command is still a conflict.
capture f1 idem run -k failed -- sh -c 'exit 1'
expect_rc 1
capture f2 idem run -k failed -- sh -c 'exit 0'
expect_rc 65
assert_idem_error

# --hash-stdin: stdin is part of the fingerprint and reaches the command unchanged.
hcmd=(sh -c 'cat > "$1"; echo x >> "$2"; echo done' sh "$T/got" "$T/hcounter")
printf 'one\0two' >"$T/in1"
printf 'one\0twO' >"$T/in2"
capture h1 idem run -k hs --hash-stdin -- "${hcmd[@]}" <"$T/in1"
expect_rc 0
assert_same "$T/in1" "$T/got"
assert_bytes "$T/h1.out" 'done\n'
capture h2 idem run -k hs --hash-stdin -- "${hcmd[@]}" <"$T/in2"
expect_rc 65
assert_idem_error
capture h3 idem run -k hs --hash-stdin -- "${hcmd[@]}" </dev/null
expect_rc 65
assert_idem_error
capture h4 idem run -k hs --hash-stdin -- "${hcmd[@]}" <"$T/in1"
expect_rc 0
assert_bytes "$T/h4.out" 'done\n'
assert_lines 1 "$T/hcounter"

# A large binary stdin reaches the command whole.
"$(helper genbytes)" 300000 3 >"$T/blob"
capture big1 idem run -k hsbig --hash-stdin -- cat <"$T/blob"
expect_rc 0
assert_same "$T/blob" "$T/big1.out"
capture big2 idem run -k hsbig --hash-stdin -- cat <"$T/blob"
expect_rc 0
assert_same "$T/blob" "$T/big2.out"
