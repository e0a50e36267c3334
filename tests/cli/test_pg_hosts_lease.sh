#!/usr/bin/env bash
# contract §8.6 on the test cluster ($IDEM_TEST_PG_URL), with hosts simulated by namespaces (see
# hosts_lib.sh), under short leases: an owner killed with -9 on host A is running to host B, and
# to A itself, while its lease lasts (75, asked only while enough of it is left) and abandoned once it has run out (69), and a retry
# runs it as attempt 2;
# an owner paused (SIGSTOP) past its lease, whose key host B has retried meanwhile, is fenced off
# when it wakes: its command stopped, its outcome not recorded, exit 74. So is one paused past its
# lease that nobody retried: the key stays abandoned, for a human or --retry-abandoned to decide.
export IDEM_TEST_BACKEND=postgres  # lib.sh: a fresh schema of its own, skipped without a cluster
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/hosts_lib.sh"

for h in host-a host-b host-c; do host_new "$h"; done
mkfifo "$T/hold"

ms_of() { date -d "$1" +%s%3N; }  # ms_of ISO8601: Unix ms
lease_expires_ms() {  # lease_expires_ms KEY: the running record's lease, in Unix ms
  local iso
  iso=$(idem show "$1" --json | jsonq /lease_expires_at)
  [[ $iso != null && $iso != "<missing>" ]] || fail "running record '$1' has no lease_expires_at"
  ms_of "$iso"
}
status_on() { on_host "$1" idem status "$2"; }  # status_on HOST KEY: prints KEY's status on HOST
status_on_is() { [[ $(status_on "$1" "$2") == "$3" ]]; }  # status_on_is HOST KEY WORD

# The command of each part: logs "ATTEMPT HOST" and its pid; attempt 1 blocks on $T/hold (and
# exits 5 once released), a later one prints "attempt N".
# cmd_for NAME: sets cmd
cmd_for() {
  # shellcheck disable=SC2016
  cmd=(sh -c 'echo "$IDEM_ATTEMPT $(hostname)" >> "$1.log"; echo $$ > "$1.pid.$IDEM_ATTEMPT"
    if [ "$IDEM_ATTEMPT" = 1 ]; then read x < "$2"; echo late; exit 5; else echo "attempt $IDEM_ATTEMPT"; fi' \
    sh "$T/$1" "$T/hold")
  track_pid_file "$T/$1.pid.1"
}

# 1. kill -9 of the owner (IDEM_LEASE=6s) on host A while its command runs.
cmd_for vanish
bg_on_host host-a owner env IDEM_LEASE=6s "$IDEM_BIN" run -k vanish -- "${cmd[@]}"
wait_until "attempt 1 starts" test -s "$T/vanish.pid.1"
lease_before=$(lease_expires_ms vanish)
kill -KILL "$(bg_pid owner)"
killed_at=$(now_ms)
bg_wait owner
expect_rc 137
# The kernel ends the command with its idem (PR_SET_PDEATHSIG).
wait_until "attempt 1's command ends" pid_gone "$(cat "$T/vanish.pid.1")"
# Host B cannot check a pid on host A: the key is running (75) until the lease runs out, then
# abandoned (69); nothing runs meanwhile. What "while the lease lasts" sees is asked only while
# at least 2 s of it are left (read first): a loaded machine may take that long to get here, and
# then the lease has really run out.
if (($(now_ms) + 2000 < lease_before)); then
  capture b_running on_host host-b idem run -k vanish -- "${cmd[@]}"
  expect_rc 75
  assert_idem_error
  assert_eq running "$(status_on host-b vanish)" "status of 'vanish' on host B while its lease lasts"
  # Nor on host A, where the owner's pid is checkable: an unexpired lease is never overruled by
  # what a host sees of its processes.
  assert_eq running "$(status_on host-a vanish)" "status of 'vanish' on its owner's host"
else
  echo "note: $(($(now_ms) - killed_at)) ms passed since the kill; the running checks are left out"
fi
seen_69() {
  capture b_poll on_host host-b idem run -k vanish -- "${cmd[@]}"
  [[ $rc == 69 ]] && return 0
  expect_rc 75
  return 1
}
wait_until "host B sees 'vanish' abandoned" seen_69
abandoned_after=$(($(now_ms) - killed_at))
assert_idem_error
# Abandoned once the lease ran out, not long after (the bound is wide: a loaded machine's polls).
(($(now_ms) <= lease_before + 15000)) ||
  fail "abandoned ${abandoned_after} ms after the kill, long after its lease (6 s) ran out"
(($(now_ms) >= lease_before)) || fail "abandoned before the lease it had when killed ran out"
assert_eq abandoned "$(status_on host-b vanish)" "status of 'vanish' on host B after its lease"
assert_eq abandoned "$(status_on host-c vanish)" "status of 'vanish' on host C after its lease"
# --retry-abandoned on host B: attempt 2 runs there, once.
capture b_retry on_host host-b idem run -k vanish --retry-abandoned -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/b_retry.out" 'attempt 2\n'
assert_bytes "$T/vanish.log" '1 host-a\n2 host-b\n'
assert_status vanish succeeded
assert_eq "2 host-b" "$(idem show vanish --json | jsonq /attempt /owner/host | tr '\t' ' ')" "attempt and owner"
capture c_replay on_host host-c idem run -k vanish -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/c_replay.out" 'attempt 2\n'
assert_bytes "$T/vanish.log" '1 host-a\n2 host-b\n'

# 2. A paused owner (--lease 2s): host A's idem stopped while its command runs, past its lease;
# host B retries the key and finishes; host A, continued, is fenced off.
cmd_for paused
bg_on_host host-a owner "$IDEM_BIN" run -k paused --lease 2s -- "${cmd[@]}"
wait_until "attempt 1 starts" test -s "$T/paused.pid.1"
kill -STOP "$(bg_pid owner)"
wait_until "host B sees 'paused' abandoned" status_on_is host-b paused abandoned
capture b_retry on_host host-b idem run -k paused --retry-abandoned -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/b_retry.out" 'attempt 2\n'
kill -CONT "$(bg_pid owner)"
bg_wait owner
expect_rc 74
assert_idem_error owner
file_has "$T/owner.err" lease || fail "the fenced owner does not name its lease: $(cat "$T/owner.err")"
file_has "$T/owner.err" "not recorded" || fail "the fenced owner does not say it recorded nothing: $(cat "$T/owner.err")"
wait_until "the fenced owner's command is stopped" pid_gone "$(cat "$T/paused.pid.1")"
assert_bytes "$T/paused.log" '1 host-a\n2 host-b\n'
assert_status paused succeeded
assert_eq "2 host-b 0" "$(idem show paused --json | jsonq /attempt /owner/host /exit_code | tr '\t' ' ')" \
  "attempt, owner and exit code"
capture c_replay on_host host-c idem run -k paused -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/c_replay.out" 'attempt 2\n'

# 3. The same, but attempt 1's command finishes (exit 5) while its idem is stopped: the outcome
# it brings back when continued is fenced off as well (the record stays attempt 2's), and it says
# its lease was lost (74) whichever of its threads wakes first: the renewal, or the outcome's
# write, which finds the lease ended.
cmd_for late
bg_on_host host-a owner "$IDEM_BIN" run -k late --lease 2s -- "${cmd[@]}"
wait_until "attempt 1 starts" test -s "$T/late.pid.1"
kill -STOP "$(bg_pid owner)"
wait_until "host B sees 'late' abandoned" status_on_is host-b late abandoned
capture b_retry on_host host-b idem run -k late --retry-abandoned -- "${cmd[@]}"
expect_rc 0
release_fifo "$T/hold"
wait_until "attempt 1's command exits" pid_gone "$(cat "$T/late.pid.1")"
kill -CONT "$(bg_pid owner)"
bg_wait owner
expect_rc 74
file_has "$T/owner.err" "its lease was lost" || fail "the fenced owner's message: $(cat "$T/owner.err")"
assert_bytes "$T/owner.out" 'late\n'  # the command's live output
assert_eq 1 "$(wc -l <"$T/owner.err")" "lines on the fenced owner's stderr"
file_has "$T/owner.err" "not recorded" || fail "the fenced owner does not say it recorded nothing: $(cat "$T/owner.err")"
assert_bytes "$T/late.log" '1 host-a\n2 host-b\n'
assert_eq "2 host-b 0" "$(idem show late --json | jsonq /attempt /owner/host /exit_code | tr '\t' ' ')" \
  "attempt, owner and exit code"
assert_bytes <(idem show late --stdout) 'attempt 2\n'

# 4. Paused past its lease, nobody retries meanwhile: continued, host A's idem finds its lease
# gone and fences itself off; the record stays abandoned, and a retry is attempt 2.
cmd_for alone
bg_on_host host-a owner "$IDEM_BIN" run -k alone --lease 2s -- "${cmd[@]}"
wait_until "attempt 1 starts" test -s "$T/alone.pid.1"
kill -STOP "$(bg_pid owner)"
wait_until "host B sees 'alone' abandoned" status_on_is host-b alone abandoned
kill -CONT "$(bg_pid owner)"
bg_wait owner
expect_rc 74
assert_idem_error owner
file_has "$T/owner.err" "not recorded" || fail "the fenced owner does not say it recorded nothing: $(cat "$T/owner.err")"
wait_until "the fenced owner's command is stopped" pid_gone "$(cat "$T/alone.pid.1")"
for h in host-a host-b; do assert_eq abandoned "$(status_on "$h" alone)" "status of 'alone' on $h"; done
capture b_plain on_host host-b idem run -k alone -- "${cmd[@]}"
expect_rc 69
capture b_retry on_host host-b idem run -k alone --retry-abandoned -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/b_retry.out" 'attempt 2\n'
assert_bytes "$T/alone.log" '1 host-a\n2 host-b\n'
