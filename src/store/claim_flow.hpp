#pragma once
// The claim and its undoing, written once for every backend: what a claim decides and in which
// order it writes (owner gone -> core::decide -> mark abandoned -> insert, or update conditioned
// on the attempt it read), what release and remove change. A backend runs these inside its own
// transaction, over the row operations below, which it implements with its own SQL; it keeps
// only what is its own: transactions, retries, durability, reconnection.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/history.hpp"
#include "core/record.hpp"
#include "store/store.hpp"

namespace idem::store {

// The note of a running attempt marked abandoned because its owner is gone, and because its lease
// ran out (core::lease_expired).
inline constexpr const char* k_owner_died = core::k_note_owner_died;
inline constexpr const char* k_lease_ran_out = core::k_note_lease_ran_out;

// When a lease of `lease_ms` taken at `now_ms` runs out; 0: no lease (lease_ms 0).
inline int64_t lease_end(int64_t now_ms, int64_t lease_ms) {
  return lease_ms > 0 ? now_ms + lease_ms : 0;
}

// One key's row, as a backend reads and writes it within the transaction the flow runs in. Every
// write is conditioned on what the flow observed (the attempt, or its token, and `running`), and
// says whether it changed the row.
class RowOperations {
 public:
  virtual ~RowOperations() = default;

  // The key's record without its output, held against other claimers and removers until the
  // transaction ends (SQLite: the writer lock the transaction holds; PostgreSQL: FOR UPDATE).
  virtual std::optional<core::Record> lock(const std::string& key) = 0;
  // The key's record with its output, for a replay.
  virtual std::optional<core::Record> read_with_output(const std::string& key) = 0;
  // Inserts the first attempt (number `attempt`, running, `token`, the request's owner, policy and
  // lease) unless a record holds the key; whether it did.
  virtual bool insert(const ClaimRequest& req, int64_t attempt, const std::string& token) = 0;
  // Replaces the key's attempt `observed`, whatever its status, by a new running attempt as
  // insert() writes it, clearing the old outcome; whether that attempt was there to replace.
  virtual bool replace(const ClaimRequest& req, int64_t attempt, const std::string& token,
                       int64_t observed) = 0;
  // Marks `attempt` abandoned with `note` if it is still the key's current, running attempt.
  virtual bool set_abandoned(const std::string& key, int64_t attempt, const char* note) = 0;
  // Deletes the running attempt 1 holding `token`; whether there was one.
  virtual bool delete_first_attempt(const std::string& key, const std::string& token) = 0;
  // Takes the running attempt n > 1 holding `token` back to attempt n-1, abandoned, noted as
  // released (Store::release); whether there was one.
  virtual bool restore_previous_attempt(const std::string& key, const std::string& token) = 0;
  // Deletes the key's record, whatever it holds (its history goes with it).
  virtual void delete_record(const std::string& key) = 0;
  // Adds the history entry of the attempt just claimed (running; the request's trigger, owner
  // and time) as the key's next. `afresh`: the claim replaced an expired record, whose history
  // and replay count go first (an expired record behaves as absent).
  virtual void start_history(const ClaimRequest& req, bool afresh) = 0;
  // Ends the key's latest history entry, if it is still running, as abandoned for `reason`.
  virtual void abandon_history(const std::string& key, const char* reason) = 0;

  // Serial groups (SPEC §9), within the same transaction. Holds `group` against other claimers and
  // turn-takers until the transaction ends (SQLite: the writer lock does already; PostgreSQL: an
  // advisory lock on its name), so one look at the group stays true until the commit.
  virtual void lock_group(const std::string& group) = 0;
  // The group's running record (at most one: a unique index), without output.
  virtual std::optional<core::Record> group_runner(const std::string& group) = 0;
  // The head of its line: the queued record with the lowest queue_seq.
  virtual std::optional<core::Record> group_head(const std::string& group) = 0;
  // How many of its records are queued with a queue_seq at most `up_to` (INT64_MAX: all).
  virtual int64_t queued_in_group(const std::string& group, int64_t up_to) = 0;
  // How many wait in the group's line, read from the count the store keeps (not counted).
  virtual int64_t queue_length(const std::string& group) = 0;
  // The queue_seq after the last in its line.
  virtual int64_t next_queue_seq(const std::string& group) = 0;
  // Writes the claim as a queued record (insert, or `observed` replaced as replace() does), its
  // place `seq`, its lease the request's; whether it did.
  virtual bool enqueue(const ClaimRequest& req, int64_t attempt, const std::string& token,
                       int64_t seq, std::optional<int64_t> observed) = 0;
  // Ends every queued record of the group as superseded by `by` (finished now, expiring after its
  // TTL); their keys.
  virtual std::vector<std::string> supersede_pending(const std::string& group,
                                                     const std::string& by, int64_t now_ms) = 0;
  // The abandoned attempt `attempt` of `key` waits again as attempt + 1 at place `seq`.
  virtual bool requeue(const std::string& key, int64_t attempt, int64_t seq) = 0;
  // The queued attempt `attempt` of `started.key` starts: running under started.owner from
  // started.now_ms with `token` and the lease ending at `lease_expires_ms` (0: none). Its history
  // entry is start_history(started)'s, called next.
  virtual bool start_queued(const ClaimRequest& started, int64_t attempt, const std::string& token,
                            int64_t lease_expires_ms) = 0;
  // Renews the lease of the queued record holding `token`; whether it still waits.
  virtual bool renew_queued(const std::string& key, const std::string& token,
                            int64_t lease_expires_ms) = 0;

  // Whether a claim tries insert() before it reads: a backend whose lock() cannot hold a row that
  // is not there yet (PostgreSQL) lets the key's unique constraint decide between the claimers of
  // a new key instead. SQLite holds the whole store's writer lock, so reading first costs a
  // duplicate nothing but the read.
  virtual bool inserts_first() const = 0;
  // Called when inserts_first() and the record that stopped the insert was gone by the read (a
  // concurrent remove): must throw what makes the backend try the claim again.
  [[noreturn]] virtual void vanished(const std::string& key) = 0;
  // The store as messages name it (a path, a URL without its password).
  virtual std::string where() const = 0;
};

// Decides and records a claim (Store::claim) in the caller's open transaction, which the caller
// commits (whatever the verdict: an abandoned owner may have been marked). `token`: the attempt
// token a claim verdict hands out. The crash point "claim-before-commit" is in here.
ClaimResult claim_rows(RowOperations& rows, const ClaimRequest& req, const OwnerGone& owner_gone,
                       const std::string& token);

// Store::take_turn's look and change, in the caller's open transaction (commit it whatever the
// answer: a dead runner may have been marked, dead waiters taken out). `token`: the new attempt
// token a head started without req.key gets.
TurnResult turn_rows(RowOperations& rows, const TurnRequest& req, const OwnerGone& owner_gone,
                     const std::string& token);

// Store::release's change, in the caller's open transaction (commit it whatever the answer).
bool release_rows(RowOperations& rows, const std::string& key, const std::string& token);

// Store::mark_abandoned's change (and the claim's, for a dead owner's attempt): `attempt`, if
// still the key's current running one, abandoned with `note`, its history entry with it.
bool abandon_rows(RowOperations& rows, const std::string& key, int64_t attempt, const char* note);

// Store::remove's change, in the caller's open transaction; commit it only on `removed`.
RemoveResult remove_rows(RowOperations& rows, const std::string& key, bool force,
                         const OwnerGone& owner_gone);

}  // namespace idem::store
