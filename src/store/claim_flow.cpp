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

// A claim's write found the key's row changed. A new key another claimer inserted meanwhile, on
// a backend whose lock() cannot hold a row that is not there yet (a serial claim reads first, and
// claimers of one key in different groups hold different group locks): the claim is tried again.
[[noreturn]] void write_lost(RowOperations& rows, const std::string& key,
                             std::optional<int64_t> observed) {
  if (!observed && rows.inserts_first()) rows.vanished(key);
  lost_race(rows, key);
}

// The note of an attempt found with its owner gone.
const char* gone_note(const core::Record& r, int64_t now_ms) {
  return core::lease_expired(r, now_ms) ? k_lease_ran_out : k_owner_died;
}

// The group's running attempt, when its owner is gone and nothing it started lives on
// (`left_behind`): marked abandoned (returned as marked), and with `requeue` (never for `idem
// run`'s: only its own process could run it) waiting again at the head of the line. Whether a
// live attempt of the group runs (one whose processes outlived its owner counts). One of a
// daemon's that never started its command waits again whatever `requeue` says.
bool live_runner(RowOperations& rows, const std::string& group, int64_t now_ms,
                 const OwnerGone& owner_gone, bool requeue, const RunnerLeftovers& left_behind,
                 std::optional<core::Record>& marked) {
  std::optional<core::Record> runner = rows.group_runner(group);
  if (!runner) return false;
  if (!core::owner_counts_gone(*runner, now_ms, owner_gone)) return true;
  if (left_behind && left_behind(*runner)) return true;
  const char* note = gone_note(*runner, now_ms);
  abandon_rows(rows, runner->key, runner->attempt, note);
  runner->status = core::Status::abandoned;
  runner->note = note;
  runner->attempt_token.clear();
  // A delivery whose command never started (no group recorded: the daemon died between the turn
  // and the spawn) waits again too: nothing of it ran, so nothing is lost or run twice. (A
  // serial attempt's group is durable before its command starts: PostgreSQL commits are, and
  // SQLite syncs it for a record of a group, SqliteStore::set_process_group.)
  if ((requeue || runner->process_group.pgid == 0) && runner->kind != "run") {
    const std::optional<core::Record> head = rows.group_head(group);
    rows.requeue(runner->key, runner->attempt,
                 head ? head->queue_seq - 1 : rows.next_queue_seq(group));
  }
  marked = std::move(runner);
  return false;
}

// A claim whose key would run, in a serial group: nullopt when it may run now, else what it got
// (queued, or the line full). `existing`: the key's record as the claim found it (a finished
// attempt run again, an expired record, a dead waiter's place), which queueing replaces.
std::optional<ClaimResult> serial_claim(RowOperations& rows, const ClaimRequest& req,
                                        const OwnerGone& owner_gone, const std::string& token,
                                        std::optional<core::Record>& existing, int64_t attempt,
                                        std::optional<core::Record>& marked) {
  const SerialClaim& serial = *req.serial;
  std::optional<core::Record> runner_marked;
  core::GroupState group;
  group.running = live_runner(rows, serial.group, req.now_ms, owner_gone, serial.requeue_abandoned,
                              serial.left_behind, runner_marked);
  group.queued = rows.queue_length(serial.group);
  if (!marked) marked = std::move(runner_marked);
  ClaimResult result;
  switch (core::decide_serial(group, serial.latest, serial.max_pending)) {
    case core::SerialStep::run:
      return std::nullopt;
    case core::SerialStep::full:
      result.verdict = core::Verdict::full;
      result.marked_abandoned = std::move(marked);
      return result;
    case core::SerialStep::replace_pending:
      result.superseded = rows.supersede_pending(serial.group, req.key, req.now_ms);
      break;
    case core::SerialStep::queue:
      break;
  }
  // An expired record or a dead waiter's place is gone first: the queued one starts afresh.
  if (existing &&
      (core::is_expired(*existing, req.now_ms) || existing->status == core::Status::queued)) {
    rows.delete_record(req.key);
    existing.reset();
  }
  const int64_t seq = rows.next_queue_seq(serial.group);
  const std::optional<int64_t> observed =
      existing ? std::optional(existing->attempt) : std::nullopt;
  if (!rows.enqueue(req, attempt, token, seq, observed)) write_lost(rows, req.key, observed);
  IDEM_CRASH_POINT("queue-before-commit");
  result.verdict = core::Verdict::queued;
  result.attempt = attempt;
  result.attempt_token = token;
  result.lease_expires_ms = lease_end(req.now_ms, req.lease_ms);
  // The last place (its seq is the line's greatest): the line's length, this one included.
  result.position = rows.queue_length(serial.group);
  result.marked_abandoned = std::move(marked);
  return result;
}

}  // namespace

ClaimResult claim_rows(RowOperations& rows, const ClaimRequest& req, const OwnerGone& owner_gone,
                       const std::string& token) {
  std::optional<core::Record> existing;
  // A serial claim reads first: whether a new key runs is the group's to say, not its own row's.
  if (req.serial) rows.lock_group(req.serial->group);
  if (rows.inserts_first() && !req.serial) {
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
    const char* note = gone_note(*existing, req.now_ms);
    abandon_rows(rows, req.key, existing->attempt, note);
    existing->status = core::Status::abandoned;
    existing->note = note;
    existing->attempt_token.clear();  // another owner's capability
    marked = existing;
  }
  if (d.verdict != core::Verdict::claim) {
    if (d.verdict == core::Verdict::replay) existing = rows.read_with_output(req.key);
    ClaimResult result{d.verdict, 0, "", 0, std::move(existing)};
    if (d.verdict == core::Verdict::queued)
      result.position =
          rows.queued_in_group(result.existing->serial_group, result.existing->queue_seq);
    if (result.existing) result.existing->attempt_token.clear();  // another owner's capability
    result.marked_abandoned = std::move(marked);
    return result;
  }
  if (req.serial) {
    std::optional<ClaimResult> waits =
        serial_claim(rows, req, owner_gone, token, existing, d.next_attempt, marked);
    if (waits) return std::move(*waits);
  }
  // Replaces the previous attempt; conditioned on it, so two retries cannot both win.
  const bool written = existing ? rows.replace(req, d.next_attempt, token, existing->attempt)
                                : rows.insert(req, d.next_attempt, token);
  if (!written)
    write_lost(rows, req.key, existing ? std::optional(existing->attempt) : std::nullopt);
  rows.start_history(req, existing && core::is_expired(*existing, req.now_ms));
  ClaimResult result = claimed(req, d.next_attempt, token);
  if (existing) result.replaced_status = existing->status;
  result.marked_abandoned = std::move(marked);
  return result;
}

namespace {

// The caller's own place while it waits (TurnRequest::key): its lease renewed when asked, its
// position told; or gone, when it no longer waits with its token.
void tell_waiting(RowOperations& rows, const TurnRequest& req, TurnResult& out) {
  out.state = TurnResult::State::waiting;
  if (req.key.empty()) return;
  const std::optional<core::Record> mine = rows.lock(req.key);
  if (!mine || mine->status != core::Status::queued || mine->attempt_token != req.token ||
      mine->serial_group != req.group) {
    out.state = TurnResult::State::gone;
    return;
  }
  if (req.renew_lease) rows.renew_queued(req.key, req.token, lease_end(req.now_ms, req.lease_ms));
  out.position = rows.queued_in_group(req.group, mine->queue_seq);
}

// Starts the line's head `head` for the caller: running under its owner, with its history entry.
void start_head(RowOperations& rows, const TurnRequest& req, const core::Record& head,
                const std::string& token, TurnResult& out) {
  const int64_t lease = lease_end(req.now_ms, req.lease_ms);
  ClaimRequest started;
  started.key = head.key;
  started.kind = head.kind;
  started.owner = req.owner;
  started.now_ms = req.now_ms;
  if (!rows.start_queued(started, head.attempt, token, lease)) lost_race(rows, head.key);
  rows.start_history(started, false);
  IDEM_CRASH_POINT("turn-before-commit");
  out.state = TurnResult::State::started;
  out.record = rows.lock(head.key);
  out.attempt_token = token;
  out.lease_expires_ms = lease;
}

}  // namespace

TurnResult turn_rows(RowOperations& rows, const TurnRequest& req, const OwnerGone& owner_gone,
                     const std::string& token) {
  rows.lock_group(req.group);
  TurnResult out;
  const bool mine_only = !req.key.empty();
  if (live_runner(rows, req.group, req.now_ms, owner_gone, req.requeue_abandoned, req.left_behind,
                  out.marked_abandoned)) {
    tell_waiting(rows, req, out);
    return out;
  }
  for (;;) {
    const std::optional<core::Record> head = rows.group_head(req.group);
    if (!head) {
      out.state = mine_only ? TurnResult::State::gone : TurnResult::State::empty;
      return out;
    }
    const bool own = mine_only && head->key == req.key && head->attempt_token == req.token;
    // A waiter that died in line leaves it when its turn comes: nothing of it ever ran.
    if (!own && core::owner_counts_gone(*head, req.now_ms, owner_gone)) {
      rows.delete_record(head->key);
      continue;
    }
    // Another's turn: the head of a line this caller waits in, or a waiter of its own process
    // (`idem run`), which only that process starts.
    if (mine_only ? !own : core::held_by_owner(*head)) {
      tell_waiting(rows, req, out);
      return out;
    }
    start_head(rows, req, *head, mine_only ? req.token : token, out);
    return out;
  }
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
