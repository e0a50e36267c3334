#include "store/claim_flow.hpp"

#include <utility>

#include "core/decision.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "util/crash_point.hpp"

namespace idem::store {

namespace {

ClaimResult claimed(const ClaimRequest& req, int64_t attempt, const std::string& token) {
  IDEM_CRASH_POINT("claim-before-commit");
  return ClaimResult{core::Verdict::claim, attempt, token, lease_end(req.now_ms, req.lease_ms),
                     std::nullopt};
}

[[noreturn]] void lost_race(const RowOperations& rows, const std::string& key) {
  throw StoreError("store " + rows.where() + ": claim of '" + core::display_key(key) +
                   "' lost a race it should not have");
}

}  // namespace

ClaimResult claim_rows(RowOperations& rows, const ClaimRequest& req, const OwnerGone& owner_gone,
                       const std::string& token) {
  std::optional<core::Record> existing;
  if (rows.inserts_first()) {
    // A new key: one statement decides and records it (the key's unique constraint decides
    // between concurrent claimers; a loser waits for the winner's commit, then inserts nothing).
    // Attempt 1 is what core::decide gives a key with no record.
    if (rows.insert(req, 1, token)) {
      rows.start_history(req, false);
      return claimed(req, 1, token);
    }
    existing = rows.lock(req.key);
    if (!existing) rows.vanished(req.key);
  } else {
    existing = rows.lock(req.key);
  }
  // A lease decides alone; only a record without one gets the same-host check.
  const bool gone = existing && core::owner_counts_gone(*existing, req.now_ms, owner_gone);
  const core::Decision d =
      core::decide(existing ? &*existing : nullptr, req.fingerprint, req.now_ms, gone, req.policy);
  std::optional<core::Record> marked;
  if (d.mark_abandoned) {
    const char* note = core::lease_expired(*existing, req.now_ms) ? k_lease_ran_out : k_owner_died;
    abandon_rows(rows, req.key, existing->attempt, note);
    existing->status = core::Status::abandoned;
    existing->note = note;
    existing->attempt_token.clear();  // another owner's capability
    marked = existing;
  }
  if (d.verdict != core::Verdict::claim) {
    if (d.verdict == core::Verdict::replay) existing = rows.read_with_output(req.key);
    ClaimResult result{d.verdict, 0, "", 0, std::move(existing)};
    if (result.existing) result.existing->attempt_token.clear();  // another owner's capability
    result.marked_abandoned = std::move(marked);
    return result;
  }
  // Replaces the previous attempt; conditioned on it, so two retries cannot both win.
  const bool written = existing ? rows.replace(req, d.next_attempt, token, existing->attempt)
                                : rows.insert(req, d.next_attempt, token);
  if (!written) lost_race(rows, req.key);
  rows.start_history(req, existing && core::is_expired(*existing, req.now_ms));
  ClaimResult result = claimed(req, d.next_attempt, token);
  if (existing) result.replaced_status = existing->status;
  result.marked_abandoned = std::move(marked);
  return result;
}

bool release_rows(RowOperations& rows, const std::string& key, const std::string& token) {
  if (token.empty()) return false;  // records claimed before tokens hold '': nothing matches
  if (rows.delete_first_attempt(key, token)) return true;  // its history goes with the record
  if (!rows.restore_previous_attempt(key, token)) return false;
  rows.abandon_history(key, core::k_ended_released);
  return true;
}

bool abandon_rows(RowOperations& rows, const std::string& key, int64_t attempt, const char* note) {
  if (!rows.set_abandoned(key, attempt, note)) return false;
  rows.abandon_history(key, core::abandon_reason(note));
  return true;
}

RemoveResult remove_rows(RowOperations& rows, const std::string& key, bool force,
                         const OwnerGone& owner_gone) {
  const std::optional<core::Record> existing = rows.lock(key);
  if (!existing) return RemoveResult::not_found;
  if (existing->status == core::Status::running && !force && !owner_gone(existing->owner))
    return RemoveResult::running;
  rows.delete_record(key);
  return RemoveResult::removed;
}

}  // namespace idem::store
