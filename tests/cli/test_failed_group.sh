#!/usr/bin/env bash
# contract §8.3 for a failure: a run never overlaps what the failed attempt left running. A command
# that exits 1 but leaves a background loop in its process group (one that ignores TERM) keeps
# the key held: the next run exits 75 with one line naming the group while the loop lives;
# --kill-stale ends the group (TERM, KILL after --kill-after) and runs; once the group is gone by
# itself the next run runs. The group stays on the failed record (show names it).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
# The process group alone, as where cgroups cannot be made (test_cgroup_leftovers.sh: with them).
export IDEM_CGROUP=off

# Attempt 1 leaves a loop that ticks into $T/NAME.ticks and ignores TERM, then fails; later
# attempts finish at once.
# cmd_for NAME: sets cmd
cmd_for() {
  # shellcheck disable=SC2016
  cmd=(sh -c 'echo "attempt $IDEM_ATTEMPT" >> "$1.log"; [ "$IDEM_ATTEMPT" = 1 ] || exit 0
    (trap "" TERM; while :; do echo tick >> "$1.ticks"; sleep 0.05; done) >/dev/null 2>&1 </dev/null &
    echo $! > "$1.loop"; exit 1' sh "$T/$1")
  track_pid_file "$T/$1.loop"
}
ticks() { wc -l <"$T/$1.ticks"; }
ticked_since() { (($(ticks "$1") > $2)); }  # ticked_since NAME COUNT
ticking() {  # ticking NAME: the loop is still writing
  wait_until "the loop of '$1' ticks" ticked_since "$1" "$(ticks "$1")"
}

cmd_for fg
capture first idem run -k fg -- "${cmd[@]}"
expect_rc 1
loop=$(cat "$T/fg.loop")
pgid=$(awk '{print $5}' "/proc/$loop/stat")
ticking fg
assert_status fg failed
assert_eq "$pgid true" "$(idem show fg --json | jsonq /process_group /process_group_alive | tr '\t' ' ')" \
  "the failed record's group"

# The loop lives: the run is refused with 75 and one line, nothing ran, the loop untouched.
capture refused idem run -k fg -- "${cmd[@]}"
expect_rc 75
assert_idem_error
file_has "$T/refused.err" "failed attempt 1 still has live processes in process group $pgid" ||
  fail "the refusal should name the failed attempt's group: $(cat "$T/refused.err")"
file_has "$T/refused.err" "--kill-stale" || fail "the refusal should point to --kill-stale: $(cat "$T/refused.err")"
assert_bytes "$T/fg.log" 'attempt 1\n'
ticking fg
# -q does not silence it (unlike a key running elsewhere): the processes may never end, and cron
# mails the line. status, show and doctor name them too. --wait waits for the group, then 75.
capture quiet idem run -k fg -q -- "${cmd[@]}"
expect_rc 75
file_has "$T/quiet.err" "failed attempt 1 still has live processes in process group $pgid" ||
  fail "-q hid the leftovers: $(cat "$T/quiet.err")"
capture st idem status fg
assert_bytes "$T/st.out" 'failed\n'
file_has "$T/st.err" "left live processes in process group $pgid" || fail "status: $(cat "$T/st.err")"
capture sh idem show fg
file_has "$T/sh.out" "processes: process group $pgid still has live processes" ||
  fail "show: $(cat "$T/sh.out")"
capture doc idem doctor --json
expect_rc 1
file_has "$T/doc.out" '"check":"leftovers"' || fail "doctor: $(cat "$T/doc.out")"
file_has "$T/doc.out" "process group $pgid" || fail "doctor does not name the group: $(cat "$T/doc.out")"
capture waited idem run -k fg --wait 300ms -- "${cmd[@]}"
expect_rc 75
file_has "$T/waited.err" "(waited 300ms)" || fail "the refusal after --wait: $(cat "$T/waited.err")"
assert_bytes "$T/fg.log" 'attempt 1\n'
# A failure made final (--replay-failures) is replayed: nothing runs, nothing overlaps.
capture replayed idem run -k fg --replay-failures -- "${cmd[@]}"
expect_rc 1
assert_bytes "$T/fg.log" 'attempt 1\n'

# --kill-stale ends the group (the loop ignores TERM: KILL after --kill-after), then runs.
capture kill idem run -k fg --kill-stale --kill-after 200ms -- "${cmd[@]}"
expect_rc 0
pid_gone "$loop" || fail "--kill-stale should have ended the loop $loop"
assert_bytes "$T/fg.log" 'attempt 1\nattempt 2\n'
assert_status fg succeeded
stopped=$(ticks fg)
assert_eq "$stopped" "$(ticks fg)" "ticks after --kill-stale"

# Once the group is gone by itself, the next run runs.
cmd_for later
capture first2 idem run -k later -- "${cmd[@]}"
expect_rc 1
capture early idem run -k later -- "${cmd[@]}"
expect_rc 75
# The loop and its sleep, the whole group, end.
kill -KILL -- "-$(awk '{print $5}' "/proc/$(cat "$T/later.loop")/stat")"
group_empty() { [[ $(idem show later --json | jsonq /process_group_alive) == false ]]; }
wait_until "the group of 'later' is empty" group_empty
capture after idem run -k later -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/later.log" 'attempt 1\nattempt 2\n'

# each shares the rule: the failed line's key is refused while its group lives.
cmd_for streamed
printf '{"id":"streamed"}\n' >"$T/lines"
capture each1 idem each --key-field /id -- "${cmd[@]}" <"$T/lines"
wait_until "the loop of 'streamed' starts" test -s "$T/streamed.loop"
capture each2 idem each --key-field /id -- "${cmd[@]}" <"$T/lines"
file_has "$T/each2.err" "processes of it are still alive" ||
  fail "each should refuse the failed key while its group lives: $(cat "$T/each2.err")"
assert_bytes "$T/streamed.log" 'attempt 1\n'

# The number of a failed attempt's group, free once the group emptied, now names another group
# whose leader has exited too (pid reuse: another user's job, a daemon). Its members carry no
# IDEM_ATTEMPT_MARK of the attempt: the next run neither waits for them nor, with --kill-stale,
# stops them, and says so. (On SQLite: the record's group is set to that number by hand.)
if [[ ${IDEM_TEST_BACKEND:-sqlite} == sqlite ]]; then
  reused_cmd=(sh -c '[ "$IDEM_ATTEMPT" = 1 ] && exit 1; echo ran')
  capture reused1 idem run -k reused -- "${reused_cmd[@]}"
  expect_rc 1
  # setsid: a group of its own, led by the sh that exits once its sleep is started.
  setsid -w sh -c 'sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > "$1"' sh "$T/stranger.pid"
  track_pid_file "$T/stranger.pid"
  stranger=$(cat "$T/stranger.pid")
  other_group=$(awk '{print $5}' "/proc/$stranger/stat")
  [[ $other_group != "$stranger" && ! -e /proc/$other_group ]] ||
    fail "the stranger's group $other_group should have lost its leader"
  sqlite3 "$IDEM_DB" "UPDATE records SET pgid = $other_group WHERE key = 'reused'"
  assert_eq "$other_group false" \
    "$(idem show reused --json | jsonq /process_group /process_group_alive | tr '\t' ' ')" \
    "a group of the number whose members are not the attempt's"
  capture reused2 idem run -k reused --kill-stale --kill-after 100ms -- "${reused_cmd[@]}"
  expect_rc 0
  assert_bytes "$T/reused2.out" 'ran\n'
  file_has "$T/reused2.err" "process group $other_group of its failed attempt 1 has live processes that cannot be proven the attempt's" ||
    fail "the run should say what it left alone: $(cat "$T/reused2.err")"
  ! pid_gone "$stranger" || fail "--kill-stale stopped a process of another group ($stranger)"
  kill -KILL "$stranger"
fi

# The check holds whatever the TTL: a failed record that expired while its leftovers live still
# holds the key (75), and status names them.
cmd_for expiring
capture exp1 idem run -k expiring --ttl 1s -- "${cmd[@]}"
expect_rc 1
ticking expiring
expired_now() { [[ $(idem status expiring 2>/dev/null) == expired ]]; }
wait_until "the failed record's 1 s TTL runs out" expired_now
capture exp2 idem run -k expiring -- "${cmd[@]}"
expect_rc 75
file_has "$T/exp2.err" "failed attempt 1 still has live processes" ||
  fail "an expired failure's leftovers: $(cat "$T/exp2.err")"
assert_bytes "$T/expiring.log" 'attempt 1\n'
capture exp3 idem status expiring
file_has "$T/exp3.err" "left live processes" || fail "status of an expired failure: $(cat "$T/exp3.err")"
old_loop=$(cat "$T/expiring.loop")
# --kill-stale ends them; the run is then attempt 1 of the key again (the record had expired),
# which leaves a loop of its own (the cleanup ends it).
capture exp4 idem run -k expiring --kill-stale --kill-after 200ms -- "${cmd[@]}"
expect_rc 1
pid_gone "$old_loop" || fail "--kill-stale should have ended the expired failure's loop"
assert_bytes "$T/expiring.log" 'attempt 1\nattempt 1\n'
