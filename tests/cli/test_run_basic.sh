#!/usr/bin/env bash
# idem run: first attempt runs and passes output through live; later attempts replay the stored
# stdout, stderr and exit code byte for byte without running the command again.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

# Output passes through live: visible while the command still runs.
mkfifo "$T/gate"
bg live idem run -k live -- sh -c 'printf "early\n"; printf "err-early\n" >&2; read x < "$1"; printf "late\n"' sh "$T/gate"
wait_until "early output shows while the command runs" file_has "$T/live.out" early
wait_until "early stderr shows while the command runs" file_has "$T/live.err" err-early
bg_running live || fail "idem exited before the command was released"
assert_status live running
release_fifo "$T/gate"
bg_wait live
expect_rc 0
assert_bytes "$T/live.out" 'early\nlate\n'
assert_bytes "$T/live.err" 'err-early\n'

# First attempt runs; second replays byte-exact and does not run the command.
cmd=(sh -c 'echo ran >> "$1"; printf "out1\nout2"; printf "err1\n" >&2' sh "$T/counter")
capture first idem run -k basic -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/first.out" 'out1\nout2'
assert_bytes "$T/first.err" 'err1\n'
assert_status basic succeeded
capture second idem run -k basic -- "${cmd[@]}"
expect_rc 0
assert_same "$T/first.out" "$T/second.out"
assert_same "$T/first.err" "$T/second.err"
assert_lines 1 "$T/counter"

# A non-zero exit passes through and is run again next time, with IDEM_ATTEMPT counting up.
fcmd=(sh -c 'echo "$IDEM_ATTEMPT" >> "$1"; echo "attempt=$IDEM_ATTEMPT"; echo oops >&2; exit 3' sh "$T/attempts")
capture f1 idem run -k failing -- "${fcmd[@]}"
expect_rc 3
assert_bytes "$T/f1.out" 'attempt=1\n'
assert_bytes "$T/f1.err" 'oops\n'
assert_status failing failed
capture f2 idem run -k failing -- "${fcmd[@]}"
expect_rc 3
assert_bytes "$T/f2.out" 'attempt=2\n'
assert_bytes "$T/attempts" '1\n2\n'
# --replay-failures: the failure is final and replayed, the command does not run.
capture f3 idem run -k failing --replay-failures -- "${fcmd[@]}"
expect_rc 3
assert_same "$T/f2.out" "$T/f3.out"
assert_same "$T/f2.err" "$T/f3.err"
assert_bytes "$T/attempts" '1\n2\n'
# That failure was recorded without the flag: it is not final, the next plain attempt runs it.
assert_eq "false" "$(idem show failing --json | jsonq /replay_failures)" "policy of failing"
assert_eq "failures: a failure runs again at the next attempt" "$(idem show failing | grep '^failures:')" "show of failing"

# A failure recorded under --replay-failures is final for every later attempt, flag or not.
pcmd=(sh -c 'echo run >> "$1/policy-runs"; echo "out $IDEM_ATTEMPT"; echo err >&2; exit 4' sh "$T")
capture p1 idem run -k final-failure --replay-failures -- "${pcmd[@]}"
expect_rc 4
assert_eq "failed true" "$(idem show final-failure --json | jsonq /status /replay_failures | tr '\t' ' ')" "policy of final-failure"
assert_eq "failures: final: a failure is replayed to every later attempt (--replay-failures)" \
  "$(idem show final-failure | grep '^failures:')" "show of final-failure"
capture p2 idem run -k final-failure -- "${pcmd[@]}"
expect_rc 4
assert_same "$T/p1.out" "$T/p2.out"
assert_same "$T/p1.err" "$T/p2.err"
capture p3 idem run -k final-failure --wait 5s -- "${pcmd[@]}"
expect_rc 4
assert_same "$T/p1.out" "$T/p3.out"
assert_bytes "$T/policy-runs" 'run\n'
assert_eq "1" "$(idem show final-failure --json | jsonq /attempt)" "attempt of final-failure"
# idem rm is the way out: the key runs again, under the policy of the attempt that claims it.
idem rm final-failure >/dev/null
capture p4 idem run -k final-failure -- "${pcmd[@]}"
expect_rc 4
assert_bytes "$T/policy-runs" 'run\nrun\n'
assert_eq "false" "$(idem show final-failure --json | jsonq /replay_failures)" "policy after rm"
capture p5 idem run -k final-failure -- "${pcmd[@]}"
expect_rc 4
assert_bytes "$T/policy-runs" 'run\nrun\nrun\n'
# A success says which policy its attempt ran under too.
capture p6 idem run -k final-success --replay-failures -- true
expect_rc 0
assert_eq "succeeded true" "$(idem show final-success --json | jsonq /status /replay_failures | tr '\t' ' ')" "policy of final-success"

# The command sees its key.
key='my key/é:1'
capture envkey idem run -k "$key" -- sh -c 'printf "%s|%s" "$IDEM_KEY" "$IDEM_ATTEMPT"'
expect_rc 0
assert_bytes "$T/envkey.out" '%s|1' "$key"

# Without -k the key is derived from the working directory and argv: runs once per directory.
dcmd=(sh -c 'echo x >> "$1"; echo derived' sh "$T/dcounter")
capture d1 idem run -- "${dcmd[@]}"
expect_rc 0
capture d2 idem run -- "${dcmd[@]}"
expect_rc 0
assert_bytes "$T/d1.out" 'derived\n'
assert_same "$T/d1.out" "$T/d2.out"
assert_lines 1 "$T/dcounter"
idem ls --json >"$T/ls.json"
jsonq /key <"$T/ls.json" | grep '^cmd:' >"$T/derived-keys" || fail "no derived key in ls --json"
assert_lines 1 "$T/derived-keys"
grep -qE '^cmd:[0-9a-f]{64}$' "$T/derived-keys" || fail "derived key not cmd:+64 hex: $(cat "$T/derived-keys")"
mkdir "$T/elsewhere"
(cd "$T/elsewhere" && idem run -- "${dcmd[@]}" >/dev/null) || fail "run from another directory failed"
assert_lines 2 "$T/dcounter"

# --quiet-replay: nothing written, the stored code returned.
capture q0 idem run -k quiet -- sh -c 'echo visible; echo visible-err >&2; exit 5'
expect_rc 5
capture q1 idem run -k quiet --replay-failures --quiet-replay -- sh -c 'echo visible; echo visible-err >&2; exit 5'
expect_rc 5
assert_empty "$T/q1.out"
assert_empty "$T/q1.err"
capture q2 idem run -k basic --quiet-replay -- "${cmd[@]}"
expect_rc 0
assert_empty "$T/q2.out"
assert_empty "$T/q2.err"
assert_lines 1 "$T/counter"

# -v: one notice line on stderr on replay, the replayed bytes otherwise unchanged.
capture v1 idem run -k basic -v -- "${cmd[@]}"
expect_rc 0
assert_same "$T/first.out" "$T/v1.out"
assert_eq 1 "$(grep -c '^idem: replaying' "$T/v1.err" || true)" "'idem: replaying' lines with -v"
grep -v '^idem: ' "$T/v1.err" >"$T/v1.err.rest" || true
assert_same "$T/first.err" "$T/v1.err.rest"
assert_lines 1 "$T/counter"

# stdin is passed through to the command (and is not part of the fingerprint by default).
printf 'hi\nthere' >"$T/in1"
printf 'other' >"$T/in2"
capture s1 idem run -k stdin -- cat <"$T/in1"
expect_rc 0
assert_same "$T/in1" "$T/s1.out"
capture s2 idem run -k stdin -- cat <"$T/in2"
expect_rc 0
assert_same "$T/in1" "$T/s2.out"

# --ttl 0 would turn dedupe off: refused as --timeout 0 is (64, one line, nothing run or claimed),
# by run and begin alike; "0s" and "0ms" are zero too.
for ttl in 0 0s 0ms; do
  capture "ttl0-$ttl" idem run -k ttl0 --ttl "$ttl" -- sh -c 'echo ran >> "$1"' sh "$T/ttl0-ran"
  expect_rc 64
  assert_idem_error
  assert_bytes "$T/ttl0-$ttl.err" 'idem: --ttl must be above zero\n'
  capture "begin-ttl0-$ttl" idem begin -k ttl0 --ttl "$ttl"
  expect_rc 64
  assert_bytes "$T/begin-ttl0-$ttl.err" 'idem: --ttl must be above zero\n'
done
[[ ! -e $T/ttl0-ran ]] || fail "--ttl 0 ran the command"
assert_status ttl0 none
capture ttl0-timeout idem run -k ttl0 --timeout 0 -- true
expect_rc 64
assert_bytes "$T/ttl0-timeout.err" 'idem: --timeout must be above zero\n'
