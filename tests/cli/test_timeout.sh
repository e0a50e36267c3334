#!/usr/bin/env bash
# --timeout stops the command's whole group (TERM, then KILL after --kill-after): exit 124,
# outcome failed with timed_out true.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

start=$(now_ms)
capture t1 idem run -k slow --timeout 1s -- sh -c 'echo before; exec sleep 100'
expect_rc 124
elapsed=$(($(now_ms) - start))
((elapsed >= 900 && elapsed < 9000)) || fail "--timeout 1s took ${elapsed} ms"
assert_bytes "$T/t1.out" 'before\n'
assert_status slow failed
idem show slow --json >"$T/slow.json"
assert_eq "true" "$(jsonq /timed_out <"$T/slow.json")" "timed_out of the stored record"
assert_eq "failed" "$(jsonq /status <"$T/slow.json")" "status in show --json"
# A stored timeout replays as 124 with --replay-failures, without running.
start=$(now_ms)
capture t2 idem run -k slow --timeout 1s --replay-failures -- sh -c 'echo before; exec sleep 100'
expect_rc 124
assert_bytes "$T/t2.out" 'before\n'
elapsed=$(($(now_ms) - start))
((elapsed < 900)) || fail "the replay of a timed-out record took ${elapsed} ms: it ran again?"

# A command that ignores TERM is killed after --kill-after, with its grandchild.
track_pid_file "$T/sh.pid"
track_pid_file "$T/gc.pid"
stubborn=(sh -c 'trap "" TERM; echo $$ > "$1"; sleep 100 & echo $! > "$2"; wait' sh "$T/sh.pid" "$T/gc.pid")
start=$(now_ms)
capture k1 idem run -k stubborn --timeout 1s --kill-after 1s -- "${stubborn[@]}"
expect_rc 124
elapsed=$(($(now_ms) - start))
((elapsed >= 1900 && elapsed < 9000)) || fail "--timeout 1s --kill-after 1s took ${elapsed} ms"
wait_until "the timed-out shell is gone" pid_gone "$(cat "$T/sh.pid")"
wait_until "the timed-out grandchild is gone" pid_gone "$(cat "$T/gc.pid")"
assert_eq "true" "$(idem show stubborn --json | jsonq /timed_out)" "timed_out after kill-after"
assert_status stubborn failed

# A command that ends in time is not affected; its record is not timed out.
capture fast idem run -k fast --timeout 5s -- sh -c 'echo quick; exit 4'
expect_rc 4
assert_bytes "$T/fast.out" 'quick\n'
assert_eq "false" "$(idem show fast --json | jsonq /timed_out)" "timed_out of a command that ended in time"
