#include "core/decision.hpp"

namespace idem::core {

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::claim:
      return "claim";
    case Verdict::replay:
      return "replay";
    case Verdict::conflict:
      return "conflict";
    case Verdict::running:
      return "running";
    case Verdict::abandoned:
      return "abandoned";
    case Verdict::leftovers:
      return "leftovers";
    case Verdict::queued:
      return "queued";
    case Verdict::superseded:
      return "superseded";
    case Verdict::full:
      return "full";
  }
  return "unknown";
}

SerialStep decide_serial(const GroupState& group, bool latest, int64_t max_pending) {
  if (!group.running && group.queued == 0) return SerialStep::run;
  if (latest) return group.queued > 0 ? SerialStep::replace_pending : SerialStep::queue;
  return group.queued >= max_pending ? SerialStep::full : SerialStep::queue;
}

namespace {
bool may_retry(const Record& abandoned, const Policy& policy) {
  return policy.retry_abandoned &&
         (policy.retry_only_attempt == 0 || policy.retry_only_attempt == abandoned.attempt);
}

// A failed attempt's recorded group must be looked at (the caller checks leftovers, and has not
// yet cleared this attempt's).
bool leftovers_to_check(const Record& failed, const Policy& policy) {
  return policy.rerun_failed_only_attempt != 0 && failed.process_group.pgid != 0 &&
         policy.rerun_failed_only_attempt != failed.attempt;
}
}  // namespace

Decision decide(const Record* existing, std::string_view fingerprint, int64_t now_ms,
                bool owner_gone, const Policy& policy) {
  if (existing != nullptr && is_expired(*existing, now_ms)) {
    // What a failed attempt left running holds the key whatever its TTL: a record that expired
    // meanwhile is looked at first, as an unexpired one is.
    if (existing->status == Status::failed && leftovers_to_check(*existing, policy))
      return {Verdict::leftovers, false, 1};
    // Else an expired record behaves as absent: the attempt count starts again.
    return {Verdict::claim, false, 1};
  }
  if (existing == nullptr) return {Verdict::claim, false, 1};

  const int64_t next = existing->attempt + 1;
  // A lease, when the record has one, decides alone (owner_counts_gone).
  if (existing->lease_expires_ms != 0) owner_gone = lease_expired(*existing, now_ms);
  if (existing->fingerprint != fingerprint) {
    bool mark = existing->status == Status::running && owner_gone;
    return {Verdict::conflict, mark, next};
  }
  switch (existing->status) {
    case Status::running:
      if (!owner_gone) return {Verdict::running, false, next};
      return {may_retry(*existing, policy) ? Verdict::claim : Verdict::abandoned, true, next};
    case Status::abandoned:
      return {may_retry(*existing, policy) ? Verdict::claim : Verdict::abandoned, false, next};
    case Status::succeeded:
      return {Verdict::replay, false, next};
    case Status::failed:
      // Final when this attempt says so, or when the failed one was claimed saying so.
      if (policy.replay_failures || existing->replay_failures)
        return {Verdict::replay, false, next};
      // What it left running must be looked at first, as for an abandoned attempt.
      if (leftovers_to_check(*existing, policy)) return {Verdict::leftovers, false, next};
      return {Verdict::claim, false, next};
    case Status::queued:
      // Its number is the one it will run as. A waiter that died in line left its place: the
      // key is free again (the claim replaces the queued record).
      if (owner_gone && held_by_owner(*existing)) return {Verdict::claim, false, existing->attempt};
      return {Verdict::queued, false, existing->attempt};
    case Status::superseded:
      return {Verdict::superseded, false, next};
  }
  return {Verdict::running, false, next};
}

}  // namespace idem::core
