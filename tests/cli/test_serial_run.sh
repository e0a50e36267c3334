#!/usr/bin/env bash
# `idem run --serial GROUP` (SPEC §9): runs of one group go one at a time, in the order they
# arrived, across processes; a run waiting its turn shows as queued; --serial-wait bounds the wait
# (75), a signal or a kill -9 leaves the line and the others go on.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
# On PostgreSQL a waiter killed in line is judged by its lease, renewed while it waits.
export IDEM_LEASE=2s

# Bad input: one line, usage's exit code.
capture bad idem run -k x --serial $'two\nlines' -- true
expect_rc 64
assert_idem_error
grep -q -- "--serial group" "$T/bad.err" || fail "the error should name --serial: $(cat "$T/bad.err")"
capture alone idem run -k x --serial-wait 1s -- true
expect_rc 64
assert_idem_error
capture dur idem run -k x --serial g --serial-wait soon -- true
expect_rc 64
assert_idem_error

# The job proves it runs alone: it takes the group's lock without waiting (flock -n fails if
# another holds it) and logs its number.
mkfifo "$T/hold"
job() { printf '%s\n' "flock -n '$T/lock' sh -c 'echo $1 >> \"$T/order\"' || echo overlap-$1 >> '$T/order'"; }

# The first run holds the group until released; 20 more arrive one after another.
bg first idem run -k k0 --serial g -- sh -c "read x < '$T/hold'; $(job 0)"
wait_until "k0 runs" status_is k0 running
n=20
for ((i = 1; i <= n; i++)); do
  # Background jobs of a script start with SIGINT ignored; a user's idem would not.
  bg "w$i" env --default-signal=INT "$IDEM_BIN" run -k "k$i" --serial g -- sh -c "$(job "$i")"
  wait_until "k$i waits its turn" status_is "k$i" queued
done
# They show as queued, in ls (their own filter) and show; the group's name is the user's.
capture ls idem ls --status queued
assert_lines $((n + 1)) "$T/ls.out"
capture show idem show k5 --json
assert_eq queued "$(jsonq /status <"$T/show.out")" "show's status of a waiting run"
capture log idem log k5
grep -q "^queued since .*: waits its turn in serial group 'run:g'$" "$T/log.out" ||
  fail "log should say k5 waits: $(cat "$T/log.out")"

# A waiter killed -9 in line, and one interrupted (SIGINT: it leaves the line at once).
kill -KILL "$(bg_pid w7)"
bg_wait w7
kill -INT "$(bg_pid w9)"
bg_wait w9
expect_rc 130
grep -q "waited its turn" "$T/w9.err" || fail "the interrupted waiter should say so: $(cat "$T/w9.err")"
wait_until "the interrupted waiter left the line" test "$(idem status k9)" != queued

# A key queued by one process is held for another: 75, nothing ran.
capture dup idem run -k k3 --serial g -- sh -c "$(job 3)"
expect_rc 75
assert_idem_error

# --serial-wait: gives up, leaves the line, 75.
capture impatient idem run -k late --serial g --serial-wait 300ms -- sh -c "echo late >> '$T/order'"
expect_rc 75
assert_idem_error
grep -q "serial group 'g'" "$T/impatient.err" || fail "75 should name the group: $(cat "$T/impatient.err")"
[[ $(idem status late) != queued ]] || fail "a run that gave up must leave the line"

release_fifo "$T/hold"
bg_wait first
expect_rc 0
for ((i = 1; i <= n; i++)); do
  [[ $i == 7 || $i == 9 ]] && continue
  bg_wait "w$i"
  expect_rc 0
done
# One at a time (no overlap), every one once, in the order they arrived; the killed and the
# interrupted ones never ran.
want=$(for ((i = 0; i <= n; i++)); do [[ $i == 7 || $i == 9 ]] || echo "$i"; done)
assert_eq "$want" "$(cat "$T/order")" "the order the group ran in"
capture after idem ls --status queued
assert_lines 1 "$T/after.out"  # the header alone
assert_status k20 succeeded

# A group with nothing running or waiting runs at once; the key dedupes as ever.
capture again idem run -k k20 --serial g -- sh -c "$(job 20)"
expect_rc 0
assert_eq "$want" "$(cat "$T/order")" "a replay runs nothing"
capture other idem run -k solo --serial other -- true
expect_rc 0
integrity_ok
