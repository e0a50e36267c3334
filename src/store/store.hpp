#pragma once
// The storage boundary: domain verbs only. Callers never see SQL. SQLite is the embedded default;
// a PostgreSQL backend implements the same interface with the same semantics.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/decision.hpp"
#include "core/history.hpp"
#include "core/live.hpp"
#include "core/record.hpp"
#include "core/schedule.hpp"

namespace idem::store {

// Tells whether a recorded owner is provably gone (dead process, rebooted host). Unknown owners
// (another host) must count as alive.
using OwnerGone = std::function<bool(const core::Owner&)>;

// Whether what a record's attempt started is still alive (SerialClaim::left_behind).
using RunnerLeftovers = std::function<bool(const core::Record&)>;

// How many may wait in a fifo serial group unless its front says otherwise (SPEC §9).
inline constexpr int64_t k_default_max_pending = 10000;

// A claim in a serial group (SPEC §9): at most one attempt of `group` runs, store-wide; a claim
// that would run while one runs, or while others wait, waits its turn as a queued record.
struct SerialClaim {
  std::string group;  // as core::Record::serial_group holds it (the front's prefix included)
  bool latest = false;
  int64_t max_pending = k_default_max_pending;
  // The group's running attempt found abandoned by this claim waits again, at the head of the
  // line (a daemon's delivery whose hook retries abandoned attempts), instead of staying
  // abandoned. Never for an attempt of `idem run` (only its own process could run it).
  bool requeue_abandoned = false;
  // Whether processes the group's running attempt started live on after its owner is gone (a
  // daemon's kill -9 leaves its handler running): while they do, the attempt still holds the
  // group, nothing else of it starts, and it is not marked abandoned yet. Null: the owner alone
  // decides.
  RunnerLeftovers left_behind = nullptr;
};

struct ClaimRequest {
  std::string key;
  std::string fingerprint;
  std::string kind = "run";
  // What started the attempt, as its history shows it (core::HistoryEntry::trigger): empty for
  // the kind's own (core::trigger_of_kind), core::k_trigger_rerun for a re-run a user asked for.
  std::string trigger;
  core::Owner owner;
  int64_t ttl_ms = 0;
  std::string request;  // JSON of what was asked
  core::Policy policy;
  int64_t now_ms = 0;
  // The claimed attempt's lease: it counts as abandoned, on any host, at now_ms + lease_ms unless
  // heartbeat() renews it first. 0: no lease, the owner's liveness is its pid and boot id alone.
  //
  // `run`, `each`, `begin` and `serve` on SQLite claim with no lease, on purpose. A SQLite store
  // in WAL mode can only be shared by processes on one host (the WAL index is shared memory), so
  // every owner is on this host and the pid + boot id check is exact and immediate: a lease would
  // detect nothing more, only later. Renewing one while the command runs would cost a write
  // transaction, an fsync, per renewal and a thread or timer in the runner loop, and would turn a
  // command that runs past a missed renewal (a suspended laptop, a stalled disk) into a false
  // "abandoned". Owners that cannot be checked by pid — a ledger API client, another host on
  // PostgreSQL — claim with a finite lease and heartbeat it.
  int64_t lease_ms = 0;
  // false: the claim's commit is not synced by itself. Only for a caller that makes a synced
  // write before anything relies on the claim being durable: serve's synchronous hooks record the
  // command's process group (synced: the fsync makes the claim before it durable too) before the
  // command may start, and answer only after the synced outcome. A crash before then loses a
  // claim whose command never started and whose client got no answer. This takes one fsync of
  // three off a delivery. An async hook answers 202 on the claim, so its claim is synced.
  // Ignored (synced) when the claim records the command's group.
  bool sync = true;
  // The process group of the attempt's command, whose child was created ahead of the claim and
  // waits to exec (proc::PreparedCommand): written with the claimed attempt, in the claim's own
  // synced commit, instead of by set_process_group in a write of its own after it. Only for a
  // claim that would run (Engine::claim); a claim that does not go to this attempt writes nothing
  // of it. nullopt: none yet.
  std::optional<core::ProcessGroup> group;
  // In a serial group: a claim that would run may be queued instead (verdict `queued`: the record
  // waits with this request, its owner and the attempt token handed out; take_turn starts it), or
  // refused (`full`). nullopt: none, the claim runs or not as the key alone decides.
  std::optional<SerialClaim> serial;
  // The claimed attempt's span (SPEC §12), written with it (a queued one's too, which keeps it
  // until it starts); empty: traces are off.
  core::SpanIds span = {};
};

struct ClaimResult {
  core::Verdict verdict;
  int64_t attempt = 0;                   // the claimed attempt when verdict == claim
  std::string attempt_token;             // its capability, for heartbeat and release (claim only)
  int64_t lease_expires_ms = 0;          // its lease (claim only); 0: none
  std::optional<core::Record> existing;  // the record that decided a non-claim verdict
  // claim: the status of the record the new attempt replaced (abandoned if this claim marked it
  // so); nullopt for a key that had none. What a notification of its end compares with.
  std::optional<core::Status> replaced_status = std::nullopt;
  // The running record this claim found its owner gone for and marked abandoned, as marked (its
  // token cleared; without output), whatever the verdict; nullopt when it marked none.
  std::optional<core::Record> marked_abandoned = std::nullopt;
  // queued: the key's place in its group's line (1: next to run), whoever queued it.
  int64_t position = 0;
  // The keys this claim superseded (a `latest` group's pending ones), for their front to tell.
  std::vector<std::string> superseded = {};
};

// A look at a serial group's line by one who would run its next attempt (Store::take_turn).
struct TurnRequest {
  std::string group;
  // The waiter's own queued key and the attempt token its claim handed out: only it is started,
  // when it is the line's head (`idem run --serial`). Empty: the head, whoever queued it (a
  // daemon runs the deliveries queued by any daemon of its hooks), with a new token.
  std::string key;
  std::string token;
  core::Owner owner;  // the attempt's owner once started
  // The started attempt's lease (0: none); with renew_lease, the waiting key's lease is renewed
  // to now_ms + lease_ms too (a waiter renews it a third of the way through, not at every look).
  int64_t lease_ms = 0;
  bool renew_lease = false;
  int64_t now_ms = 0;
  bool requeue_abandoned = false;         // SerialClaim::requeue_abandoned, for a dead runner found
  RunnerLeftovers left_behind = nullptr;  // SerialClaim::left_behind
  // false: a start's commit is not synced by itself (ClaimRequest::sync): only for a caller whose
  // next write on this connection records the started attempt's process group, synced, before
  // its command starts. A crash before then loses a start whose command never began.
  bool sync = true;
};

struct TurnResult {
  enum class State {
    started,  // the head is now running, the caller's (`record`, `attempt_token`)
    waiting,  // an attempt of the group runs, or (key given) another waits ahead (`position`)
    empty,    // nothing waits (key empty)
    gone,     // key given: it no longer waits (removed, or another took it over)
  };
  State state = State::empty;
  std::optional<core::Record> record;  // started: as it now stands, with its request
  std::string attempt_token;           // started: its capability
  int64_t lease_expires_ms = 0;        // started: its lease; 0: none
  int64_t position = 0;                // waiting, key given: its place (1: next)
  // The group's running attempt this look found its owner gone for and marked abandoned.
  std::optional<core::Record> marked_abandoned = std::nullopt;
};

// A serial group with attempts waiting (Store::queued_groups).
struct QueuedGroup {
  std::string group;
  int64_t queued = 0;
  int64_t oldest_ms = 0;  // when the longest-waiting one was queued
};

// Which records `list` visits: live (unexpired) ones whose stored status is in `statuses` (empty:
// any; none at all with `live = false`), plus every expired one with `include_expired`.
struct ListQuery {
  std::vector<core::Status> statuses;
  bool live = true;
  bool include_expired = false;
  std::string prefix;  // literal, byte-exact
  std::string kind;    // only records of this kind (ls --front); empty: any
  // Only finished records of this result class (core::result_class: "2xx" ... "5xx", "exit0",
  // "exit_nonzero"), read from an index of it; empty: any.
  std::string result;
  // Only records whose current attempt started at or after since_ms and before until_ms (Unix
  // ms; 0: no bound), read as a range of the newest-first index.
  int64_t since_ms = 0;
  int64_t until_ms = 0;
  int64_t limit = 0;       // 0: no limit
  bool keys_only = false;  // visit records that carry only their key (cheaper: index only)
  int64_t now_ms = 0;
  // A keyset cursor: only records listed after the one that started at `first` with key
  // `second` (older, or as old with a greater key), read from the newest-first index where that
  // record's row is, so a page deep in the listing costs what the first does.
  std::optional<std::pair<int64_t, std::string>> after;
  // Read at most this many entries of the index the listing walks (0: no bound), whatever the
  // conditions its index does not answer (another filter, expiry) leave of them: the listing
  // then ends early and list() says where (the page's read budget).
  int64_t scan_limit = 0;
};

// Where a listing bounded by ListQuery::scan_limit stopped reading (the last entry read, as
// `after` takes it); nullopt when it read to the listing's end.
using ListStop = std::optional<std::pair<int64_t, std::string>>;

// Called once per listed record; returns false to stop the listing.
using RecordVisitor = std::function<bool(const core::Record&)>;

enum class RemoveResult { removed, not_found, running };

// Replays of one key to add to its record (Store::count_replays): how many, and the last one's
// time (Unix ms).
struct ReplayCount {
  std::string key;
  int64_t count = 0;
  int64_t last_ms = 0;
};

// Which entries of a key's history Store::history_page reads: the `limit` newest (0: all) of
// those numbered below `before` (0: no bound), so a page of a long history costs what the first
// does.
struct HistoryQuery {
  int64_t limit = 0;
  int64_t before = 0;
};

// A page of a key's history. Attempts are numbered 1, 2, ... and a claim deletes the entries
// beyond the newest keep_attempts (StoreOptions), so the first_kept - 1 older attempts are
// counted but no longer kept (an import or a store from before the history keeps only the
// current attempt: the earlier ones count as not kept too).
struct HistoryPage {
  std::vector<core::HistoryEntry> entries;  // oldest first
  int64_t first_kept = 0;  // the number of the oldest entry kept; 0: none (no record)
  int64_t last = 0;        // the number of the newest
  // Attempts before the page's first entry: kept ones the page leaves out, and the ones no
  // longer kept.
  int64_t earlier() const { return entries.empty() ? 0 : entries.front().number - 1; }
  int64_t not_kept() const { return first_kept > 1 ? first_kept - 1 : 0; }
};

// One attempt's stored output, read by ranges one after another (Store::open_output). Use it on
// the connection that opened it, and drop it before that connection does anything else: it
// holds what it reads from open (SQLite: the blob, and the read transaction it was found in, so
// each read goes on where it is instead of walking the value from its start again).
class OutputReader {
 public:
  virtual ~OutputReader() = default;
  // Up to `length` bytes from byte `offset` on: fewer at the end, none past it.
  virtual std::string read(int64_t offset, int64_t length) = 0;
};

// What `idem doctor` learns of a store beyond its records (Store::health).
struct StoreHealth {
  std::string engine;             // "SQLite 3.40.1", "PostgreSQL 15.8"
  int schema_version = 0;         // the schema the store holds now
  int opened_schema_version = 0;  // the one it held when this connection opened it (older:
                                  // migrated then)
  // What the backend's integrity check found, a line each, a few at most; empty: nothing.
  std::vector<std::string> damage;
  // The server's clock minus this host's, in ms, when they differ by more than the backend
  // tolerates (PostgreSQL measures leases and TTLs on the server's clock); 0: in step.
  int64_t clock_offset_ms = 0;
};

// An expectation as the store keeps it (SPEC §11): with where its evaluation stands, and the
// revision save_evaluation checks, so that two evaluations (two daemons, `idem check` beside
// one) never both keep theirs.
// How many findings of a pattern the store keeps, the newest.
inline constexpr int64_t k_findings_kept = 1000;

struct StoredExpectation {
  core::Expectation expectation;
  core::ScheduleState state;
  int64_t revision = 0;
};

struct GcQuery {
  int64_t now_ms = 0;
  int64_t older_than_ms = 0;  // 0: only expired records; else also finished before now - this
  bool dry_run = false;
};

// What gc did: the records it removed (dry: would remove), and the bytes the WAL still holds
// because gc's closing checkpoint could not empty it (a reader holding an older snapshot stops a
// SQLite checkpoint): 0 when it did, or where there is no WAL to empty (PostgreSQL).
struct GcResult {
  int64_t removed = 0;
  int64_t wal_bytes_left = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Atomically decides and, for a `claim` verdict, records the key as running under `owner`.
  // A running record whose owner is gone is marked abandoned in the same transaction.
  // The claim is durable when this returns.
  virtual ClaimResult claim(const ClaimRequest& request, const OwnerGone& owner_gone) = 0;

  // Serial groups (SPEC §9). Starts the line's head of `req.group` when nothing of the group
  // runs (a running attempt whose owner is gone is marked abandoned first, and with
  // requeue_abandoned waits again at the head); a waiter (req.key) whose owner is gone is taken
  // out of the line when it reaches the head. With req.key: only that key is started, and its
  // lease (when it has one) is renewed while it waits. Durable on return.
  virtual TurnResult take_turn(const TurnRequest& req, const OwnerGone& owner_gone) = 0;
  // Takes a queued key holding `token` out of its line (the record is deleted: nothing of it
  // ran); false when it does not wait with that token.
  virtual bool withdraw(const std::string& key, const std::string& token) = 0;
  // The groups whose name starts with `prefix` that have queued attempts, at most `limit`, by
  // name; read from the index of queued records.
  virtual std::vector<QueuedGroup> queued_groups(const std::string& prefix, int64_t limit) = 0;
  // A serial group's line as it stands, without output: its running attempt first (if any), then
  // at most `limit` of its queued ones in their order; read from the index of queued records.
  virtual std::vector<core::Record> group_line(const std::string& group, int64_t limit) = 0;

  // Records the outcome of `attempt`. Returns false (and changes nothing) when the key's current
  // attempt is another one, or is no longer running, or its lease ran out by the outcome's
  // finished_ms (from its expiry an attempt counts as abandoned, as for heartbeat()): a stale
  // owner can never overwrite a newer attempt. On a store over a network (PostgreSQL), a finish
  // repeated because its answer was lost (the connection went after the commit) returns true
  // again. The outcome's
  // response is kept as given (status, headers in order) and get() returns it; its body is the
  // output's stdout. Throws std::invalid_argument, writing nothing, for a response that
  // core::response_problem refuses.
  virtual bool finish(const std::string& key, int64_t attempt, const core::Outcome& outcome) = 0;

  // Records the process group the command of `attempt` runs in, if that attempt is still the
  // current, running one; returns false (and changes nothing) otherwise. On return it survives
  // a crash of idem (the command starts only after it, so an abandoned attempt always shows the
  // group to check); a backend may leave it unsynced, since a power cut ends the group too,
  // except after a claim made with `sync = false`, whose durability this write then provides.
  virtual bool set_process_group(const std::string& key, int64_t attempt,
                                 const core::ProcessGroup& group) = 0;

  // Marks `attempt` abandoned if it is still the current, running attempt.
  virtual bool mark_abandoned(const std::string& key, int64_t attempt) = 0;

  // Renews the lease of the running attempt holding `attempt_token`: it now runs out at
  // now_ms + lease_ms (lease_ms 0: never). Returns false and changes nothing when the token is not
  // the key's current running attempt's, or its lease ran out by now_ms: from its expiry an attempt
  // counts as abandoned whether or not a claim has looked at it yet, so a late heartbeat cannot
  // bring it back. Durable on return.
  virtual bool heartbeat(const std::string& key, const std::string& attempt_token, int64_t lease_ms,
                         int64_t now_ms) = 0;

  // Gives up the running attempt holding `attempt_token` without an outcome, so that the next
  // claim decides as if this attempt had never been claimed (a proxy does this rather than store
  // an upstream's 5xx). Returns false and changes nothing when the token is not the key's current
  // running attempt's (a stale token). Precisely:
  //  - attempt 1 (the key was absent or expired, which behaves as absent): the record is deleted.
  //  - attempt n > 1, a retry of an ended attempt n-1 whose outcome the claim replaced: the record
  //    goes back to attempt n-1, status abandoned, noted as released. A retried abandoned attempt
  //    is so exactly restored; a retried failure comes back as abandoned (its outcome is gone, so
  //    it can neither be replayed nor run again without --retry-abandoned). Its owner, start
  //    time, request and process group stay the released attempt's.
  virtual bool release(const std::string& key, const std::string& attempt_token) = 0;

  virtual std::optional<core::Record> get(const std::string& key) = 0;
  // get() without the output (Record::output empty, output_bytes its size): for a reader that
  // reads the output by ranges (read_output), so that a record of any size costs the same.
  virtual std::optional<core::Record> get_without_output(const std::string& key) = 0;
  // The stored output of attempt `attempt` of `key` (its core::CapturedOutput encoding), to
  // read by ranges; null when that attempt is not the key's current one or stored no output.
  // Only the bytes asked for are read (SQLite: blob I/O; PostgreSQL: substring()).
  virtual std::unique_ptr<OutputReader> open_output(const std::string& key, int64_t attempt) = 0;
  // One range of it (open_output, read): empty when there is none.
  std::string read_output(const std::string& key, int64_t attempt, int64_t offset, int64_t length) {
    std::unique_ptr<OutputReader> reader = open_output(key, attempt);
    return reader ? reader->read(offset, length) : std::string();
  }
  // Live output (SPEC §10, core/live.hpp). Adds `segment` to what attempt `attempt` of `key` has
  // written so far, when that is the key's current running attempt (false: nothing written).
  // Not synced: live bytes need not survive a crash (the outcome does). A key's segments go when
  // its attempt stops running (finish, abandon, release), when it is claimed again, and with its
  // record; those of an attempt whose owner died go at gc (drop_stale_live).
  virtual bool append_live(const std::string& key, int64_t attempt,
                           const core::LiveSegment& segment) = 0;
  // The segments of attempt `attempt` of `key` that hold bytes from `from` on, in order: the one
  // `from` falls in, then the next ones, up to about `max_bytes` of them (at least one, if any).
  // Into the first segments of `into` (added as needed), how many: those past them are left
  // as they are, so their buffers serve again and a follower that reads again and again
  // allocates nothing once it has read a look's worth.
  virtual size_t read_live_into(const std::string& key, int64_t attempt, int64_t from,
                                int64_t max_bytes, std::vector<core::LiveSegment>& into) = 0;
  std::vector<core::LiveSegment> read_live(const std::string& key, int64_t attempt, int64_t from,
                                           int64_t max_bytes) {
    std::vector<core::LiveSegment> segments;
    segments.resize(read_live_into(key, attempt, from, max_bytes, segments));
    return segments;
  }
  // Deletes the segments of attempts that no longer run, or whose owner is gone (`owner_gone`,
  // the lease by now_ms): the ones a crash left. Looks at up to 1,000 attempts; how many it
  // dropped.
  virtual int64_t drop_stale_live(const OwnerGone& owner_gone, int64_t now_ms) = 0;

  // Schedules (SPEC §11). Adds an expectation, or replaces the one of its pattern (its state and
  // findings go: it starts afresh from its created_ms). Durable on return.
  virtual void put_expectation(const core::Expectation& expectation) = 0;
  // Removes the expectation of `pattern` and its findings; false when there is none.
  virtual bool remove_expectation(const std::string& pattern) = 0;
  // Every expectation (at most core::k_max_expectations), by pattern.
  virtual std::vector<StoredExpectation> expectations() = 0;
  // Keeps an evaluation of the expectation of `pattern` read at `revision`: its state, and the
  // findings it made that the store does not hold yet (a finding is its pattern, kind, at_ms, key
  // and attempt); then each `recovered` one resolves the open findings about a time before its
  // at_ms, and is kept only if there were some. The oldest beyond the newest 1,000 of the
  // pattern go. One transaction, durable on return when it holds findings (one that only moves
  // the state on may be lost to a power cut: evaluated again, it finds nothing twice). nullopt,
  // keeping nothing, when the expectation is gone or another evaluation was kept since `revision`;
  // else the findings it kept, which no other evaluation kept.
  virtual std::optional<std::vector<core::ScheduleFinding>> save_evaluation(
      const std::string& pattern, int64_t revision, const core::Evaluation& evaluation) = 0;
  // The findings of `pattern`, newest first (by when they were found), at most `limit`; only the
  // open ones (not resolved) with `open_only`.
  virtual std::vector<core::ScheduleFinding> findings(const std::string& pattern, bool open_only,
                                                      int64_t limit) = 0;
  // The history entries of keys matching `pattern` that started before `before_ms`, after the
  // entry (after_ms, after_key, after_number) in (started, key, number) order, at most `limit`
  // of them in that order, read from the history's index by start time (the pattern's literal
  // head bounds each read in SQL; a glob is matched here).
  virtual std::vector<core::AttemptFact> attempts_started(const core::KeyPattern& pattern,
                                                          int64_t after_ms,
                                                          const std::string& after_key,
                                                          int64_t after_number, int64_t before_ms,
                                                          int64_t limit) = 0;

  // Of the key's attempt history: the `query.limit` newest entries numbered below
  // `query.before`, oldest first, and the numbers of the oldest and newest entries kept. Each
  // read one index range of the history, written by the claim, finish, abandon and release of
  // each attempt in their own transactions; a claim keeps the newest keep_attempts entries
  // (StoreOptions) and deletes the older ones.
  virtual HistoryPage history_page(const std::string& key, const HistoryQuery& query) = 0;
  // Every entry kept, oldest first (empty when the key has no record).
  std::vector<core::HistoryEntry> history(const std::string& key) {
    return history_page(key, HistoryQuery{}).entries;
  }
  // Adds replays to the records of their keys (those still there), in one transaction that is not
  // synced: a replay stays a read on its own path, and a power cut may lose the last counts (a
  // statistic, never an outcome). The daemon and `each` gather them first (ReplayTally).
  virtual void count_replays(std::span<const ReplayCount> counts) = 0;
  // Newest first (ties by key), streamed: records carry no output or request (see get()), and
  // nothing is held but the current row, so the first page costs the same on any store size.
  virtual ListStop list(const ListQuery& query, const RecordVisitor& visit) = 0;
  // Running records are only removed with `force`, or when their owner is gone.
  // A queued record is removed like a finished one: it leaves its line.
  virtual RemoveResult remove(const std::string& key, bool force, const OwnerGone& owner_gone) = 0;
  // Deletes in small batches, never running or queued records.
  virtual GcResult gc(const GcQuery& query) = 0;
  // Writes each record exactly as given, as `idem import` does: its attempt, times, owner,
  // process group, outcome and output; no attempt token (an imported running attempt can only be
  // abandoned). A key that exists is replaced only with `replace`; else that record is left out.
  // Returns which records were written, in order. One transaction, durable on return: the
  // caller bounds the batch (the writer lock is held while it is written).
  // `histories`, empty or one per record: the attempts a record's history is written with
  // (as export wrote them, oldest first); none for a record: its current attempt alone. Its
  // replay count is written as the record has it.
  virtual std::vector<bool> put_all(std::span<const core::Record> records, bool replace,
                                    std::span<const std::vector<core::HistoryEntry>> histories) = 0;
  std::vector<bool> put_all(std::span<const core::Record> records, bool replace) {
    return put_all(records, replace, {});
  }
  // put_all of one record: whether it was written.
  bool put(const core::Record& record, bool replace) { return put_all({&record, 1}, replace)[0]; }
  // Takes the writer lock and makes a trial write that is rolled back, changing no record:
  // throws StoreError when the store cannot be written within the busy timeout (transient), or
  // the write fails (permanent: a read-only store, file system or server, a full disk, no
  // privilege to write). A health check.
  virtual void check_writable() = 0;
  // Upkeep a writer may do while a command it claimed for runs, off the run's own path: what a
  // finish would otherwise do after the outcome (the SQLite store of a short-lived process: its
  // checkpoint, once the WAL is past its threshold). Not needed for correctness: the next
  // writer does it. Throws StoreError like any call.
  virtual void upkeep() {}
  // The store's schema, engine and integrity (see StoreHealth). SQLite runs PRAGMA quick_check,
  // which reads every page of the file (about a second per GiB) without taking the writer lock;
  // PostgreSQL checks its own pages, so it reports no damage of its own.
  virtual StoreHealth health() = 0;
  // Whether owners on other hosts share this store, so that a running record's owner cannot
  // always be checked by pid and boot id: its claims then carry a lease (ClaimRequest::lease_ms)
  // renewed while the attempt runs. SQLite: no (see ClaimRequest::lease_ms); PostgreSQL: yes.
  virtual bool spans_hosts() const { return false; }
};

// Where a store lives. Parsed from a URL: `sqlite:PATH` or a bare path (SQLite), or
// `postgres://…` / `postgresql://…` (libpq syntax: PostgreSQL).
struct StoreLocation {
  std::string scheme;  // "sqlite" or "postgres": picks the backend (see open_store)
  std::string target;  // SQLite: the file's path; PostgreSQL: the URL as given
  // For logs and messages: the path, or the URL without its user and password.
  std::string display() const;
};

// Parses a store URL given as `source` (--store, IDEM_STORE: named in the message). Throws
// UsageError for an unknown scheme or an empty path. A value whose first ':' comes before any
// '/' is read as SCHEME:REST, so a relative file name holding ':' needs `sqlite:` or `./`.
StoreLocation parse_store_url(const std::string& url, const std::string& source);

// The store in force (contract §2): --store, else $IDEM_STORE, else --db, else $IDEM_DB, else
// ${XDG_STATE_HOME:-$HOME/.local/state}/idem/idem.db. Empty flags count as not given.
StoreLocation store_location(const std::string& store_flag, const std::string& db_flag);

// ${XDG_STATE_HOME:-$HOME/.local/state}/idem/idem.db, with the home folder of the user's
// /etc/passwd entry when HOME is unset or empty (as git finds it); nullopt when there is none.
std::optional<std::string> xdg_db_path();
// $IDEM_DB when set, else xdg_db_path(); throws StoreError when neither gives a path.
std::string default_db_path();

// Whether the user allows a SQLite store in a folder others can create files in
// (IDEM_ALLOW_SHARED_FOLDER=1): see store/sqlite/files.hpp.
bool shared_folders_allowed();

struct StoreOptions {
  // How long a locked store is waited for; nothing: $IDEM_BUSY_TIMEOUT, else 30 s.
  std::optional<int64_t> busy_timeout_ms;
  // How many attempts of a key its history keeps, the newest (at least 1); a claim deletes the
  // older ones' entries, counting them (HistoryPage::not_kept). Nothing: $IDEM_KEEP_ATTEMPTS,
  // else k_default_keep_attempts.
  std::optional<int64_t> keep_attempts;
  // A process that keeps its connections open and writes many times a second (the daemon). On
  // SQLite, which reads a WAL whole into its index only when a process opens the store, it lets
  // the WAL grow to 1 MiB rather than 256 KiB before checkpointing it, and checkpoints without
  // truncating the file (the next write starts it over), so a burst of deliveries pays a quarter
  // of the checkpoints and no file truncation and regrowth (bench/README.md, "The daemon's
  // checkpoints"). Other processes keep the small WAL: the first of them to write after a burst
  // empties it.
  bool long_lived = false;
};

inline constexpr int64_t k_default_keep_attempts = 100;

// For the backends. The busy timeout in force: `given`, else $IDEM_BUSY_TIMEOUT, else 30 s; a
// bad $IDEM_BUSY_TIMEOUT is refused (UsageError) even when `given` wins.
int64_t busy_timeout_in_force(std::optional<int64_t> given);
// The history's bound in force: `given`, else $IDEM_KEEP_ATTEMPTS, else k_default_keep_attempts;
// a value that is not a whole number of at least 1 is refused (UsageError, naming its source).
int64_t keep_attempts_in_force(std::optional<int64_t> given);
// Reads a count of attempts to keep (--keep-attempts, $IDEM_KEEP_ATTEMPTS): UsageError naming
// `source` unless it is a whole number from 1 to 1,000,000.
int64_t keep_attempts_arg(std::string_view source, std::string_view text);
// A new attempt token: 128 random bits in hex, unguessable (ClaimResult::attempt_token).
std::string new_attempt_token();

// Opens the store at `where` with the backend its scheme names: the one factory every front
// uses. Throws StoreError (exit 74; transient or permanent, see StoreFailure).
std::unique_ptr<Store> open_store(const StoreLocation& where, const StoreOptions& options = {});

// The SQLite backend (sqlite/store.cpp), used by open_store and by the backend's own tests:
// creates folder (0700) and file (0600) as needed.
std::unique_ptr<Store> open_sqlite_store(const std::string& path,
                                         std::optional<int64_t> busy_timeout_ms = std::nullopt,
                                         std::optional<int64_t> keep_attempts = std::nullopt,
                                         bool long_lived = false);

// The PostgreSQL backend (postgres/store.cpp): connects to the server `where` names and creates
// or migrates idem's tables there. Linked into the programs that can use libpq; the static idem
// is not (see has_postgres_backend).
std::unique_ptr<Store> open_postgres_store(const StoreLocation& where,
                                           std::optional<int64_t> busy_timeout_ms = std::nullopt,
                                           std::optional<int64_t> keep_attempts = std::nullopt);

// Whether this program links the PostgreSQL backend.
bool has_postgres_backend();

}  // namespace idem::store
