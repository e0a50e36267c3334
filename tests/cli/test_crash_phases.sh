#!/usr/bin/env bash
# contract §8.3, issue 3: SIGKILL at every step of a run, 35 times per step (210 crashes). After each:
# the record is absent, finished or abandoned (never half-written), the command ran at most once
# across plain retries, and a SQLite store passes PRAGMA integrity_check. The crash points exist
# only in builds configured with -DIDEM_TEST_HOOKS=ON (scripts/test.sh does).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

if [[ $(idem --version) != *"(test hooks)"* ]]; then
  skip "idem was built without -DIDEM_TEST_HOOKS=ON"
fi

# phase -> the status the record must have right after a crash there
declare -A after=(
  [claim-before-commit]=none        # the claim's transaction never committed: rolled back
  [claim-after-commit]=abandoned    # claimed, command not started
  [running]=abandoned               # command started, idem gone
  [exited-before-finish]=abandoned  # command done, outcome never recorded
  [finish-before-commit]=abandoned  # outcome written but not committed: rolled back
  [finish-after-commit]=succeeded   # outcome durable
)
# PostgreSQL writes the outcome in one autocommitted UPDATE: nothing lies between the write and
# its commit, so there is no such point to crash at (a crash before it is exited-before-finish).
[[ -z ${IDEM_STORE:-} ]] || unset 'after[finish-before-commit]'
rounds=35
# crash_phase PHASE: the 35 crashes at PHASE and what follows each.
crash_phase() {
  local phase=$1 i key log runs want cmd
  for ((i = 0; i < rounds; i++)); do
    key="$phase-$i"
    log="$T/ran.$key"
    cmd=(sh -c 'echo x >> "$1"; echo "out $IDEM_ATTEMPT"' sh "$log")
    # Braces with stderr redirected keep bash's "Killed" report of each crash out of the log.
    # On PostgreSQL the shortest lease: a crashed claim is abandoned once it has run out.
    { capture "crash-$key" env IDEM_TEST_CRASH_AT="$phase" IDEM_LEASE=1s "$IDEM_BIN" run -k "$key" -- "${cmd[@]}"; } 2>/dev/null
    expect_rc 137
    if [[ ${after[$phase]} == abandoned ]]; then
      await_abandoned "$key"
    else
      assert_status "$key" "${after[$phase]}"
    fi

    # A plain retry never runs an attempt whose outcome is unknown.
    capture "retry-$key" idem run -k "$key" -- "${cmd[@]}"
    case ${after[$phase]} in
      none) expect_rc 0; assert_bytes "$T/retry-$key.out" 'out 1\n' ;;
      succeeded) expect_rc 0; assert_bytes "$T/retry-$key.out" 'out 1\n' ;;
      abandoned) expect_rc 69; assert_idem_error ;;
    esac
    runs=0
    [[ ! -e $log ]] || runs=$(wc -l <"$log")
    case $phase in
      claim-before-commit | claim-after-commit) want=$([[ ${after[$phase]} == none ]] && echo 1 || echo 0) ;;
      running) want=$runs; ((runs <= 1)) || fail "$key: ran $runs times" ;;
      *) want=1 ;;
    esac
    assert_eq "$want" "$runs" "executions of $key after a crash at $phase and a plain retry"

    # The explicit way out runs it once more, and only once.
    if [[ ${after[$phase]} == abandoned ]]; then
      capture "again-$key" idem run -k "$key" --retry-abandoned -- "${cmd[@]}"
      expect_rc 0
      assert_bytes "$T/again-$key.out" 'out 2\n'
      assert_lines $((runs + 1)) "$log"
      assert_status "$key" succeeded
    fi
  done
  integrity_ok
}

if [[ -z ${IDEM_STORE:-} ]]; then
  for phase in "${!after[@]}"; do crash_phase "$phase"; done
else
  # PostgreSQL: each abandoned attempt waits out its 1 s lease, which is most of this script's
  # time there; the phases use keys of their own, so they wait side by side (a failure in one
  # fails the script with its message).
  declare -A phase_pid=()
  for phase in "${!after[@]}"; do
    crash_phase "$phase" &
    phase_pid[$phase]=$!
  done
  for phase in "${!phase_pid[@]}"; do
    wait "${phase_pid[$phase]}" || fail "the crashes at $phase failed (their message is above)"
  done
fi
