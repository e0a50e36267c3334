#!/usr/bin/env bash
# SIGTERM, SIGINT and SIGHUP sent to idem reach the command's whole process group; idem exits
# 128+N, records failed with the signal, and leaves no grandchild behind.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

for sig in TERM INT HUP; do
  num=$(kill -l "$sig")
  track_pid_file "$T/$sig.pid"
  track_pid_file "$T/$sig.gc"
  cmd=(sh -c 'echo $$ > "$1"; sleep 1000 & echo $! > "$2"; wait' sh "$T/$sig.pid" "$T/$sig.gc")
  # Background jobs of a script start with SIGINT ignored; a user's idem would not.
  bg "$sig" env --default-signal=INT,QUIT "$IDEM_BIN" run -k "sig-$sig" -- "${cmd[@]}"
  wait_until "the $sig command starts its grandchild" test -s "$T/$sig.gc"
  kill "-$sig" "$(bg_pid "$sig")"
  bg_wait "$sig"
  expect_rc $((128 + num))
  wait_until "the $sig command is gone" pid_gone "$(cat "$T/$sig.pid")"
  wait_until "the $sig grandchild is gone" pid_gone "$(cat "$T/$sig.gc")"
  assert_status "sig-$sig" failed
  assert_eq "$num" "$(idem show "sig-$sig" --json | jsonq /signal)" "stored signal for SIG$sig"
  # The stored signal replays as 128+N with --replay-failures, without running.
  capture "replay-$sig" idem run -k "sig-$sig" --replay-failures -- "${cmd[@]}"
  expect_rc $((128 + num))
done

# A command that dies of a signal on its own: 128+N, recorded, re-run by default.
capture self1 idem run -k self -- sh -c 'echo x >> "$1"; kill -USR1 $$' sh "$T/self.count"
expect_rc $((128 + $(kill -l USR1)))
assert_eq "$(kill -l USR1)" "$(idem show self --json | jsonq /signal)" "stored signal for a self-kill"
capture self2 idem run -k self -- sh -c 'echo x >> "$1"; kill -USR1 $$' sh "$T/self.count"
expect_rc $((128 + $(kill -l USR1)))
assert_lines 2 "$T/self.count"

# A command that ignores TERM: idem forwards the first TERM, then KILLs the group after
# --kill-after; exit 137 (the command died of KILL), recorded failed with a note saying why.
track_pid_file "$T/deaf.pid"
deaf=(sh -c 'trap "" TERM; echo $$ > "$1"; exec sleep 1000' sh "$T/deaf.pid")
bg deaf idem run -k deaf --kill-after 300ms -- "${deaf[@]}"
wait_until "the TERM-ignoring command is ready" test -s "$T/deaf.pid"
kill -TERM "$(bg_pid deaf)"
bg_wait deaf
expect_rc 137
wait_until "the TERM-ignoring command is gone" pid_gone "$(cat "$T/deaf.pid")"
assert_status deaf failed
assert_eq 9 "$(idem show deaf --json | jsonq /signal)" "stored signal after the escalation"
idem show deaf --json | jsonq /note | grep -q 'received TERM.*killed' ||
  fail "the note should say the command outlived TERM: $(idem show deaf --json | jsonq /note)"

# A second signal KILLs at once, without waiting out a long --kill-after. The command handles
# TERM (it logs and goes on), so the log says when the first one was forwarded.
track_pid_file "$T/stubborn.pid"
stubborn=(sh -c 'trap "echo term >> \"$2\"" TERM; echo $$ > "$1"
                 while :; do sleep 1; done' sh "$T/stubborn.pid" "$T/stubborn.log")
bg stubborn idem run -k stubborn --kill-after 1h -- "${stubborn[@]}"
wait_until "the stubborn command is ready" test -s "$T/stubborn.pid"
kill -TERM "$(bg_pid stubborn)"
wait_until "the first TERM reaches the command" file_has "$T/stubborn.log" term
bg_running stubborn || fail "idem should still wait for the command after one TERM"
kill -TERM "$(bg_pid stubborn)"
bg_wait stubborn
expect_rc 137
wait_until "the stubborn command is gone" pid_gone "$(cat "$T/stubborn.pid")"
assert_status stubborn failed
