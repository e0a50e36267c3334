#!/usr/bin/env bash
# SPEC §11, schedules, with real seconds: `idem expect` records what a family of keys should do,
# `idem check` finds missed due times, failures, overruns while they run, too many real attempts
# in a period (replays never count) and the recovery after them, each once; export and import
# carry the expectations; and `idem serve` evaluates them itself and tells each finding once
# through the "schedules" section's notify.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

# Bad input: one line naming what was wrong, exit 64; nothing stored.
for bad in "expect ''" "expect job- --every 0" "expect job- --every 2x" \
  "expect job- --cron '61 * * * *'" "expect job- --cron '* * * *'" \
  "expect job- --cron '@reboot'" "expect job- --cron '0 3 * * *' --tz Nowhere/Atlantis" \
  "expect job- --cron '0 3 * * *' --tz ../../etc/passwd" "expect job- --every 1m --tz UTC" \
  "expect job- --every 1m --cron '* * * * *'" "expect job- --every 1m --at-most 0" \
  "expect job- --grace 1m" "expect --list job-" "expect job- --rm --every 1m"; do
  eval "capture bad idem $bad"
  expect_rc 64
  assert_lines 1 "$T/bad.err"
  assert_idem_error
done
capture list idem expect --list
expect_rc 0
assert_empty "$T/list.out"
capture none idem check
expect_rc 0
assert_empty "$T/none.out"
capture rm_none idem expect --rm nothing-
expect_rc 1
file_has "$T/rm_none.err" "no expectation for 'nothing-'" || fail "rm of none: $(cat "$T/rm_none.err")"

# --every 2s: a due time with no real attempt is found missed once its grace is over; a run
# recovers it.
capture every idem expect job- --every 2s --grace 1s
expect_rc 0
file_has "$T/every.out" "expect job-: every 2.0s, next due " || fail "expect says: $(cat "$T/every.out")"
check_has() {  # check_has TEXT: `idem check` prints a line holding TEXT
  idem check >"$T/check.out" 2>"$T/check.err" || true
  file_has "$T/check.out" "$1"
}
WAIT_SECONDS=30 wait_until "a missed due time is found" check_has "missed job-: no real attempt started within 1.0s of "
capture missed idem check
expect_rc 1
# Each due time once: the lines name distinct times.
assert_eq "$(grep -c '^missed job-' "$T/missed.out")" \
  "$(grep '^missed job-' "$T/missed.out" | sort -u | wc -l)" "distinct missed due times"
idem run -k job-1 -- true >/dev/null
wait_until "the run recovers it" check_has "recovered job-: job-1 attempt 1 succeeded"
capture json idem check --json
jsonq /kind /pattern <"$T/json.out" >"$T/json.fields" || fail "check --json is not JSON: $(cat "$T/json.out")"
idem expect --rm job-
capture gone idem check
assert_empty "$T/gone.out"

# Replays never count; a second real attempt in the period is too often.
idem expect rep- --every 1h --at-most 1
for i in 1 2 3; do idem run -k rep-1 -- echo once >/dev/null; done
assert_eq 1 "$(idem log rep-1 --json | jsonq /attempts | grep -o '"number":' | wc -l)" \
  "rep-1's real attempts"
sleep_past_settle() { local t0=$1; (($(now_ms) - t0 >= 1100)); }
t0=$(now_ms)
wait_until "the settle time passed" sleep_past_settle "$t0"
capture replays idem check
expect_rc 0
assert_empty "$T/replays.out"
idem rm rep-1
idem run -k rep-1 -- echo again >/dev/null
wait_until "a second real attempt is too often" check_has "too-often rep-: 2 real attempts in the period from "
file_has "$T/check.out" "(at most 1), the last rep-1 attempt 1" || fail "too-often says: $(cat "$T/check.out")"

# A failure is found once, with its exit code; an overrun while the attempt still runs; a
# success closes what is about a time before its start (the failure before it), the next one
# the overrun.
idem expect long- --every 1h --max-runtime 1s
idem run -k long-1 -- sh -c 'echo no; exit 4' >/dev/null 2>&1 || true
wait_until "the failure is found" check_has "failed long-: long-1 attempt 1 failed (exit 4)"
mkfifo "$T/gate"
bg slow idem run -k long-2 -- sh -c 'read x < "$1"' sh "$T/gate"
wait_until "the overrun is found while it runs" check_has "overrun long-: long-2 attempt 1 has run "
bg_running slow || fail "the long run ended before its overrun was found"
release_fifo "$T/gate"
bg_wait slow
expect_rc 0
wait_until "the success recovers the failure" check_has "recovered long-: long-2 attempt 1 succeeded"
file_has "$T/check.out" "overrun long-: long-2" || fail "the overrun closed by its own run: $(cat "$T/check.out")"
idem run -k long-3 -- true >/dev/null
wait_until "the next success recovers the overrun" check_has "recovered long-: long-3 attempt 1 succeeded"
capture after idem check
! grep -q "^failed long-\|^overrun long-" "$T/after.out" || fail "still open after the recovery: $(cat "$T/after.out")"

# A cron schedule in a zone; --list shows the last run and the next due time in it.
idem expect nightly- --cron '30 2 * * *' --tz America/New_York --grace 10m
capture listed idem expect --list
expect_rc 0
file_has "$T/listed.out" "nightly-  cron '30 2 * * *' in America/New_York, grace 10m 0s; next due " ||
  fail "--list says: $(cat "$T/listed.out")"
grep -q "nightly-.*next due 20[0-9-]*T02:30:00-0[45]:00" "$T/listed.out" ||
  fail "the next due time is not 02:30 New York time: $(cat "$T/listed.out")"
file_has "$T/listed.out" "last run long-3 attempt 1 at " || fail "no last run: $(cat "$T/listed.out")"
idem expect --list --json | jsonq /pattern >"$T/patterns"
assert_eq "long- nightly- rep-" "$(tr '\n' ' ' <"$T/patterns" | sed 's/ $//')" "--list --json patterns"

# Export and import carry the expectations (into a SQLite store, whichever this one is).
idem export >"$T/export.jsonl"
assert_eq 3 "$(grep -c '^{"expectation":' "$T/export.jsonl")" "expectation lines exported"
capture imported idem --store "sqlite:$T/other.db" import "$T/export.jsonl"
expect_rc 0
idem --store "sqlite:$T/other.db" expect --list --json | jsonq /pattern >"$T/other-patterns"
assert_same "$T/patterns" "$T/other-patterns"
capture again idem --store "sqlite:$T/other.db" import "$T/export.jsonl"
expect_rc 0
file_has "$T/again.err" "0 imported" || fail "a second import: $(cat "$T/again.err")"

# The daemon evaluates on its own and tells each finding once through its notify command.
# Each notification: NOTES/<event>.<n> (its stdin) and NOTES/<event>.<n>.env (its environment).
notes_script
cat >"$T/serve.json" <<EOF2
{"hooks": [{"path": "/hooks/noop", "command": ["true"]}],
 "schedules": {"notify": {"command": ["$T/note.sh"], "on": "change"}}}
EOF2
idem expect srv- --every 2s --grace 1s
# Two daemons on the store: each finding is kept, so told, by one of them.
DAEMON=second start_daemon "$T/serve.json"
start_daemon "$T/serve.json"
WAIT_SECONDS=30 wait_until "the daemon tells a missed due time" test -s "$NOTES/missed.0"
WAIT_SECONDS=30 wait_until "three missed due times are told" test -s "$NOTES/missed.2"
assert_eq "missed	missed	srv-	2000" \
  "$(jsonq /event /finding/kind /finding/pattern /expectation/every_ms <"$NOTES/missed.0")" \
  "the missed document"
grep -qx "IDEM_EVENT=missed" "$NOTES/missed.0.env" || fail "no IDEM_EVENT=missed"
grep -q "^IDEM_KEY=srv-@20" "$NOTES/missed.0.env" || fail "IDEM_KEY of a missed due time"
# grep reads the files itself: `cat | grep -q` fails under pipefail when grep quits at its first
# match before cat has written the second file (cat dies of SIGPIPE).
grep -q '"event":"schedule_finding"' "$T/$DAEMON.err" "$T/second.err" ||
  fail "no schedule_finding in the daemons' logs"
idem run -k srv-1 -- true >/dev/null
told_recovered() { ls "$NOTES" | grep -q '^recovered\.[0-9]*$'; }
wait_until "the daemon tells the recovery" told_recovered
# /metrics counts what each daemon found (the two add up to what was told).
get /metrics
found_here=$(sed -n 's/^idem_schedule_findings_total{kind="missed"} //p' "$T/resp.body")
URL=http://127.0.0.1:$(<"$T/second.port") get /metrics
found_there=$(sed -n 's/^idem_schedule_findings_total{kind="missed"} //p' "$T/resp.body")
(( ${found_here:-0} + ${found_there:-0} >= 3 )) ||
  fail "/metrics counts ${found_here:-0} + ${found_there:-0} missed due times"
stop_daemon
stop_daemon second
# Each finding once: no two notifications of one due time.
for f in "$NOTES"/missed.*[0-9]; do jsonq /finding/at <"$f"; done | sort >"$T/told"
assert_eq "$(wc -l <"$T/told")" "$(sort -u "$T/told" | wc -l)" "distinct due times told"
# What the daemon kept is not found again by a check.
capture later idem check
! grep -q "^recovered srv-: srv-1" "$T/later.out" || fail "the daemon's recovery was found again"
