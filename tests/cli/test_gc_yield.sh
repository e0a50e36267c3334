#!/usr/bin/env bash
# gc at scale (issue 8): gc walks its indexes in short batches and leaves the writer lock free
# between them, so `idem run` started while gc works on a large store never waits out its busy
# timeout; running records are never collected; --dry-run counts what gc then removes.
tests_dir=${IDEM_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
source "$tests_dir/cli/lib.sh"
source "$tests_dir/cli/store_lib.sh"

n=100000  # 50,000 expired, 1,000 running, interleaved with live ones
fill_store "$IDEM_DB" "$n"
running=$((n / 100))
capture dry idem gc --dry-run
expect_rc 0
assert_eq "would remove $((n / 2))" "$(cat "$T/dry.out")" "gc --dry-run"

# gc in the background; meanwhile runs of new keys, one after another, each allowed to wait for
# the lock three seconds at most (a busy timeout, not a sleep: the run exits 74 if it is
# exceeded; one second was met by a checkpoint's fsync on a disk busy with a build beside the
# tests). What proves that gc yields is how many runs ended while it still ran: a gc that kept
# the lock to its end would let none finish before it.
bg gc idem gc
runs=0 during=0
while bg_running gc || ((runs == 0)); do
  capture "run-$runs" env IDEM_BUSY_TIMEOUT=3s "$IDEM_BIN" run -q -k "probe-$runs" -- true
  expect_rc 0
  bg_running gc && during=$((during + 1))
  runs=$((runs + 1))
done
bg_wait gc
expect_rc 0
assert_eq "removed $((n / 2))" "$(cat "$T/gc.out")" "gc's count"
echo "runs while gc ran: $during of $runs"
((during >= 3)) || fail "only $during runs overlapped gc: the store is too small to prove anything"

left=$(store_count "key LIKE 'rec-%'")
assert_eq $((n / 2)) "$left" "records left after gc"
assert_eq "$running" "$(store_count "status = 'running'")" \
  "running records left"
assert_eq 0 "$(store_count "expires_at <= 1710000000000")" \
  "expired records left"
assert_eq "$runs" "$(store_count "key LIKE 'probe-%' AND status = 'succeeded'")" \
  "probe runs recorded"
integrity_ok

# --older-than takes the finished ones too, never the running ones.
capture dry-old idem gc --older-than 1d --dry-run
expect_rc 0
assert_eq "would remove $((n / 2 - running))" "$(cat "$T/dry-old.out")" "gc --older-than --dry-run"
capture old idem gc --older-than 1d
expect_rc 0
assert_eq "removed $((n / 2 - running))" "$(cat "$T/old.out")" "gc --older-than"
assert_eq "$running" "$(store_count "key LIKE 'rec-%'")" \
  "records left after gc --older-than"
integrity_ok
