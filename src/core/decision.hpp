#pragma once
// The decision at the heart of idem: given what the store holds for a key, does this attempt run,
// replay, or get refused? Pure: the store calls it inside its claim transaction.
#include <cstdint>
#include <string_view>

#include "core/record.hpp"

namespace idem::core {

struct Policy {
  // A failed outcome is final and replayed. The store records it with the attempt claimed
  // (Record::replay_failures), so a failure recorded so stays final for later attempts too.
  bool replay_failures = false;
  bool retry_abandoned = false;  // an abandoned attempt may be run again
  // With retry_abandoned: only the abandoned attempt with this number may be run again (the one
  // the caller has checked has no live processes left); 0: any. Another abandoned attempt gets
  // the `abandoned` verdict, so the caller can check it in turn; -1 (no attempt): none yet.
  int64_t retry_only_attempt = 0;
  // For a caller that checks what a failed attempt left running before running the key again
  // (its command's process group: a background job that ignored the end of its parent): only the
  // failed attempt with this number runs again. Another failed attempt that recorded a group
  // gets the `leftovers` verdict, so the caller can check it in turn; -1: none checked yet. 0:
  // no check, every failure that is not final runs again.
  int64_t rerun_failed_only_attempt = 0;
};

enum class Verdict {
  claim,      // run: no live record, or the previous one may be retried
  replay,     // a finished outcome stands: replay it
  conflict,   // the key was used with another fingerprint
  running,    // another live owner holds the key
  abandoned,  // the previous owner died mid-run; refused without --retry-abandoned
  leftovers,  // a failed attempt whose group the caller has not checked yet (see Policy)
  // Serial groups (SPEC §9):
  queued,      // the key waits its turn in its group (this claim queued it, or an earlier one)
  superseded,  // the key was queued, and a newer key of its `latest` group replaced it
  full,        // the group has as many pending as it may hold: nothing was queued
};

std::string_view to_string(Verdict verdict);

// A serial group as a claim finds it: whether an attempt of it runs (a live one), and how many
// wait their turn.
struct GroupState {
  bool running = false;
  int64_t queued = 0;
};

// What a claim whose key would run does in its serial group.
enum class SerialStep {
  run,              // nothing runs and nothing waits: run now
  queue,            // wait in line, behind the ones already waiting
  replace_pending,  // `latest`: the ones waiting are superseded, this one waits instead
  full,             // the line holds max_pending already: refused (an HTTP front answers 503)
};

// `latest`: while one runs, only the newest waits. max_pending bounds a fifo group's line.
SerialStep decide_serial(const GroupState& group, bool latest, int64_t max_pending);

struct Decision {
  Verdict verdict;
  // The existing record is `running` but its owner is provably gone: the store must mark it
  // abandoned (conditioned on its attempt) whatever the verdict.
  bool mark_abandoned = false;
  // Attempt number for a claim: 1 for a fresh key, previous + 1 for a retry.
  int64_t next_attempt = 1;
};

// `existing` may be null (no record). A running record's owner is gone when its lease ran out by
// `now_ms`; one without a lease, when `owner_gone` says so (the same-host check of its pid and
// boot id), which an unexpired lease overrules (core::owner_counts_gone).
Decision decide(const Record* existing, std::string_view fingerprint, int64_t now_ms,
                bool owner_gone, const Policy& policy);

}  // namespace idem::core
