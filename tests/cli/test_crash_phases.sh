#!/usr/bin/env bash
# contract §8.3, issue 3: SIGKILL at every step of a run (80 crashes on SQLite). After each:
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
# How many crashes at each phase. A crash point is one line of idem's code (IDEM_CRASH_POINT): a
# crash there leaves the same store behind every time, so a few rounds prove it and more only spawn
# more processes (this script was the suite's longest, plain and under ASan). `running` is the one
# race: the command was started and may or may not have written before idem died, so whether a
# retry finds it ran once or never varies from round to round; it keeps 35 rounds to meet both.
declare -A rounds=([running]=35)
# crash_phase PHASE [FIRST STEP]: the crashes at PHASE and what follows each (every STEP-th round
# from FIRST: the rounds use keys of their own, so they can run in several chains).
crash_phase() {
  local phase=$1 first=${2:-0} step=${3:-1} i key log runs want cmd
  for ((i = first; i < ${rounds[$phase]:-9}; i += step)); do
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
  # time there (a round takes ~3 s, its CPU ~0.5 s); every round uses keys of its own, so the
  # rounds wait side by side, in chains of about 9 (a failure in one fails the script with its
  # message).
  declare -A chain_pid=()
  for phase in "${!after[@]}"; do
    chains=$(((${rounds[$phase]:-9} + 8) / 9))
    for ((c = 0; c < chains; c++)); do
      crash_phase "$phase" "$c" "$chains" &
      chain_pid[$phase/$c]=$!
    done
  done
  for chain in "${!chain_pid[@]}"; do
    wait "${chain_pid[$chain]}" || fail "the crashes at ${chain%/*} failed (their message is above)"
  done
fi
