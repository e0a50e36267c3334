#!/usr/bin/env bash
# contract §5b, idem begin / idem end: a claim owned by the calling script (or --owner-pid), the
# outcome recorded by end; already done → 1 (--print), a failed outcome claimed again, a script
# killed mid-way → abandoned (69) until --retry-abandoned, end by anyone but the owner → 77.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

# record NAME KEY: the record as JSON, in $T/NAME.json (to compare before and after).
record() { idem show "$2" --json >"$T/$1.json" || fail "idem show $2 exited $?"; }
# field KEY POINTER...: values of the record, space-separated.
field() { idem show "$1" --json | jsonq "${@:2}" | tr '\t' ' '; }
# foreign ARG...: idem ARG... from another process (a shell that does not exec idem).
foreign() { sh -c '"$0" "$@"; rc=$?; exit $rc' "$IDEM_BIN" "$@"; }

# --- Happy path: begin claims for the caller (this shell), end records --------------------------
capture b1 idem begin -k order-1
expect_rc 0
assert_empty "$T/b1.out"
assert_empty "$T/b1.err"
assert_status order-1 running
assert_eq "running 1 begin $$" "$(field order-1 /status /attempt /kind /owner/pid)" "claimed record"
printf 'receipt\0 #42\n' >"$T/receipt"
printf 'charged 10 EUR\n' >"$T/log"
capture e1 idem end -k order-1 --stdout-file "$T/receipt" --stderr-file "$T/log"
expect_rc 0
assert_empty "$T/e1.out"
assert_empty "$T/e1.err"
assert_status order-1 succeeded
assert_eq "0 1" "$(field order-1 /exit_code /attempt)" "exit code and attempt"
idem show order-1 --stdout >"$T/stored.out"
assert_same "$T/receipt" "$T/stored.out"
idem show order-1 --stderr >"$T/stored.err"
assert_same "$T/log" "$T/stored.err"

# A file larger than one read, binary throughout, is stored byte for byte, and replayed so.
head -c 3000000 /dev/urandom >"$T/big"
capture b1big idem begin -k order-big
expect_rc 0
capture e1big idem end -k order-big --stdout-file "$T/big" --stderr-file "$T/receipt"
expect_rc 0
idem show order-big --stdout >"$T/big.out"
assert_same "$T/big" "$T/big.out"
idem show order-big --stderr >"$T/big.err"
assert_same "$T/receipt" "$T/big.err"
assert_eq "false 3000013" "$(field order-big /truncated /output_bytes)" "stored size"
capture b1big2 idem begin -k order-big --print
expect_rc 1
assert_same "$T/big" "$T/b1big2.out"

# Already succeeded: 1, nothing printed; --print writes the stored stdout only.
capture b2 idem begin -k order-1
expect_rc 1
assert_empty "$T/b2.out"
assert_empty "$T/b2.err"
capture b3 idem begin -k order-1 --print
expect_rc 1
assert_same "$T/receipt" "$T/b3.out"
assert_empty "$T/b3.err"
# A second end of a finished attempt says it already finished (1) and changes nothing.
record before order-1
capture e2 idem end -k order-1 --exit 5
expect_rc 1
assert_idem_error
assert_bytes "$T/e2.err" "idem: key 'order-1' already finished (succeeded, exit 0, attempt 1); nothing recorded\n"
# From another process, the attempt is still not the caller's (77).
capture e2b foreign end -k order-1 --exit 5
expect_rc 77
assert_idem_error
record after order-1
assert_same "$T/before.json" "$T/after.json"

# The contract's snippet (docs/contract.md, §5b) as a script: the work happens once however often the script runs.
cat >"$T/snippet.sh" <<'EOF'
#!/bin/sh
charge_card() { echo charged >> "$1"; }
if idem begin -k order-42; then
  if charge_card "$1"; then idem end -k order-42; else idem end -k order-42 --exit $?; fi
fi
EOF
mkdir "$T/bin"
ln -s "$IDEM_BIN" "$T/bin/idem"
for i in 1 2 3; do
  capture "snippet-$i" env PATH="$T/bin:$PATH" sh "$T/snippet.sh" "$T/charges"
  expect_rc 0
  assert_empty "$T/snippet-$i.err"
done
assert_bytes "$T/charges" 'charged\n'
assert_status order-42 succeeded

# --- A failed outcome: the next begin claims again, attempt 2 ------------------------------------
capture f1 idem begin -k order-2
expect_rc 0
printf 'card declined\n' >"$T/declined"
capture f2 idem end -k order-2 --exit 3 --stderr-file "$T/declined"
expect_rc 0
assert_status order-2 failed
assert_eq "3 1" "$(field order-2 /exit_code /attempt)" "failed record"
capture f3 idem begin -k order-2
expect_rc 0
assert_eq "running 2" "$(field order-2 /status /attempt)" "claimed again"
capture f4 idem end -k order-2
expect_rc 0
assert_eq "succeeded 0 2" "$(field order-2 /status /exit_code /attempt)" "second attempt recorded"
idem show order-2 --stderr >"$T/order-2.err"
assert_empty "$T/order-2.err"

# --- A script killed between begin and end ----------------------------------------------------
cat >"$T/script.sh" <<'EOF'
#!/bin/sh
# $1 key, $2 FIFO: claims the key, then blocks until released, then records success.
"$IDEM_BIN" begin -k "$1" || exit $?
echo began > "$2.began"
read x < "$2"
"$IDEM_BIN" end -k "$1"
EOF
mkfifo "$T/fifo"
bg script sh "$T/script.sh" order-3 "$T/fifo"
wait_until "the script has claimed order-3" test -e "$T/fifo.began"
script_pid=$(bg_pid script)
assert_status order-3 running
assert_eq "1 $script_pid" "$(field order-3 /attempt /owner/pid)" "owner of order-3"
# Meanwhile: begin from anyone else is refused (75); end from anyone else too (77), no change.
capture busy idem begin -k order-3
expect_rc 75
assert_idem_error
assert_bytes "$T/busy.err" "idem: key 'order-3' is running in pid %s on %s\n" "$script_pid" "$(field order-3 /owner/host)"
capture busy-q idem begin -k order-3 -q
expect_rc 75
assert_empty "$T/busy-q.err"
record before order-3
capture foreign-end idem end -k order-3
expect_rc 77
assert_idem_error
assert_bytes "$T/foreign-end.err" "idem: key 'order-3': the caller (pid %s) does not own its current attempt (running, attempt 1, owner pid %s); nothing recorded\n" $$ "$script_pid"
capture foreign-end2 foreign end -k order-3 --exit 0
expect_rc 77
assert_idem_error
record after order-3
assert_same "$T/before.json" "$T/after.json"
kill -KILL "$script_pid"
bg_wait script
expect_rc 137
assert_status order-3 abandoned
capture ab1 idem begin -k order-3
expect_rc 69
assert_idem_error
assert_bytes "$T/ab1.err" "idem: key 'order-3': an earlier owner (pid %s) died mid-run; its outcome is unknown\n" "$script_pid"
capture ab2 idem begin -k order-3 -q  # -q silences 75 alone
expect_rc 69
assert_idem_error
assert_same "$T/ab1.err" "$T/ab2.err"
capture ab3 idem end -k order-3
expect_rc 77
assert_status order-3 abandoned
capture retry idem begin -k order-3 --retry-abandoned
expect_rc 0
assert_empty "$T/retry.err"
assert_eq "running 2 $$" "$(field order-3 /status /attempt /owner/pid)" "retried record"
capture retry-end idem end -k order-3
expect_rc 0
assert_eq "succeeded 2" "$(field order-3 /status /attempt)" "retried record after end"

# --- --owner-pid: the claim belongs to another process; --wait while it holds it ----------------
mkfifo "$T/hold"
bg holder sh -c 'read x < "$0"' "$T/hold"
holder=$(bg_pid holder)
capture o1 idem begin -k order-4 --owner-pid "$holder"
expect_rc 0
assert_eq "running $holder" "$(field order-4 /status /owner/pid)" "owner given by --owner-pid"
capture o2 idem end -k order-4
expect_rc 77
assert_status order-4 running
# No wait: 75 at once. A short wait: 75 after it. A long wait (started first) is still waiting
# when the short one gives up.
capture o3 idem begin -k order-4
expect_rc 75
bg waiter idem begin -k order-4 --wait 20s --print
started=$(now_ms)
capture o4 idem begin -k order-4 --wait 300ms
expect_rc 75
(($(now_ms) - started >= 300)) || fail "--wait 300ms gave up after $(($(now_ms) - started)) ms"
bg_running waiter || fail "begin --wait 20s did not wait: $(cat -v "$T/waiter.err")"
# The long wait is released as soon as the owner records success: already done (1).
printf 'receipt 4\n' >"$T/receipt4"
capture o5 idem end -k order-4 --owner-pid "$holder" --stdout-file "$T/receipt4"
expect_rc 0
bg_wait waiter
expect_rc 1
assert_same "$T/receipt4" "$T/waiter.out"
assert_empty "$T/waiter.err"
# A waiter whose holder fails takes the key over (attempt 2) and owns it.
capture o6 idem begin -k order-5 --owner-pid "$holder"
expect_rc 0
bg waiter2 idem begin -k order-5 --wait 20s
capture o6b idem begin -k order-5 --wait 200ms
expect_rc 75
bg_running waiter2 || fail "begin --wait 20s did not wait: $(cat -v "$T/waiter2.err")"
capture o7 idem end -k order-5 --owner-pid "$holder" --exit 9
expect_rc 0
bg_wait waiter2
expect_rc 0
assert_eq "running 2 $$" "$(field order-5 /status /attempt /owner/pid)" "order-5 after the waiter claimed"
capture o8 idem end -k order-5
expect_rc 0
assert_status order-5 succeeded
# The owner dies while holding a key: abandoned.
capture o9 idem begin -k order-6 --owner-pid "$holder"
expect_rc 0
release_fifo "$T/hold"
bg_wait holder
expect_rc 0
assert_status order-6 abandoned
capture o10 idem begin -k order-6
expect_rc 69
# No such process to own the key.
nopid=$(($(cat /proc/sys/kernel/pid_max) + 1))
capture o11 idem begin -k order-7 --owner-pid "$nopid"
expect_rc 64
assert_idem_error
assert_bytes "$T/o11.err" 'idem: --owner-pid %s: no such process\n' "$nopid"
assert_status order-7 none
# --owner-pid must be a positive pid: 64 naming the problem, nothing claimed; end checks it too.
for bad in -5 0; do
  capture "o12$bad" idem begin -k order-7 --owner-pid "$bad"
  expect_rc 64
  assert_idem_error
  assert_bytes "$T/o12$bad.err" 'idem: --owner-pid must be a positive process id, got %s\n' "$bad"
  capture "o13$bad" idem end -k order-1 --owner-pid "$bad"
  expect_rc 64
  assert_idem_error
done
assert_status order-7 none

# --- bash runs the last command of -c by exec: end then has the owner's own pid ---------------
capture x1 bash -c '"$IDEM_BIN" begin -k order-10 && echo work >> "$1" && "$IDEM_BIN" end -k order-10' bash "$T/work"
expect_rc 0
assert_empty "$T/x1.err"
assert_status order-10 succeeded
assert_bytes "$T/work" 'work\n'

# --- A script that leads its process group: its surviving children block a retry --------------
cat >"$T/leader.sh" <<'EOF'
"$IDEM_BIN" begin -k order-12 --retry-abandoned --kill-stale || exit $?
echo $$ > "$1.pid"
if [ ! -e "$1.first" ]; then : > "$1.first"; sleep 1000 & echo $! > "$1.gc"; wait; fi
"$IDEM_BIN" end -k order-12
EOF
track_pid_file "$T/leader.gc"
bg leader setsid sh "$T/leader.sh" "$T/leader"
wait_until "the leader script starts its child" test -s "$T/leader.gc"
kill -KILL "$(cat "$T/leader.pid")"
bg_wait leader
gc=$(cat "$T/leader.gc")
pid_gone "$gc" && fail "the script's child should outlive the script"
assert_status order-12 abandoned
capture g1 idem begin -k order-12 --retry-abandoned
expect_rc 75
assert_idem_error
pid_gone "$gc" && fail "a refused begin must not touch the child"
capture g2 idem begin -k order-12 --kill-stale
expect_rc 64
assert_idem_error
capture g3 setsid sh "$T/leader.sh" "$T/leader"
expect_rc 0
pid_gone "$gc" || fail "begin --kill-stale should have ended the dead script's child"
assert_eq "succeeded 2" "$(field order-12 /status /attempt)" "order-12 after --kill-stale"

# --- TTL: a finished outcome counts as done until it expires -----------------------------------
capture t1 idem begin -k order-8 --ttl 1s
expect_rc 0
capture t2 idem end -k order-8
expect_rc 0
capture t3 idem begin -k order-8 --ttl 1s
expect_rc 1
wait_until "order-8 expires" status_is order-8 expired
capture t4 idem begin -k order-8 --ttl 1s
expect_rc 0
assert_status order-8 running

# --- --fingerprint and --hash-stdin: the same key for other work is a conflict -----------------
capture p1 idem begin -k order-20 --fingerprint amount=42
expect_rc 0
capture p2 idem end -k order-20
expect_rc 0
capture p3 idem begin -k order-20 --fingerprint amount=42
expect_rc 1
capture p4 idem begin -k order-20 --fingerprint amount=43
expect_rc 65
assert_bytes "$T/p4.err" "idem: key 'order-20' was used by another command or with another fingerprint; nothing to do here\n"
capture p5 idem begin -k order-20
expect_rc 65
assert_idem_error
capture p6 idem begin -k order-20 --fingerprint amount=43 -q
expect_rc 65
assert_idem_error
assert_same "$T/p4.err" "$T/p6.err"
# A conflict leaves the record as it was.
assert_eq "succeeded 1" "$(field order-20 /status /attempt)" "order-20 after conflicts"
# A begin without a fingerprint is the same attempt as before the option existed.
capture p7 idem begin -k order-1 --fingerprint amount=42
expect_rc 65
# stdin's bytes: the same payload is done, another one conflicts.
printf 'amount=42\0EUR' >"$T/payload"
capture h1 idem begin -k order-21 --hash-stdin <"$T/payload"
expect_rc 0
capture h2 idem end -k order-21
expect_rc 0
capture h3 idem begin -k order-21 --hash-stdin --print <"$T/payload"
expect_rc 1
printf 'amount=43\0EUR' >"$T/payload2"
capture h4 idem begin -k order-21 --hash-stdin <"$T/payload2"
expect_rc 65
capture h5 idem begin -k order-21 </dev/null
expect_rc 65
# Both together differ from either alone.
capture h6 idem begin -k order-21 --hash-stdin --fingerprint x <"$T/payload"
expect_rc 65
# The fingerprint holds across attempts: a failure is claimed again for the same work only.
capture h7 idem begin -k order-22 --fingerprint a
expect_rc 0
capture h8 idem end -k order-22 --exit 2
expect_rc 0
capture h9 idem begin -k order-22 --fingerprint b
expect_rc 65
capture h10 idem begin -k order-22 --fingerprint a
expect_rc 0
assert_eq "running 2" "$(field order-22 /status /attempt)" "order-22 claimed again"
# Bad input: an empty or missing value, stdin that cannot be read; nothing claimed.
capture pu1 idem begin -k order-23 --fingerprint ''
expect_rc 64
assert_idem_error
assert_bytes "$T/pu1.err" "idem: --fingerprint must not be empty (an unset variable?)\n"
capture pu2 idem begin -k order-23 --fingerprint
expect_rc 64
assert_idem_error
capture pu3 idem begin -k order-23 --hash-stdin <&-
expect_rc 64
assert_idem_error
capture pu4 idem begin -k order-23 --hash-stdin <"$T"
expect_rc 64
assert_idem_error
assert_status order-23 none

# --- Errors ------------------------------------------------------------------------------------
capture n1 idem end -k never-begun
expect_rc 1
assert_idem_error
assert_bytes "$T/n1.err" "idem: no record for key 'never-begun'\n"
assert_status never-begun none
# A key used by idem run is not begin's: 65 for begin, 77 for end.
capture r1 idem run -k by-run -- sh -c 'echo ran'
expect_rc 0
capture r2 idem begin -k by-run
expect_rc 65
assert_idem_error
assert_bytes "$T/r2.err" "idem: key 'by-run' was used by another command or with another fingerprint; nothing to do here\n"
capture r3 idem end -k by-run
expect_rc 77
assert_status by-run succeeded
# Usage errors: 64, nothing claimed or recorded.
capture u1 idem begin -k ''
expect_rc 64
assert_idem_error
capture u2 idem begin -k order-9 --wait never
expect_rc 64
assert_idem_error
capture u3 idem begin -k order-9 --ttl -1
expect_rc 64
assert_idem_error
assert_status order-9 none
capture u4 idem begin -k order-9
expect_rc 0
capture u5 idem end -k order-9 --stdout-file "$T/missing"
expect_rc 64
assert_idem_error
capture u6 idem end -k order-9 --exit 256
expect_rc 64
assert_idem_error
capture u7 idem end
expect_rc 64
assert_idem_error
assert_status order-9 running
integrity_ok
