#!/usr/bin/env bash
# --on-failure and --on-change on run and each: the notify command runs with the event, the
# record and its attempt as JSON on stdin and IDEM_EVENT, IDEM_KEY in its environment; its own
# failure or time-out is one `idem: notify ...` line and never changes idem's exit code.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
# A killed owner is abandoned once its lease runs out on PostgreSQL (await_abandoned).
export IDEM_LEASE=2s

# Every notification is kept as NOTES/<n>.<event>.<key>, its stdin the file's content.
export NOTES=$T/notes
mkdir "$NOTES"
# shellcheck disable=SC2016
note='n=$(ls "$NOTES" | wc -l); cat > "$NOTES/$n.$IDEM_EVENT.$IDEM_KEY"'
notes() { ls "$NOTES" | sort -n | tr '\n' ' '; }

# A failing run: its exit code stands, the notify command got the record and the attempt.
# The job exits with the code in $T/code.
job=(sh -c 'echo out; echo err >&2; exit "$(cat "$0")"' "$T/code")
echo 3 >"$T/code"
capture fail1 idem run -k job --on-failure "$note" -- "${job[@]}"
expect_rc 3
assert_bytes "$T/fail1.out" 'out\n'
assert_eq "0.failed.job " "$(notes)" "notifications after a failure"
doc=$NOTES/0.failed.job
assert_eq "failed	job	failed	3	1	3	failed	exit	$(hostname)" \
  "$(jsonq /event /key /record/status /record/exit_code /attempt/number /attempt/exit_code \
     /attempt/outcome /attempt/reason /attempt/owner/host <"$doc")" "the failure's document"
assert_eq "$(printf 'out\n' | base64)	$(printf 'err\n' | base64)" \
  "$(jsonq /record/stdout_b64 /record/stderr_b64 <"$doc")" "the output in the document"
# Its times and its request are the record's, as `idem show --json` has them.
assert_eq "$(idem show job --json | jsonq /started_at /finished_at /request/argv/0)" \
  "$(jsonq /attempt/started_at /attempt/finished_at /record/request/argv/0 <"$doc")" \
  "the attempt's times and the request"

# Failing again tells again under --on-failure; under --on-change a failure after a failure is
# no change, the recovery is.
echo 4 >"$T/code"
capture fail2 idem run -k job --on-failure "$note" -- "${job[@]}"
expect_rc 4
capture fail3 idem run -k job --on-change "$note" -- "${job[@]}"
expect_rc 4
echo 0 >"$T/code"
capture ok1 idem run -k job --on-change "$note" -- "${job[@]}"
expect_rc 0
assert_eq "0.failed.job 1.failed.job 2.recovered.job " "$(notes)" "notifications after recovery"
assert_eq "recovered	succeeded	4	0	exit" \
  "$(jsonq /event /record/status /attempt/number /attempt/exit_code /attempt/reason \
     <"$NOTES/2.recovered.job")" "the recovery's document"
# fail, fail, succeed, all --on-change, on a new key: told twice (failed, recovered).
for code in 1 1 0; do
  echo "$code" >"$T/code"
  capture "change$code" idem run -k changes --on-change "$note" -- "${job[@]}"
  expect_rc "$code"
done
assert_eq "3.failed.changes 4.recovered.changes " "$(ls "$NOTES" | grep changes | sort -n | tr '\n' ' ')" \
  "--on-change over fail, fail, succeed"
rm -f "$NOTES"/*.changes
# A replay is no news, nor is a first success.
echo 5 >"$T/code"
capture replay idem run -k job --on-change "$note" -- "${job[@]}"
expect_rc 0
assert_bytes "$T/replay.out" 'out\n'
capture fresh idem run -k fresh --on-change "$note" -- true
expect_rc 0
assert_eq 3 "$(ls "$NOTES" | wc -l)" "notifications after a replay and a first success"

# The notify command's own output goes to stderr: stdout stays the command's.
capture chatty idem run -k chatty --on-failure 'echo told; echo also >&2' -- sh -c 'echo mine; exit 1'
expect_rc 1
assert_bytes "$T/chatty.out" 'mine\n'
assert_bytes "$T/chatty.err" 'told\nalso\n'

# A notify command that fails is one line on stderr; the exit code is the command's.
capture nfail idem run -k nfail --on-failure 'echo cannot mail >&2; exit 9' -- sh -c 'exit 5'
expect_rc 5
assert_bytes "$T/nfail.err" "cannot mail\nidem: notify for key 'nfail' (failed) exited 9\n"
capture nmissing idem run -k nmissing --on-failure 'no-such-notifier-xyz' -- false
expect_rc 1
file_has "$T/nmissing.err" "idem: notify for key 'nmissing' (failed) exited 127" ||
  fail "a notify command that is not found: $(cat "$T/nmissing.err")"
# One that hangs is stopped at --notify-timeout, with everything it started; idem waited for it.
# shellcheck disable=SC2016
hang='echo $$ > "$NOTES/../hang.pid"; sleep 1000 & echo $! > "$NOTES/../child.pid"; wait'
track_pid_file "$T/hang.pid"
track_pid_file "$T/child.pid"
capture nhang idem run -k nhang --on-failure "$hang" --notify-timeout 1s -- sh -c 'exit 6'
expect_rc 6
file_has "$T/nhang.err" "idem: notify for key 'nhang' (failed) timed out after" ||
  fail "a hanging notify command: $(cat "$T/nhang.err")"
pid_gone "$(cat "$T/hang.pid")" || fail "the timed-out notify command outlived idem"
wait_until "the notify command's child is stopped too" pid_gone "$(cat "$T/child.pid")"
# One that exits at once, leaving a child that ignores TERM: idem waits for the child until the
# timeout, then kills it (KILL after TERM), before it exits.
# shellcheck disable=SC2016
stray='trap "" TERM; sleep 30 & echo $! > "$NOTES/../stray.pid"; echo bg'
track_pid_file "$T/stray.pid"
capture nstray idem run -k nstray --on-failure "$stray" --notify-timeout 1s -- sh -c 'exit 6'
expect_rc 6
assert_bytes "$T/nstray.err" "bg\nidem: notify for key 'nstray' (failed) timed out after %s and was stopped\n" \
  "$(sed -n 's/.*timed out after \(.*\) and was stopped/\1/p' "$T/nstray.err")"
pid_gone "$(cat "$T/stray.pid")" || fail "the notify command's background child outlived idem"

# A big output: the document carries its first and last 64 KiB of each stream and their sizes.
seq 1 200000 >"$T/big"
capture nbig idem run -k nbig --on-failure 'cat > "$NOTES/../big.doc"' -- sh -c 'cat "$0"; exit 1' "$T/big"
expect_rc 1
size=$(wc -c <"$T/big")
(( $(wc -c <"$T/big.doc") < 200000 )) || fail "the document is $(wc -c <"$T/big.doc") bytes"
assert_eq "$size	$((size - 131072))	0" \
  "$(jsonq /record/stdout_bytes /record/stdout_omitted_bytes /record/stderr_bytes <"$T/big.doc")" \
  "the sizes in a big output's document"
jsonq /record/stdout_b64 <"$T/big.doc" | base64 -d >"$T/big.head"
jsonq /record/stdout_tail_b64 <"$T/big.doc" | base64 -d >"$T/big.tail"
head -c 65536 "$T/big" >"$T/big.head.want"
tail -c 65536 "$T/big" >"$T/big.tail.want"
assert_same "$T/big.head.want" "$T/big.head"
assert_same "$T/big.tail.want" "$T/big.tail"

# Usage: one of the two flags, a timeout above zero.
capture both idem run -k u --on-failure true --on-change true -- true
expect_rc 64
assert_idem_error
capture zero idem run -k u --on-failure true --notify-timeout 0s -- true
expect_rc 64
assert_idem_error
status_is u none || fail "a usage error left a record"

# The owner killed mid-run is found by the next run: abandoned, told once.
rm -f "$NOTES"/*
# It hangs until the file cmd.pid.go exists.
cmd=(sh -c 'echo $$ > "$0"; [ -e "$0.go" ] || exec sleep 1000' "$T/cmd.pid")
track_pid_file "$T/cmd.pid"
bg owner idem run -k gone -- "${cmd[@]}"
wait_until "the command starts" test -s "$T/cmd.pid"
kill -KILL "$(bg_pid owner)"
bg_wait owner
expect_rc 137
wait_until "the command is gone after idem's kill -9" pid_gone "$(cat "$T/cmd.pid")"
await_abandoned gone
capture found idem run -k gone --on-change "$note" -- "${cmd[@]}"
expect_rc 69
assert_eq "0.abandoned.gone " "$(notes)" "notifications once the owner is found gone"
if [[ -n ${_pg_schema:-} ]]; then ended="lease ran out"; else ended="owner died"; fi
assert_eq "abandoned	abandoned	1	$ended	null" \
  "$(jsonq /event /record/status /attempt/number /attempt/reason /attempt/finished_at \
     <"$NOTES/0.abandoned.gone")" "the abandoned attempt's document"
# Found abandoned again: nothing new. Retried and succeeded: recovered.
capture found2 idem run -k gone --on-change "$note" -- "${cmd[@]}"
expect_rc 69
touch "$T/cmd.pid.go"
capture retried idem run -k gone --retry-abandoned --on-change "$note" -- "${cmd[@]}"
expect_rc 0
assert_eq "0.abandoned.gone 1.recovered.gone " "$(notes)" "notifications after the retry"

# each: the failing message's key is told, the others are not; the exit code is each's own.
rm -f "$NOTES"/*
printf '%s\n' '{"id":"m1"}' '{"id":"m2"}' '{"id":"m3"}' >"$T/msgs"
# The handler fails for m2 while the file m2.fails exists.
handler=(sh -c 'grep -q m2 && [ -e "$0" ] && exit 2; exit 0' "$T/m2.fails")
touch "$T/m2.fails"
capture each idem each --key-field /id --jobs 2 --on-failure "$note" -- "${handler[@]}" <"$T/msgs"
expect_rc 1
assert_eq "0.failed.m2 " "$(notes)" "each's notifications"
assert_eq "m2	2" "$(jsonq /key /attempt/exit_code <"$NOTES/0.failed.m2")" "each's document"
rm "$T/m2.fails"
capture each-again idem each --key-field /id --on-change "$note" -- "${handler[@]}" <"$T/msgs"
expect_rc 0
assert_eq "0.failed.m2 1.recovered.m2 " "$(notes)" "each's notifications after the rerun"
# A notify command that fails in each: reported, the summary and exit code unchanged.
printf '%s\n' '{"id":"e1"}' >"$T/msg1"
capture each-nfail idem each --key-field /id --on-failure 'exit 3' -- false <"$T/msg1"
expect_rc 1
file_has "$T/each-nfail.err" "idem: notify for key 'e1' (failed) exited 3" ||
  fail "each's notify failure: $(cat "$T/each-nfail.err")"
file_has "$T/each-nfail.err" "0 ran, 1 failed" || fail "each's summary: $(cat "$T/each-nfail.err")"
integrity_ok

# The two examples of docs/page-and-notifications.md, as written there: mail(1) (a stand-in on
# PATH that keeps its arguments and message) and a healthchecks-style ping with curl (to a real
# HTTP server here).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"
mkdir "$T/bin"
cat >"$T/bin/mail" <<'EOF2'
#!/bin/sh
printf '%s\n' "$@" > "$MAIL_DIR/args"
cat > "$MAIL_DIR/message"
EOF2
chmod +x "$T/bin/mail"
export PATH="$T/bin:$PATH" MAIL_DIR=$T
capture mail idem run -k nightly --on-failure 'mail -s "idem: $IDEM_KEY $IDEM_EVENT" root' -- sh -c 'exit 2'
expect_rc 2
assert_bytes "$T/args" '%s\nidem: nightly failed\nroot\n' -s
assert_eq "failed	nightly	2" "$(jsonq /event /key /attempt/exit_code <"$T/message")" "the mailed document"
start_upstream hc
export HC_PING_URL=$UURL/ping/check-uuid
for outcome in 1 0; do
  echo "$outcome" >"$T/code"
  capture "ping$outcome" idem run -k nightly-ping --on-change \
    'curl -fsS -m 10 --retry 3 -o /dev/null "$HC_PING_URL$([ "$IDEM_EVENT" = recovered ] || echo /fail)"' \
    -- "${job[@]}"
  expect_rc "$outcome"
  assert_bytes "$T/ping$outcome.err" 'err\n'  # the job's alone: curl -sS said nothing
done
assert_eq "/ping/check-uuid/fail
/ping/check-uuid" "$(jsonq /path <"$T/hc.log")" "the pings the upstream got"
