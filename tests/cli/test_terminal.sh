#!/usr/bin/env bash
# idem run in a terminal's foreground lends the terminal to the command's process group, as a
# shell's job control does (tests/helpers/pty_job.py plays that shell on a pseudo-terminal): a
# prompt is answered and echoed (not stopped by SIGTTIN), the outcome stored and replayed;
# Ctrl-C reaches the command (a failure by signal); Ctrl-Z stops the job, `fg` resumes it; idem
# in the background takes no terminal (its command's read stops the job: "Stopped (tty input)").
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
command -v python3 >/dev/null || skip "python3 is not installed"
job() { python3 "$_tests_root/helpers/pty_job.py" "$@"; }
prompt=(sh -c 'printf "name? "; read x; echo "hello $x"')

# A prompt: answered through the terminal, echoed by it, the outcome stored; the terminal's
# foreground is idem's group again at its end (pty_job checks it).
capture ask job "$T/ask.tty" expect:"name? " send:'alice\n' expect:"hello alice" exit:0 \
  -- "$IDEM_BIN" run -k prompt -- "${prompt[@]}"
expect_rc 0
file_has "$T/ask.tty" $'alice\r\n' || fail "the terminal should echo the answer: $(cat -v "$T/ask.tty")"
assert_status prompt succeeded
# The replay (no terminal here) gives the command's own output, not the terminal's echo.
capture replay idem run -k prompt -- "${prompt[@]}"
expect_rc 0
assert_bytes "$T/replay.out" 'name? hello alice\n'

# Ctrl-C goes from the terminal to the command's group: it dies of SIGINT, recorded as such.
capture int job "$T/int.tty" expect:"name? " send:'\x03' exit:130 \
  -- "$IDEM_BIN" run -k interrupted -- "${prompt[@]}"
expect_rc 0
assert_status interrupted failed
assert_eq 2 "$(idem show interrupted --json | jsonq /signal)" "signal of the Ctrl-C'd command"

# Ctrl-Z stops the command; idem takes the terminal back and stops its own group with it, so
# the shell sees the job stopped; `fg` gives the terminal and SIGCONT to the job, idem passes
# both on to the command, which reads its answer.
capture tstp job "$T/tstp.tty" expect:"name? " send:'\x1a' stopped:TSTP fg send:'bob\n' \
  expect:"hello bob" exit:0 -- "$IDEM_BIN" run -k suspended -- "${prompt[@]}"
expect_rc 0
assert_status suspended succeeded
assert_eq 1 "$(idem show suspended --json | jsonq /attempt)" "attempts of the suspended run"

# In the background idem does not take the terminal: its command's read stops on SIGTTIN, and
# idem stops its group with SIGTTIN; brought to the foreground, the command gets the terminal.
capture back job "$T/back.tty" --background stopped:TTIN fg expect:"name? " send:'carol\n' \
  expect:"hello carol" exit:0 -- "$IDEM_BIN" run -k background -- "${prompt[@]}"
expect_rc 0
assert_status background succeeded
