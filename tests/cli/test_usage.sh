#!/usr/bin/env bash
# contract §8.4: bad input gets exit 64 and one "idem:" line on stderr; nothing runs and no record
# is created, changed or lost.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture existing idem run -k existing -- sh -c 'echo kept'
expect_rc 0

n=0
usage_error() {  # usage_error ARG...: idem ARG... exits 64 with one idem: line, nothing ran
  n=$((n + 1))
  capture "usage-$n" idem "$@"
  [[ $rc == 64 ]] || fail "idem $(printf '%q ' "$@")exited $rc, want 64; stderr: $(cat -v "$T/usage-$n.err")"
  assert_idem_error
  [[ ! -e $T/ran ]] || fail "idem $(printf '%q ' "$@")ran the command"
}
cmd=(sh -c 'echo x > "$1"' sh "$T/ran")

usage_error run -k '' -- "${cmd[@]}"
usage_error run -k $'a\tb' -- "${cmd[@]}"
usage_error run -k $'a\nb' -- "${cmd[@]}"
usage_error run -k $'a\x7fb' -- "${cmd[@]}"
usage_error run -k $'a\x01' -- "${cmd[@]}"
usage_error run -k $'\xff\xfe' -- "${cmd[@]}"
usage_error run -k $'invoice-\xe2\x80\xaefdp.exe' -- "${cmd[@]}"   # U+202E shows it as "invoice-exe.pdf"
usage_error run -k $'\xef\xbb\xbforder-1' -- "${cmd[@]}"          # a byte order mark
usage_error begin -k $'a\xe2\x81\xa6b'                            # U+2066
usage_error run -k "$(printf 'k%.0s' {1..256})" -- "${cmd[@]}"
usage_error run -k "$(printf 'é%.0s' {1..128})" -- "${cmd[@]}"   # 256 bytes
usage_error run -k k --ttl 5x -- "${cmd[@]}"
usage_error run -k k --ttl -1 -- "${cmd[@]}"
usage_error run -k k --ttl '' -- "${cmd[@]}"
usage_error run -k k --wait abc -- "${cmd[@]}"
usage_error run -k k --timeout 1y -- "${cmd[@]}"
usage_error run -k k --ttl 36501d -- "${cmd[@]}"   # past 100 years: "too large"
assert_bytes "$T/usage-$n.err" "idem: duration for --ttl is too large: '36501d' (at most 100 years: 36500d)\n"
usage_error run -k k --wait 99999999999999999999999s -- "${cmd[@]}"
grep -q 'too large' "$T/usage-$n.err" || fail "no 'too large' in: $(cat "$T/usage-$n.err")"
usage_error run -k k --kill-after x -- "${cmd[@]}"
usage_error run -k k --max-output 12XB -- "${cmd[@]}"
usage_error run -k k --lease soon -- "${cmd[@]}"
usage_error run -k k --lease 500ms -- "${cmd[@]}"   # below the 1s floor
usage_error run -k k --lease 0 -- "${cmd[@]}"
IDEM_STORE=postgresql://127.0.0.1:1/none usage_error run -k k --lease x -- "${cmd[@]}"  # before the store
IDEM_LEASE=forever usage_error run -k k -- "${cmd[@]}"
usage_error each --key-field /id --lease x -- "${cmd[@]}" </dev/null
usage_error serve --config "$T/no-such.json" --lease x
usage_error run -k k --max-output -5 -- "${cmd[@]}"
usage_error run -k k --max-output lots -- "${cmd[@]}"
usage_error run -k k --bogus -- "${cmd[@]}"
usage_error --bogus run -k k -- "${cmd[@]}"
usage_error run -k k
usage_error run -k k --
usage_error run -k
usage_error frobnicate
usage_error status ''
usage_error show $'a\nb'
usage_error ls --status bogus
usage_error ls --limit abc
usage_error gc --older-than 5x
usage_error rm ''

# 255 bytes is the longest key; 127 two-byte characters + 1 byte too.
long=$(printf 'k%.0s' {1..255})
capture long idem run -k "$long" -- printf ok
expect_rc 0
assert_bytes "$T/long.out" 'ok'
assert_status "$long" succeeded
capture utf8 idem run -k "$(printf 'é%.0s' {1..127})x" -- printf ok
expect_rc 0

# Nothing was recorded for the refused attempts, the existing record is intact.
assert_status existing succeeded
capture replay idem run -k existing -- sh -c 'echo kept'
expect_rc 0
assert_bytes "$T/replay.out" 'kept\n'
idem ls --json | jsonq /key | sort >"$T/keys"
printf '%s\n' "$long" existing "$(printf 'é%.0s' {1..127})x" | sort >"$T/want.keys"
assert_same "$T/want.keys" "$T/keys"
integrity_ok

# --help lists every flag and exits 0.
capture help idem --help
expect_rc 0
for word in run ls show status rm gc --db; do
  grep -qw -- "$word" "$T/help.out" || fail "idem --help does not mention $word"
done
capture run-help idem run --help
expect_rc 0
for flag in -k --key --ttl --wait --timeout --kill-after --lease --replay-failures --retry-abandoned \
  --hash-stdin --max-output --quiet-replay -q --quiet -v --verbose; do
  grep -qE -- "(^|[^A-Za-z-])$flag([^A-Za-z-]|\$)" "$T/run-help.out" || fail "idem run --help does not list $flag"
done
