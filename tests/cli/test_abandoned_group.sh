#!/usr/bin/env bash
# contract §8.3: a retry never overlaps processes of the abandoned attempt that are still alive. A
# script's background job outlives idem's kill -9 (only the direct child gets PR_SET_PDEATHSIG);
# idem records the command's process group, reports it while it lives, refuses --retry-abandoned
# with 75 until it is empty, and --kill-stale ends it first.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
# The process group alone, as where cgroups cannot be made (test_cgroup_leftovers.sh: with them).
export IDEM_CGROUP=off
# A killed owner is abandoned once its lease runs out on PostgreSQL (await_abandoned); SQLite
# takes no lease.
export IDEM_LEASE=2s

# Attempt 1 starts a background grandchild and waits; later attempts finish at once.
cmd=(sh -c 'echo "attempt $IDEM_ATTEMPT" >> "$1"; [ "$IDEM_ATTEMPT" = 1 ] || exit 0
            sleep 1000 & echo $! > "$2"; wait' sh "$T/log" "$T/grandchild.pid")
track_pid_file "$T/grandchild.pid"
bg owner idem run -k grp -- "${cmd[@]}"
wait_until "the grandchild starts" test -s "$T/grandchild.pid"
gc=$(cat "$T/grandchild.pid")
kill -KILL "$(bg_pid owner)"
bg_wait owner
expect_rc 137
pid_gone "$gc" && fail "the grandchild should outlive idem's kill -9 (that is the case under test)"

# status stays one word for scripts; show names the live group.
await_abandoned grp
capture show idem show grp
expect_rc 0
pgid=$(awk '{print $5}' "/proc/$gc/stat")
file_has "$T/show.out" "process group $pgid still has live processes" ||
  fail "show should report the live group $pgid: $(cat "$T/show.out")"
assert_eq true "$(idem show grp --json | jsonq /process_group_alive)" "show --json process_group_alive"

# Without --retry-abandoned: 69, and the message says what is still running.
capture refused idem run -k grp -- "${cmd[@]}"
expect_rc 69
assert_idem_error
file_has "$T/refused.err" "process group $pgid still has live processes" ||
  fail "the 69 message should name the live group: $(cat "$T/refused.err")"

# --retry-abandoned is refused while the group lives: 75, nothing ran, the grandchild untouched.
capture retry idem run -k grp --retry-abandoned -- "${cmd[@]}"
expect_rc 75
assert_idem_error
file_has "$T/retry.err" "--kill-stale" || fail "the refusal should point to --kill-stale: $(cat "$T/retry.err")"
assert_bytes "$T/log" 'attempt 1\n'
pid_gone "$gc" && fail "a refused retry must not touch the grandchild"
await_abandoned grp

# --kill-stale without --retry-abandoned retries nothing: 69, the grandchild untouched.
capture alone idem run -k grp --kill-stale -- "${cmd[@]}"
expect_rc 69
assert_idem_error
pid_gone "$gc" && fail "--kill-stale without --retry-abandoned must not touch the grandchild"
assert_bytes "$T/log" 'attempt 1\n'

# --kill-stale ends the group (TERM, KILL after --kill-after), then runs attempt 2.
capture kill idem run -k grp --retry-abandoned --kill-stale --kill-after 2s -- "${cmd[@]}"
expect_rc 0
pid_gone "$gc" || fail "--kill-stale should have ended the grandchild $gc"
assert_bytes "$T/log" 'attempt 1\nattempt 2\n'
assert_status grp succeeded
assert_eq 2 "$(idem show grp --json | jsonq /attempt)" "attempt after --kill-stale"

# A grandchild that ignores TERM is KILLed after --kill-after.
cmd2=(sh -c '[ "$IDEM_ATTEMPT" = 1 ] || exit 0; trap "" TERM; sleep 1000 & echo $! > "$1"; wait' sh "$T/stubborn.pid")
track_pid_file "$T/stubborn.pid"
bg owner2 idem run -k stubborn -- "${cmd2[@]}"
wait_until "the stubborn grandchild starts" test -s "$T/stubborn.pid"
kill -KILL "$(bg_pid owner2)"
bg_wait owner2
await_abandoned stubborn
capture kill2 idem run -k stubborn --retry-abandoned --kill-stale --kill-after 200ms -- "${cmd2[@]}"
expect_rc 0
pid_gone "$(cat "$T/stubborn.pid")" || fail "--kill-stale should KILL a grandchild that ignores TERM"

# Once the group has emptied by itself, a plain --retry-abandoned runs.
cmd3=(sh -c '[ "$IDEM_ATTEMPT" = 1 ] || exit 0; read x < "$2" & echo $! > "$1"; wait' sh "$T/reader.pid" "$T/fifo")
mkfifo "$T/fifo"
track_pid_file "$T/reader.pid"
bg owner3 idem run -k later -- "${cmd3[@]}"
wait_until "the reader starts" test -s "$T/reader.pid"
kill -KILL "$(bg_pid owner3)"
bg_wait owner3
await_abandoned later
capture early idem run -k later --retry-abandoned -- "${cmd3[@]}"
expect_rc 75
release_fifo "$T/fifo"
wait_until "the reader ends" pid_gone "$(cat "$T/reader.pid")"
capture show-later idem show later
file_has "$T/show-later.out" "still has live processes" && fail "show should not report a group that emptied"
capture late idem run -k later --retry-abandoned -- "${cmd3[@]}"
expect_rc 0

# --retry-abandoned --wait waits for the abandoned attempt's group as for a failed one's: 75
# once the wait is over while it lives, and a run as soon as it has emptied within the wait.
mkfifo "$T/fifo4"
cmd4=(sh -c 'echo "attempt $IDEM_ATTEMPT" >> "$3"; [ "$IDEM_ATTEMPT" = 1 ] || exit 0
             read x < "$2" & echo $! > "$1"; wait' sh "$T/reader4.pid" "$T/fifo4" "$T/log4")
track_pid_file "$T/reader4.pid"
bg owner4 idem run -k waited -- "${cmd4[@]}"
wait_until "the reader of 'waited' starts" test -s "$T/reader4.pid"
kill -KILL "$(bg_pid owner4)"
bg_wait owner4
await_abandoned waited
started=$(now_ms)
capture short idem run -k waited --retry-abandoned --wait 300ms -- "${cmd4[@]}"
expect_rc 75
(($(now_ms) - started >= 300)) || fail "--wait 300ms answered 75 after $(($(now_ms) - started)) ms"
file_has "$T/short.err" "abandoned attempt 1 still has live processes" ||
  fail "the 75 should name the abandoned attempt's group: $(cat "$T/short.err")"
file_has "$T/short.err" "(waited 300ms)" || fail "the 75 should say it waited: $(cat "$T/short.err")"
bg long idem run -k waited --retry-abandoned --wait 20s -v -- "${cmd4[@]}"
wait_until "the retry waits" file_has "$T/long.err" "waiting up to 20s for key 'waited' (processes of abandoned attempt 1)"
assert_bytes "$T/log4" 'attempt 1\n'
release_fifo "$T/fifo4"
bg_wait long
expect_rc 0
assert_bytes "$T/log4" 'attempt 1\nattempt 2\n'
assert_status waited succeeded
integrity_ok
