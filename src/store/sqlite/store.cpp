// The SQLite store. With the backend's other files (sqlite_connection: statements and
// transactions; sqlite_files: the file's safety; sqlite_schema: which files are idem's, and
// migrations; sqlite/sql.hpp: all of its SQL), the only code that includes <sqlite3.h>; the
// claim and release themselves are store/claim_flow.cpp's.
//
// Durability: WAL with synchronous=FULL, so a claim or an outcome is on disk when the call
// returns. Concurrency: every write runs in BEGIN IMMEDIATE (the writer lock is taken up front,
// so there is no read-to-write upgrade that could fail with SQLITE_BUSY_SNAPSHOT); the busy
// handler waits out other writers, so users never see "database is locked" unless the lock is
// held past the busy timeout.
//
// Checkpoints: Debian 12 ships SQLite 3.40.1, which predates the fix (3.51.3) for a race in which
// a checkpoint running concurrently with a writer that resets the WAL can corrupt the database.
// So idem never runs a checkpoint that can overlap a commit: automatic (passive) checkpoints are
// off (wal_autocheckpoint=0), the checkpoint SQLite runs when the last connection closes is off
// (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE), and the only checkpoints are TRUNCATE checkpoints (RESTART
// in the daemon: StoreOptions::long_lived), which take the writer lock for their whole duration:
// while a run's command runs (upkeep) or after a finish, once the WAL has grown past
// k_checkpoint_wal_bytes (gc's batches: k_gc_checkpoint_wal_bytes; the daemon:
// k_long_lived_checkpoint_wal_bytes), and at the end of `idem gc`. All but gc's last keep the
// WAL's blocks (keep_wal_blocks).
//
// Syncs: a first run costs two, the claim's and the outcome's. The process group in between is
// written unsynced (set_process_group says why), and the store is opened through a thin VFS
// ("idem", over SQLite's own "unix") that opens an existing WAL without the create flag: SQLite
// syncs the folder at the first commit of every connection that opened its WAL with that flag,
// which is needed once, by the process that creates the WAL file, not by every run after it.
// The same VFS extends the WAL with zeros ahead of its writes (sqlite/connection.cpp), so a
// commit's sync writes over blocks the file has instead of growing it.
#include "store/store.hpp"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "core/response.hpp"
#include "store/claim_flow.hpp"
#include "store/sqlite/connection.hpp"
#include "store/sqlite/files.hpp"
#include "store/sqlite/live_spool.hpp"
#include "store/sqlite/schema.hpp"
#include "store/sqlite/sql.hpp"
#include "util/clock.hpp"
#include "util/crash_point.hpp"

namespace idem::store {

namespace sqlite {

namespace {

using core::Record;
using core::Status;

// Every process that opens the store alone (the usual case for `idem run`) rebuilds the WAL's
// index by reading the whole WAL, so it is kept small: a run adds about 20 KiB.
constexpr int64_t k_checkpoint_wal_bytes = 256 * 1024;
// gc's own batches checkpoint at this size instead: a batch of deletes writes more than
// k_checkpoint_wal_bytes, so at that size gc copied and synced the WAL after every batch. At
// 16 MiB a collection of 500,000 among 1,000,000 records syncs 118 times instead of 376 (at
// 4 MiB), 13.3 s instead of 15.1 s (bench/README.md). While gc runs (GcMark), other writers
// leave the WAL to it, and gc ends with a checkpoint that empties the WAL.
constexpr int64_t k_gc_checkpoint_wal_bytes = 16 * 1024 * 1024;
// StoreOptions::long_lived: the daemon's connections checkpoint at this size.
constexpr int64_t k_long_lived_checkpoint_wal_bytes = 1024 * 1024;
// Each WAL frame is a page after a header of its own.
constexpr int64_t k_wal_frame_header_bytes = 24;
// The blob of doctor's trial write (check_writable): with its table's page and page 1, five
// WAL frames (20 KiB), about what a run's claim writes (the record's pages, its history's).
constexpr int64_t k_write_probe_bytes = 16 * 1024;
// gc deletes at most this many records per write transaction, in one statement: about 20 ms of
// writer lock on a slow 2-core machine. Each batch is followed by a pause of k_gc_yield, so the
// batch is what amortises it (at 250, the pauses were 8 s of a 500,000-record collection).
constexpr int k_gc_batch = 1000;
// Between two gc batches the writer lock is left free this long. A waiting writer polls the lock
// every k_busy_poll_ms for the first k_busy_fast_ms of its wait (see on_busy), so a pause at least
// that long lets the writers that queued during a batch in before the next one: gc gives way
// instead of starving them. After k_busy_fast_ms a writer is in a crowd of writers, not behind
// gc, and polls every k_busy_slow_poll_ms: a crowd polling every few ms costs the CPU that the
// lock's holder needs.
constexpr auto k_gc_yield = std::chrono::milliseconds(4);

constexpr int64_t k_busy_poll_ms = 4;
constexpr int64_t k_busy_fast_ms = 100;
constexpr int64_t k_busy_slow_poll_ms = 20;
// `ls --prefix`: a prefix matching fewer records than this is read through the key index and
// sorted (at most this many rows); a commoner one walks the newest-first index instead.
constexpr int64_t k_prefix_sort_max = 10000;

// No history given (put_all): the record's current attempt is its history.
const std::vector<core::HistoryEntry> k_no_history;

class SqliteStore final : public Store {
 public:
  // `writer`: this is a long-lived process's connection that commits its batches
  // (dedicated_writer), not one its threads read on.
  SqliteStore(const std::string& path, std::optional<int64_t> busy_timeout_ms,
              std::optional<int64_t> keep_attempts, bool long_lived, bool writer = false)
      : path_(path),
        checkpoint_wal_bytes_(long_lived ? k_long_lived_checkpoint_wal_bytes
                                         : k_checkpoint_wal_bytes),
        checkpoint_mode_(long_lived ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_TRUNCATE) {
    // Bad settings are refused before anything is created.
    busy_timeout_ms_ = busy_timeout_in_force(busy_timeout_ms);
    keep_attempts_ = keep_attempts_in_force(keep_attempts);
    Created created;
    try {
      const mode_t mode = prepare_db_file(path_, created);
      const std::string resolved = resolved_path(path_);
      live_.emplace(resolved);
      writers_ = writer_queue_of(resolved);
      int rc = sqlite3_open_v2(resolved.c_str(), &db_,
                               SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
                               idem_vfs_name());
      if (rc != SQLITE_OK) {
        std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        throw StoreError("cannot open store " + path_ + ": " + message, failure_of(rc));
      }
      configure(mode);
      migrate(db_, path_, writers_->transactions(), opened_version_, opened_application_id_);
      // Each write of a batch runs in a savepoint, whose journal keeps the pages that earlier
      // writes of the batch changed as they were: past 64 KiB SQLite would move it to a
      // temporary file (made, written twice a page, removed, for most batches). In memory, it
      // is bounded by the batch's pages.
      if (writer) exec("PRAGMA temp_store = MEMORY");
      if (long_lived && !writer)
        writer_ = dedicated_writer(resolved, [&] {
          return std::make_shared<SqliteStore>(path_, busy_timeout_ms, keep_attempts, true, true);
        });
    } catch (...) {
      statements_.clear();
      sqlite3_close(db_);
      db_ = nullptr;
      take_back(path_, created);
      throw;
    }
  }

  ~SqliteStore() override {
    statements_.clear();
    sqlite3_close(db_);
  }

  ClaimResult claim(const ClaimRequest& req, const OwnerGone& owner_gone) override {
    ClaimResult result;
    // A claim that need not be synced (ClaimRequest::sync) is so only if its batch needs no sync;
    // one that records its command's group is always synced (the command starts after it).
    const bool sync = req.sync || req.group.has_value();
    batched(sync, [&](Connection db) {
      Rows rows(*this, db);
      result = claim_rows(rows, req, owner_gone, new_attempt_token());
    });
    if (!sync && result.verdict == core::Verdict::claim)
      unsynced_claim_.emplace(req.key, result.attempt);
    return result;
  }

  // BEGIN IMMEDIATE takes the writer lock; a trial write then meets what would fail every claim
  // (a read-only file or mount, a full disk, an I/O error). A rolled-back transaction otherwise
  // never leaves SQLite's page cache, so its pages are flushed into the WAL
  // (sqlite3_db_cacheflush), then rolled back. It writes a table of its own, never a record.
  // The frames it leaves lie past the WAL's last commit: SQLite ignores them (no reader's
  // snapshot and no recovery reaches past a commit frame), the next transaction writes over
  // them, and idem's checkpoints truncate the file. So the WAL may stay up to
  // k_write_probe_bytes plus a few pages longer, about what one run's claim adds to it.
  void check_writable() override {
    Transaction tx(db_, path_, writers_->transactions());
    Statement(db_, sqlite_sql::k_create_write_probe, path_).run();
    Statement insert(db_, sqlite_sql::k_write_probe, path_);
    insert.bind(1, k_write_probe_bytes).run();
    // The handle's message is still the last statement's: the code says what went wrong.
    if (int rc = sqlite3_db_cacheflush(db_); rc != SQLITE_OK)
      throw_sqlite(rc, path_, sqlite3_errstr(rc));
  }  // rolled back by tx

  // A long-lived process's connections checkpoint after their finishes, behind their queue.
  // A short-lived process's store: the finish's statements compiled into the cache (the outcome
  // then only binds and steps them), and the checkpoint when one is due.
  void upkeep() override {
    if (checkpoint_mode_ != SQLITE_CHECKPOINT_TRUNCATE) return;
    for (const char* sql : {sqlite_sql::k_finish, sqlite_sql::k_history_finish})
      Statement(connection(), sql, path_);
    checkpoint_if_wal_large();
  }

  StoreHealth health() override {
    StoreHealth h;
    h.engine = std::string("SQLite ") + sqlite3_libversion();
    h.schema_version = user_version(db_, path_);
    h.opened_schema_version = opened_version_;
    // A damaged page may also fail the check itself: that is damage too.
    try {
      Statement check(db_, sqlite_sql::k_quick_check, path_);
      while (check.step())
        if (std::string line = check.text_at(0); line != "ok") h.damage.push_back(line);
    } catch (const StoreError& e) {
      h.damage.push_back(e.what());
    }
    return h;
  }

  bool finish(const std::string& key, int64_t attempt, const core::Outcome& outcome) override {
    const std::optional<std::string> response = stored_response(outcome);
    bool changed = false;
    batched(true, [&](Connection db) {
      Statement update(db, sqlite_sql::k_finish, path_);
      update.bind(1, key).bind(2, attempt).bind(3, std::string(core::to_string(outcome.status)));
      update.bind(4, outcome.finished_ms).bind_optional(5, outcome.exit_code);
      update.bind_optional(6, outcome.signal).bind(7, int64_t(outcome.timed_out));
      update.bind(8, outcome.output_bytes).bind(9, int64_t(outcome.output_truncated));
      update.bind(10, outcome.note).bind_optional(11, response);
      update.bind(12, int64_t(outcome.kept_until_removed));
      update.run();
      changed = sqlite3_changes(db) == 1;
      if (changed) finish_history(db, key, outcome);
      if (changed && !outcome.output.empty()) write_output(db, key, attempt, outcome.output);
      IDEM_CRASH_POINT("finish-before-commit");
    });
    live_->remove(key, attempt);  // what it published for followers, if anything
    checkpoint_if_wal_large();
    return changed;
  }

  std::vector<bool> put_all(std::span<const Record> records, bool replace,
                            std::span<const std::vector<core::HistoryEntry>> histories) override {
    std::vector<bool> written(records.size(), false);
    batched(true, [&](Connection db) {
      for (size_t i = 0; i < records.size(); ++i)
        written[i] =
            put_in(db, records[i], replace, i < histories.size() ? histories[i] : k_no_history);
    });
    checkpoint_if_wal_large();
    return written;
  }

  // One record of put_all, in its transaction.
  bool put_in(Connection db, const Record& r, bool replace,
              const std::vector<core::HistoryEntry>& history) {
    const std::optional<std::string> response =
        r.response ? std::optional(core::encode_response(*r.response)) : std::nullopt;
    if (replace) Statement(db, sqlite_sql::k_delete_record, path_).bind(1, r.key).run();
    Statement insert(db, sqlite_sql::k_put, path_);
    insert.bind(1, r.key).bind(2, r.fingerprint).bind(3, r.kind);
    insert.bind(4, std::string(core::to_string(r.status))).bind(5, r.attempt);
    insert.bind(6, r.owner.host).bind(7, r.owner.boot_id).bind(8, r.owner.pid);
    insert.bind(9, r.owner.start_ticks).bind(10, r.started_ms);
    insert.bind_null_if_zero(11, r.finished_ms).bind(12, r.ttl_ms);
    insert.bind_null_if_zero(13, r.expires_ms).bind_optional(14, r.exit_code);
    insert.bind_optional(15, r.signal).bind(16, int64_t(r.timed_out));
    insert.bind(17, r.output_bytes).bind(18, int64_t(r.output_truncated));
    insert.bind(19, r.request).bind(20, r.note).bind_optional(21, response);
    insert.bind_null_if_zero(22, r.process_group.pgid);
    insert.bind_null_if_zero(23, r.process_group.leader_start_ticks);
    insert.bind_null_if_zero(24, r.lease_expires_ms).bind(25, int64_t(r.replay_failures));
    insert.bind(26, r.owner.machine_id).bind(27, r.owner.pid_ns);
    insert.bind(28, r.replays).bind_null_if_zero(29, r.last_replay_ms);
    insert.bind_null_if_empty(30, r.process_group.cgroup);
    insert.bind_null_if_empty(31, r.serial_group);
    // A queued record without a place (an import of one from elsewhere) waits at the end.
    const int64_t place = r.status == Status::queued && r.queue_seq == 0
                              ? Rows(*this, db).next_queue_seq(r.serial_group)
                              : r.queue_seq;
    insert.bind_null_if_zero(32, place);
    insert.bind_null_if_empty(33, r.superseded_by);
    insert.bind_null_if_empty(34, r.span.trace_id).bind_null_if_empty(35, r.span.span_id);
    insert.bind_null_if_empty(36, r.span.parent_span_id);
    insert.run();
    const bool changed = sqlite3_changes(db) == 1;
    if (changed && history.empty() && core::has_run(r))
      Statement(db, sqlite_sql::k_history_of_record, path_).bind(1, r.key).run();
    for (const core::HistoryEntry& e : changed ? history : k_no_history) {
      Statement put(db, sqlite_sql::k_history_put, path_);
      put.bind(1, r.key).bind(2, e.number).bind(3, e.trigger).bind(4, e.host).bind(5, e.pid);
      put.bind(6, e.started_ms).bind_null_if_zero(7, e.ended_ms);
      put.bind(8, std::string(core::to_string(e.outcome))).bind(9, e.reason);
      put.bind_optional(10, e.exit_code).bind_optional(11, e.signal);
      put.bind_optional(12, e.http_status).bind(13, e.note).run();
    }
    if (changed && !r.output.empty()) write_output(db, r.key, r.attempt, r.output);
    return changed;
  }

  bool set_process_group(const std::string& key, int64_t attempt,
                         const core::ProcessGroup& group) override {
    // Written to the WAL before the command starts. Synced only when it is what makes this
    // attempt's claim durable (a claim committed unsynced, ClaimRequest::sync). Otherwise not: it
    // survives a crash of idem (the frames are in the file, for every other process to read),
    // and what a power cut could take (the group) it takes along with the group's processes; the
    // outcome's sync after it covers it too. One fsync less per run. Except in a serial group:
    // there a running attempt without a group is one whose command never started, which waits
    // again after a crash (claim_flow's live_runner), so the group must be durable before the
    // command starts.
    const bool makes_claim_durable =
        unsynced_claim_ && unsynced_claim_->first == key && unsynced_claim_->second == attempt;
    unsynced_claim_.reset();
    bool serial = false;
    if (!makes_claim_durable) {
      Statement look(db_, sqlite_sql::k_in_serial_group, path_);
      look.bind(1, key);
      serial = look.step() && look.int_at(0) != 0;
    }
    bool changed = false;
    batched(makes_claim_durable || serial, [&](Connection db) {
      Statement update(db, sqlite_sql::k_set_process_group, path_);
      update.bind(1, key).bind(2, attempt).bind(3, group.pgid).bind(4, group.leader_start_ticks);
      update.bind_null_if_empty(5, group.cgroup);
      update.run();
      changed = sqlite3_changes(db) == 1;
    });
    return changed;
  }

  bool mark_abandoned(const std::string& key, int64_t attempt) override {
    bool changed = false;
    batched(true, [&](Connection db) {
      Rows rows(*this, db);
      changed = abandon_rows(rows, key, attempt, k_owner_died);
    });
    return changed;
  }

  bool heartbeat(const std::string& key, const std::string& attempt_token, int64_t lease_ms,
                 int64_t now_ms) override {
    if (attempt_token.empty()) return false;
    Transaction tx(db_, path_, writers_->transactions());
    Statement update(db_, sqlite_sql::k_heartbeat, path_);
    update.bind(1, key).bind(2, attempt_token).bind(3, now_ms);
    update.bind_null_if_zero(4, lease_end(now_ms, lease_ms)).run();
    bool changed = sqlite3_changes(db_) == 1;
    tx.commit();
    return changed;
  }

  // See Store::release for what it restores.
  bool release(const std::string& key, const std::string& attempt_token) override {
    if (attempt_token.empty()) return false;
    Transaction tx(db_, path_, writers_->transactions());
    Rows rows(*this, connection());
    const bool changed = release_rows(rows, key, attempt_token);
    tx.commit();
    return changed;
  }

  TurnResult take_turn(const TurnRequest& req, const OwnerGone& owner_gone) override {
    TurnResult result;
    batched(req.sync, [&](Connection db) {
      Rows rows(*this, db);
      result = turn_rows(rows, req, owner_gone, new_attempt_token());
    });
    if (!req.sync && result.state == TurnResult::State::started)
      unsynced_claim_.emplace(result.record->key, result.record->attempt);
    return result;
  }

  bool withdraw(const std::string& key, const std::string& token) override {
    if (token.empty()) return false;
    bool changed = false;
    batched(true, [&](Connection db) {
      Statement del(db, sqlite_sql::k_withdraw, path_);
      del.bind(1, key).bind(2, token).run();
      changed = sqlite3_changes(db) == 1;
    });
    return changed;
  }

  std::vector<QueuedGroup> queued_groups(const std::string& prefix, int64_t limit) override {
    const std::string end = sqlite_sql::prefix_end(prefix);
    Statement select(db_, sqlite_sql::queued_groups(!end.empty()).c_str(), path_);
    select.bind(1, prefix);
    if (!end.empty()) select.bind(2, end);
    select.bind(3, limit);
    std::vector<QueuedGroup> groups;
    while (select.step())
      groups.push_back(QueuedGroup{select.text_at(0), select.int_at(1), select.int_at(2)});
    return groups;
  }

  std::vector<Record> group_line(const std::string& group, int64_t limit) override {
    static const std::string runner_sql = std::string(sqlite_sql::select_record_columns()) +
                                          ", NULL" + sqlite_sql::k_group_runner_suffix;
    static const std::string line_sql = std::string(sqlite_sql::select_record_columns()) +
                                        ", NULL" + sqlite_sql::k_group_line_suffix;
    std::vector<Record> line;
    Statement runner(db_, runner_sql.c_str(), path_);
    runner.bind(1, group);
    if (runner.step()) line.push_back(read_record(runner));
    Statement queued(db_, line_sql.c_str(), path_);
    queued.bind(1, group).bind(2, limit);
    while (queued.step()) line.push_back(read_record(queued));
    return line;
  }

  std::optional<Record> get(const std::string& key) override { return select_record(key, true); }
  std::optional<Record> get_without_output(const std::string& key) override {
    return select_record(key, false);
  }

  // The blob is opened while the statement that found its rowid still holds its snapshot; the
  // open blob keeps that read transaction, and its cursor keeps the list of the value's
  // overflow pages, so reads one after another cost what they read.
  std::unique_ptr<OutputReader> open_output(const std::string& key, int64_t attempt) override {
    class BlobReader final : public OutputReader {
     public:
      BlobReader(sqlite3* db, int64_t rowid, const std::string& where)
          : blob_(db, rowid, false, where) {}
      std::string read(int64_t offset, int64_t length) override {
        if (offset < 0 || length <= 0) return {};
        return blob_.read(size_t(offset), size_t(length));
      }

     private:
      OutputBlob blob_;
    };
    Statement select(db_, sqlite_sql::k_output_rowid, path_);
    select.bind(1, key).bind(2, attempt);
    if (!select.step()) return nullptr;
    return std::make_unique<BlobReader>(db_, select.int_at(0), path_);
  }

  // Live output goes to files beside the store (sqlite/live_spool.hpp), for the key's running
  // attempt alone: never synced, never through the WAL.
  bool append_live(const std::string& key, int64_t attempt,
                   const core::LiveSegment& segment) override {
    if (!running_attempt(key, attempt)) return false;
    live_->append(key, attempt, segment);
    return true;
  }

  size_t read_live_into(const std::string& key, int64_t attempt, int64_t from, int64_t max_bytes,
                        std::vector<core::LiveSegment>& into) override {
    if (!running_attempt(key, attempt)) return 0;
    return live_->read(key, attempt, from, max_bytes, into);
  }

  bool running_attempt(const std::string& key, int64_t attempt) {
    Statement select(connection(), sqlite_sql::k_running_attempt, path_);  // every look
    select.bind(1, key).bind(2, attempt);
    return select.step();
  }

  int64_t drop_stale_live(const OwnerGone& owner_gone, int64_t now_ms) override {
    int64_t dropped = 0;
    for (const LiveSpool::File& f : live_->files(1000, now_ms / 1000)) {
      const std::optional<Record> r = f.key.empty() ? std::nullopt : select_record(f.key, false);
      if (r && r->status == Status::running && r->attempt == f.attempt &&
          !core::owner_counts_gone(*r, now_ms, owner_gone))
        continue;
      live_->remove_file(f.name);
      ++dropped;
    }
    return dropped;
  }

  void put_expectation(const core::Expectation& e) override {
    batched(true, [&](Connection db) {
      Statement(db, sqlite_sql::k_findings_delete, path_).bind(1, e.pattern).run();
      Statement put(db, sqlite_sql::k_expectation_put, path_);
      put.bind(1, e.pattern).bind(2, e.every_ms).bind(3, e.cron).bind(4, e.tz);
      put.bind(5, e.grace_ms).bind(6, e.max_runtime_ms).bind(7, e.at_most).bind(8, e.created_ms);
      put.run();
    });
  }

  bool remove_expectation(const std::string& pattern) override {
    bool removed = false;
    batched(true, [&](Connection db) {
      Statement(db, sqlite_sql::k_expectation_delete, path_).bind(1, pattern).run();
      removed = sqlite3_changes(db) > 0;
      Statement(db, sqlite_sql::k_findings_delete, path_).bind(1, pattern).run();
    });
    return removed;
  }

  std::vector<StoredExpectation> expectations() override {
    std::vector<StoredExpectation> all;
    Statement select(db_, sqlite_sql::k_expectations, path_);
    select.bind(1, core::k_max_expectations);
    while (select.step()) {
      StoredExpectation x;
      core::Expectation& e = x.expectation;
      e.pattern = select.text_at(0);
      e.every_ms = select.int_at(1);
      e.cron = select.text_at(2);
      e.tz = select.text_at(3);
      e.grace_ms = select.int_at(4);
      e.max_runtime_ms = select.int_at(5);
      e.at_most = select.int_at(6);
      e.created_ms = select.int_at(7);
      x.revision = select.int_at(8);
      x.state = core::schedule_state_from_text(select.text_at(9));
      all.push_back(std::move(x));
    }
    return all;
  }

  std::optional<std::vector<core::ScheduleFinding>> save_evaluation(
      const std::string& pattern, int64_t revision, const core::Evaluation& ev) override {
    std::optional<std::vector<core::ScheduleFinding>> kept;
    // Synced when it holds findings: one that only moves the state on (every minute, for each
    // expectation) may be lost to a power cut, and the evaluation then made again finds nothing
    // twice (a finding is kept once, by its identity).
    batched(!ev.findings.empty(), [&](Connection db) {
      Statement save(db, sqlite_sql::k_expectation_save, path_);
      save.bind(1, pattern).bind(2, revision).bind(3, core::schedule_state_text(ev.state)).run();
      if (sqlite3_changes(db) == 0) return;
      kept.emplace();
      auto put = [&](const core::ScheduleFinding& f) {
        Statement insert(db, sqlite_sql::k_finding_put, path_);
        insert.bind(1, pattern).bind(2, std::string(core::to_string(f.kind))).bind(3, f.at_ms);
        insert.bind(4, f.key).bind(5, f.attempt).bind(6, f.detail).bind(7, f.found_ms).run();
        if (sqlite3_changes(db) > 0) kept->push_back(f);
      };
      for (const core::ScheduleFinding& f : ev.findings)
        if (f.kind != core::FindingKind::recovered) put(f);
      for (const core::ScheduleFinding& f : ev.findings) {
        if (f.kind != core::FindingKind::recovered) continue;
        Statement(db, sqlite_sql::k_findings_resolve, path_)
            .bind(1, pattern)
            .bind(2, f.at_ms)
            .run();
        if (sqlite3_changes(db) > 0) put(f);
      }
      if (!kept->empty())
        Statement(db, sqlite_sql::k_findings_trim, path_)
            .bind(1, pattern)
            .bind(2, k_findings_kept - 1)
            .run();
    });
    return kept;
  }

  std::vector<core::ScheduleFinding> findings(const std::string& pattern, bool open_only,
                                              int64_t limit) override {
    std::vector<core::ScheduleFinding> found;
    Statement select(db_, sqlite_sql::k_findings, path_);
    select.bind(1, pattern).bind(2, int64_t(open_only ? 1 : 0)).bind(3, limit);
    while (select.step()) {
      core::ScheduleFinding f;
      f.pattern = pattern;
      f.kind =
          core::finding_kind_from_string(select.text_at(0)).value_or(core::FindingKind::missed);
      f.at_ms = select.int_at(1);
      f.key = select.text_at(2);
      f.attempt = select.int_at(3);
      f.detail = select.text_at(4);
      f.found_ms = select.int_at(5);
      f.resolved = select.int_at(6) != 0;
      found.push_back(std::move(f));
    }
    return found;
  }

  std::vector<core::AttemptFact> attempts_started(const core::KeyPattern& pattern, int64_t from_ms,
                                                  const std::string& from_key, int64_t from_number,
                                                  int64_t before_ms, int64_t limit) override {
    std::vector<core::AttemptFact> found;
    int64_t after_ms = from_ms;
    std::string after_key = from_key;
    int64_t after_number = from_number;
    const std::string end = sqlite_sql::prefix_end(pattern.head());
    // A glob's non-matching keys are read and passed over, a page at a time.
    for (bool more = true; more && int64_t(found.size()) < limit;) {
      Statement select(db_, sqlite_sql::k_attempts_started, path_);
      select.bind(1, after_ms).bind(2, after_key).bind(3, after_number).bind(4, before_ms);
      select.bind(5, pattern.head()).bind_null_if_empty(6, end).bind(7, limit);
      int64_t read = 0;
      while (select.step()) {
        ++read;
        core::AttemptFact a;
        a.key = select.text_at(0);
        a.number = select.int_at(1);
        a.started_ms = select.int_at(2);
        a.ended_ms = select.int_at(3);
        a.outcome = core::status_from_string(select.text_at(4)).value_or(Status::failed);
        a.exit_code = select.optional_int_at(5);
        a.http_status = select.optional_int_at(6);
        after_ms = a.started_ms;
        after_key = a.key;
        after_number = a.number;
        if (pattern.matches(a.key) && int64_t(found.size()) < limit) found.push_back(std::move(a));
      }
      more = read == limit;
    }
    return found;
  }

  HistoryPage history_page(const std::string& key, const HistoryQuery& query) override {
    HistoryPage page;
    Statement bounds(db_, sqlite_sql::k_history_bounds, path_);
    bounds.bind(1, key);
    if (bounds.step() && !bounds.is_null(0)) {
      page.first_kept = bounds.int_at(0);
      page.last = bounds.int_at(1);
    }
    bounds.reset();
    if (page.last == 0) return page;
    std::vector<core::HistoryEntry>& entries = page.entries;
    Statement select(db_, sqlite_sql::k_history, path_);
    select.bind(1, key).bind(2, query.before > 0 ? query.before : INT64_MAX);
    select.bind(3, query.limit > 0 ? query.limit : int64_t(-1));
    while (select.step()) {
      core::HistoryEntry e;
      e.number = select.int_at(0);
      e.trigger = select.text_at(1);
      e.host = select.text_at(2);
      e.pid = select.int_at(3);
      e.started_ms = select.int_at(4);
      e.ended_ms = select.int_at(5);
      e.outcome = core::status_from_string(select.text_at(6)).value_or(Status::failed);
      e.reason = select.text_at(7);
      e.exit_code = select.optional_int_at(8);
      e.signal = select.optional_int_at(9);
      e.http_status = select.optional_int_at(10);
      e.note = select.text_at(11);
      entries.push_back(std::move(e));
    }
    std::reverse(entries.begin(), entries.end());
    return page;
  }

  // Unsynced (Store::count_replays): the WAL keeps the commit consistent, and the next synced
  // commit of any writer makes it durable.
  void count_replays(std::span<const ReplayCount> counts) override {
    if (counts.empty()) return;
    batched(false, [&](Connection db) {
      for (const ReplayCount& c : counts) {
        Statement update(db, sqlite_sql::k_count_replays, path_);
        update.bind(1, c.key).bind(2, c.count).bind(3, c.last_ms).run();
      }
    });
    checkpoint_if_wal_large();
  }

  ListStop list(const ListQuery& q, const RecordVisitor& visit) override {
    if (!q.live && !q.include_expired) return std::nullopt;
    const std::string end = sqlite_sql::prefix_end(q.prefix);
    // Unfinished records from their own small index whatever the prefix; a rare prefix from the
    // key index (see k_prefix_sort_max); else the index of one condition, the one with the
    // fewest entries in the range where there are several, or the newest-first one.
    const bool unfinished = sqlite_sql::lists_unfinished_only(q);
    const bool by_key = !q.prefix.empty() && !unfinished &&
                        count_keys_with_prefix(q.prefix, end) < k_prefix_sort_max;
    const int64_t most = q.scan_limit > 0 ? q.scan_limit : k_prefix_sort_max;
    ListDrive drive = unfinished ? ListDrive::unfinished
                      : by_key   ? ListDrive::key
                                 : ListDrive::recent;
    if (drive == ListDrive::recent)
      drive = pick_list_drive(q, [&](ListDrive d) {
        Statement count(db_, sqlite_sql::list_count(q, d).c_str(), path_);
        bind_listing(count, q, end).bind(12, most);
        count.step();
        return count.int_at(0);
      });
    // A bounded scan ends at the scan_limit-th entry of the index it walks in order (the key
    // index holds fewer than k_prefix_sort_max: it is read whole).
    ListStop stop;
    if (q.scan_limit > 0 && drive != ListDrive::key) {
      Statement last(db_, sqlite_sql::list_stop(q, drive).c_str(), path_);
      bind_listing(last, q, end).bind(12, q.scan_limit);
      if (last.step()) stop.emplace(last.int_at(0), last.text_at(1));
    }
    const std::string sql = sqlite_sql::list(q, drive, stop.has_value());
    Statement select(db_, sql.c_str(), path_);
    bind_listing(select, q, end);
    if (stop) select.bind(10, stop->first).bind(11, stop->second);
    while (select.step()) {
      Record r;
      if (q.keys_only)
        r.key = select.text_at(0);
      else
        r = read_record(select);
      if (!visit(r)) break;
    }
    return stop;
  }

  // The listing's parameters ?1 to ?9 that `s` has (sqlite_sql::list).
  static Statement& bind_listing(Statement& s, const ListQuery& q, const std::string& end) {
    const int params = s.parameter_count();
    const auto want = [&](int n) { return params >= n; };
    if (want(1)) s.bind(1, q.now_ms);
    if (want(2)) s.bind(2, q.prefix);
    if (want(3)) s.bind(3, end);
    if (want(4)) s.bind(4, q.kind);
    if (want(5)) s.bind(5, q.since_ms);
    if (want(6)) s.bind(6, q.until_ms);
    if (want(8) && q.after) s.bind(7, q.after->first).bind(8, q.after->second);
    if (want(9)) s.bind(9, q.result);
    return s;
  }

  RemoveResult remove(const std::string& key, bool force, const OwnerGone& owner_gone) override {
    Transaction tx(db_, path_, writers_->transactions());
    Rows rows(*this, connection());
    const RemoveResult result = remove_rows(rows, key, force, owner_gone);
    if (result == RemoveResult::removed) tx.commit();
    return result;
  }

  GcResult gc(const GcQuery& q) override {
    auto bind = [&](Statement& s) {
      s.bind(1, q.now_ms);
      if (s.parameter_count() >= 2) s.bind(2, q.now_ms - q.older_than_ms);
    };
    if (q.dry_run) {
      int64_t n = count_of(sqlite_sql::gc_expired("count(*)"), bind);
      if (q.older_than_ms > 0) n += count_of(sqlite_sql::gc_ended("count(*)"), bind);
      return {n, 0};
    }
    int64_t removed = 0;
    {
      const GcMark mark(path_);
      removed = delete_picked(sqlite_sql::gc_expired("rowid"), bind);
      if (q.older_than_ms > 0) removed += delete_picked(sqlite_sql::gc_ended("rowid"), bind);
    }
    return {removed, checkpoint_truncate() ? 0 : wal_bytes()};
  }

 private:
  // The outcome's output, written in place into a zeroblob of its size: SQLite keeps a zeroblob
  // that ends a row as a count rather than bytes, so neither the insert nor the writes hold a
  // second copy of it. Inside finish's transaction, on the row it inserts.
  void write_output(Connection db, const std::string& key, int64_t attempt,
                    const std::string& output) {
    Statement insert(db, sqlite_sql::k_write_output, path_);
    insert.bind(1, key).bind(2, attempt).bind(3, int64_t(output.size())).run();
    OutputBlob(db, sqlite3_last_insert_rowid(db), true, path_).write(output);
  }

  // How many keys start with the prefix, counting no further than k_prefix_sort_max (from the
  // key index alone).
  int64_t count_keys_with_prefix(const std::string& prefix, const std::string& end) {
    const std::string sql = sqlite_sql::count_keys_with_prefix(!end.empty(), k_prefix_sort_max);
    Statement count(db_, sql.c_str(), path_);
    count.bind(1, prefix);
    if (!end.empty()) count.bind(2, end);
    count.step();
    return count.int_at(0);
  }

  template <class Bind>
  int64_t count_of(const std::string& sql, const Bind& bind) {
    Statement count(db_, sql.c_str(), path_);
    bind(count);
    count.step();
    return count.int_at(0);
  }

  // Deletes the rows PICK selects (by rowid), k_gc_batch at a time. Each batch is its own short
  // BEGIN IMMEDIATE: pick the rowids through the index, delete them by rowid (the table's own
  // b-tree key), commit. Between batches the writer lock is left free for k_gc_yield, longer
  // than a waiting writer's poll (on_busy), so claims and finishes queued behind a batch go
  // first; without the pause gc would take the lock straight back and keep it for the whole run.
  // A pause per batch, not a check for waiters: SQLite cannot tell whether anyone is waiting.

  template <class Bind>
  int64_t delete_picked(const std::string& picked, const Bind& bind) {
    // One statement per batch: its statement journal (the pages it changes, kept so that a
    // trigger's failure can undo the statement alone) holds each page once, in memory. A DELETE
    // per record journaled the dozen pages each record touches anew, into a temporary file once
    // the batch passed SQLite's 64 KiB spill: 7 million writes for 500,000 records.
    const std::string delete_sql = std::string(sqlite_sql::k_gc_delete_picked_prefix) + picked +
                                   " LIMIT " + std::to_string(k_gc_batch) + ")";
    // gc's commits are not synced one by one (synchronous=NORMAL keeps the WAL consistent, only
    // the last batches can be lost to a power cut, and the next gc collects them again); the
    // commits of other processes, synced, make the earlier frames durable anyway. This takes a
    // thousand fsyncs off a collection of 500,000 records.
    const ScopedPragma unsynced = unsynced_commits(db_);
    const ScopedPragma in_memory = journal_in_memory(db_);
    int64_t removed = 0;
    for (;;) {
      int64_t batch = 0;
      {
        Transaction tx(db_, path_, writers_->transactions());
        Statement del(db_, delete_sql.c_str(), path_);
        bind(del);
        del.run();
        batch = sqlite3_changes(db_);
        tx.commit();
      }
      removed += batch;
      checkpoint_if_wal_large(k_gc_checkpoint_wal_bytes);
      if (batch < k_gc_batch) return removed;
      std::this_thread::sleep_for(k_gc_yield);
    }
  }

  void exec(const char* sql) { sqlite::exec(db_, sql, path_); }

  // MODE: the database file's, as prepare_db_file found it.
  void configure(mode_t mode) {
    sqlite3_busy_handler(db_, &SqliteStore::on_busy, this);
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    sqlite3_extended_result_codes(db_, 1);
    // Captured output is capped for SQLite's default limit on a row (core/output.hpp); a SQLite
    // built with a smaller one would refuse a large outcome at finish, after the command ran.
    if (sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1) < core::k_store_row_limit)
      throw StoreError("store " + path_ + ": this SQLite keeps rows of at most " +
                       std::to_string(sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1)) +
                       " bytes; idem needs " + std::to_string(core::k_store_row_limit));
    // Only reads so far: a file that is refused here is left as it was (its bytes, its mode, no
    // -wal or -shm), which enable_wal, make_private and migrate would not do.
    opened_version_ = user_version(db_, path_);
    opened_application_id_ = application_id(db_, path_);
    refuse_foreign_file(db_, path_, opened_application_id_, opened_version_);
    refuse_newer_schema(path_, opened_version_);
    make_private(path_, mode);
    enable_wal();
    exec(sqlite_sql::k_connection_settings);
    // After wal_autocheckpoint = 0 (which removes any WAL hook): how long the WAL is, in frames,
    // as SQLite counts it. The file is longer (the idem VFS extends it ahead of its writes).
    sqlite3_wal_hook(db_, &SqliteStore::on_wal_commit, this);
    Statement page_size(db_, sqlite_sql::k_page_size, path_);
    if (page_size.step()) wal_frame_bytes_ = page_size.int_at(0) + k_wal_frame_header_bytes;
  }

  static int on_wal_commit(void* self, sqlite3*, const char*, int frames) {
    static_cast<SqliteStore*>(self)->wal_frames_ = frames;
    return SQLITE_OK;
  }

  // Switching a new file to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once
  // instead of calling the busy handler; several first runs at the same moment would then see
  // "database is locked". So retry, with the same patience as the busy timeout.
  void enable_wal() {
    const int64_t give_up = util::monotonic_ms() + busy_timeout_ms_;
    int64_t pause_ms = 1;
    for (;;) {
      sqlite3_stmt* stmt = nullptr;
      int rc = sqlite3_prepare_v2(db_, sqlite_sql::k_journal_mode_wal, -1, &stmt, nullptr);
      if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
      std::string mode =
          rc == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)) : "";
      sqlite3_finalize(stmt);
      if (rc == SQLITE_ROW && mode == "wal") return;
      if (rc == SQLITE_ROW)
        throw StoreError("store " + path_ + ": cannot switch to WAL journal mode (got " + mode +
                         ")");
      if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
        throw_sqlite(rc, path_, sqlite3_errmsg(db_));
      if (util::monotonic_ms() >= give_up)
        throw StoreError("store " + path_ + ": database is locked (waited " +
                             std::to_string(busy_timeout_ms_ / 1000) + "s)",
                         StoreFailure::transient);
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      pause_ms = std::min<int64_t>(pause_ms * 2, 50);
    }
  }

  // The busy handler: waits for the lock up to the busy timeout, polling it every few
  // milliseconds at first. SQLite's own handler backs off to 100 ms between polls within 300 ms,
  // so a writer behind a batch loop (gc) misses the short gaps it leaves between transactions and
  // starves; a short poll keeps such a wait to about one batch. See k_busy_fast_ms.
  static int on_busy(void* self, int count) {
    auto* store = static_cast<SqliteStore*>(self);
    const int64_t now = util::monotonic_ms();
    if (count == 0) store->busy_since_ms_ = now;
    const int64_t waited_ms = now - store->busy_since_ms_;
    if (waited_ms >= store->busy_timeout_ms_) return 0;
    const int64_t pause_ms =
        waited_ms >= k_busy_fast_ms
            ? k_busy_slow_poll_ms
            : std::min<int64_t>(int64_t(1) << std::min(count, 2), k_busy_poll_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    return 1;
  }

  Connection connection() { return Connection{db_, &statements_}; }

  // Runs `body` in a batch of this process's writes to the file (writer_queue_of), on whichever
  // connection leads the batch: `body` reaches the store only through the one it is given.
  // Returns once the batch committed (durable if `sync` or another write of it asked so). In a
  // long-lived process every batch is led on its dedicated writer.
  void batched(bool sync, const std::function<void(Connection)>& body) {
    SqliteStore& leader = writer_ ? *writer_ : *this;
    BatchConnection mine(leader.connection(), leader.path_);
    writers_->run(mine, sync, [&](BatchConnection& led) { body(led.db); });
  }

  // The connection that commits every batch of this long-lived process to the file at
  // `resolved`, opened by `open` for the first of its stores and closed with the last. Batches
  // on one connection keep its page cache: SQLite drops a connection's whole cache when it finds
  // that another connection wrote since its last transaction, so batches led on whichever
  // pooled connection read the pages of the record's indexes back from the WAL every time. The
  // queue's leaders use it one at a time (Writers::transactions), and its checkpoints too.
  static std::shared_ptr<SqliteStore> dedicated_writer(
      const std::string& resolved, const std::function<std::shared_ptr<SqliteStore>()>& open) {
    static std::mutex registry_mutex;
    static std::map<std::string, std::weak_ptr<SqliteStore>> registry;  // one per file
    std::lock_guard lock(registry_mutex);
    std::weak_ptr<SqliteStore>& known = registry[resolved];
    std::shared_ptr<SqliteStore> writer = known.lock();
    if (!writer) known = writer = open();
    return writer;
  }

  Statement& bind_claim(Statement& s, const ClaimRequest& req, int64_t attempt,
                        const std::string& token) {
    s.bind(1, req.key).bind(2, req.fingerprint).bind(3, req.kind).bind(4, attempt);
    s.bind(5, req.owner.host).bind(6, req.owner.boot_id).bind(7, req.owner.pid);
    s.bind(8, req.owner.start_ticks).bind(9, req.now_ms).bind(10, req.ttl_ms);
    s.bind(11, req.request).bind(12, token);
    s.bind_null_if_zero(13, lease_end(req.now_ms, req.lease_ms));
    s.bind(14, int64_t(req.policy.replay_failures));
    s.bind(16, req.owner.machine_id).bind(17, req.owner.pid_ns);  // ?15: the update's condition
    s.bind_null_if_zero(18, req.group ? req.group->pgid : 0);
    s.bind_null_if_zero(19, req.group ? req.group->leader_start_ticks : 0);
    s.bind_null_if_empty(20, req.group ? req.group->cgroup : std::string());
    s.bind(21, std::string("running"));
    s.bind_null_if_empty(22, req.serial ? req.serial->group : std::string());
    s.bind_null_if_zero(23, 0);
    s.bind_null_if_empty(24, req.span.trace_id).bind_null_if_empty(25, req.span.span_id);
    s.bind_null_if_empty(26, req.span.parent_span_id);
    return s;
  }

  // The running record of a serial group (`runner`), or the head of its line; without output.
  std::optional<Record> select_group_record(Connection db, bool runner, const std::string& group) {
    static const std::string runner_sql = std::string(sqlite_sql::select_record_columns()) +
                                          ", NULL" + sqlite_sql::k_group_runner_suffix;
    static const std::string head_sql = std::string(sqlite_sql::select_record_columns()) +
                                        ", NULL" + sqlite_sql::k_group_head_suffix;
    Statement select(db, (runner ? runner_sql : head_sql).c_str(), path_);
    select.bind(1, group);
    if (!select.step()) return std::nullopt;
    return read_record(select);
  }

  bool set_abandoned(Connection db, const std::string& key, int64_t attempt, const char* note) {
    Statement update(db, sqlite_sql::k_set_abandoned, path_);
    update.bind(1, key).bind(2, attempt).bind(3, std::string(note)).run();
    return sqlite3_changes(db) == 1;
  }

  // The claim flow's row operations (store/claim_flow.hpp), on a connection inside a transaction
  // that holds the writer lock: the whole store is the claim's.
  class Rows final : public RowOperations {
   public:
    Rows(SqliteStore& store, Connection db) : store_(store), db_(db) {}

    std::optional<Record> lock(const std::string& key) override {
      return store_.select_record(db_, key, false);
    }
    std::optional<Record> read_with_output(const std::string& key) override {
      return store_.select_record(db_, key, true);
    }
    bool insert(const ClaimRequest& req, int64_t attempt, const std::string& token) override {
      Statement insert(db_, sqlite_sql::k_claim_insert, store_.path_);
      store_.bind_claim(insert, req, attempt, token).run();
      return sqlite3_changes(db_) == 1;
    }
    bool replace(const ClaimRequest& req, int64_t attempt, const std::string& token,
                 int64_t observed) override {
      Statement update(db_, sqlite_sql::k_claim_replace, store_.path_);
      store_.bind_claim(update, req, attempt, token).bind(15, observed).run();
      return sqlite3_changes(db_) == 1;
    }
    bool set_abandoned(const std::string& key, int64_t attempt, const char* note) override {
      return store_.set_abandoned(db_, key, attempt, note);
    }
    bool delete_first_attempt(const std::string& key, const std::string& token) override {
      Statement del(db_, sqlite_sql::k_release_first_attempt, store_.path_);
      del.bind(1, key).bind(2, token).run();
      return sqlite3_changes(db_) == 1;
    }
    bool restore_previous_attempt(const std::string& key, const std::string& token) override {
      Statement back(db_, sqlite_sql::k_restore_previous_attempt, store_.path_);
      back.bind(1, key).bind(2, token).run();
      return sqlite3_changes(db_) == 1;
    }
    void delete_record(const std::string& key) override {
      Statement(db_, sqlite_sql::k_delete_record, store_.path_).bind(1, key).run();
    }
    void start_history(const ClaimRequest& req, bool afresh) override {
      if (afresh) {
        Statement(db_, sqlite_sql::k_history_clear, store_.path_).bind(1, req.key).run();
        Statement(db_, sqlite_sql::k_replays_clear, store_.path_).bind(1, req.key).run();
      }
      Statement insert(db_, sqlite_sql::k_history_start, store_.path_);
      insert.bind(1, req.key)
          .bind(2, req.trigger.empty() ? core::trigger_of_kind(req.kind) : req.trigger);
      insert.bind(3, req.owner.host).bind(4, req.owner.pid).bind(5, req.now_ms).run();
      Statement trim(db_, sqlite_sql::k_history_trim, store_.path_);
      trim.bind(1, req.key).bind(2, store_.keep_attempts_).run();
    }
    void abandon_history(const std::string& key, const char* reason) override {
      Statement update(db_, sqlite_sql::k_history_abandon, store_.path_);
      update.bind(1, key).bind(2, std::string(reason)).run();
    }
    void lock_group(const std::string&) override {}  // the writer lock holds the whole store
    std::optional<Record> group_runner(const std::string& group) override {
      return store_.select_group_record(db_, true, group);
    }
    std::optional<Record> group_head(const std::string& group) override {
      return store_.select_group_record(db_, false, group);
    }
    int64_t queue_length(const std::string& group) override {
      Statement count(db_, sqlite_sql::k_queue_length, store_.path_);
      count.bind(1, group).step();
      return count.int_at(0);
    }
    int64_t queued_in_group(const std::string& group, int64_t up_to) override {
      Statement count(db_, sqlite_sql::k_queued_in_group, store_.path_);
      count.bind(1, group).bind(2, up_to).step();
      return count.int_at(0);
    }
    int64_t next_queue_seq(const std::string& group) override {
      Statement next(db_, sqlite_sql::k_next_queue_seq, store_.path_);
      next.bind(1, group).step();
      return next.int_at(0);
    }
    bool enqueue(const ClaimRequest& req, int64_t attempt, const std::string& token, int64_t seq,
                 std::optional<int64_t> observed) override {
      Statement write(db_, observed ? sqlite_sql::k_claim_replace : sqlite_sql::k_claim_insert,
                      store_.path_);
      store_.bind_claim(write, req, attempt, token);
      write.bind(21, std::string("queued")).bind(23, seq);
      write.bind_null_if_zero(18, 0).bind_null_if_zero(19, 0).bind_null_if_empty(20, "");
      if (observed) write.bind(15, *observed);
      write.run();
      return sqlite3_changes(db_) == 1;
    }
    std::vector<std::string> supersede_pending(const std::string& group, const std::string& by,
                                               int64_t now_ms) override {
      Statement update(db_, sqlite_sql::k_supersede_pending, store_.path_);
      update.bind(1, group).bind(2, by).bind(3, now_ms);
      std::vector<std::string> keys;
      while (update.step()) keys.push_back(update.text_at(0));
      return keys;
    }
    bool requeue(const std::string& key, int64_t attempt, int64_t seq) override {
      Statement update(db_, sqlite_sql::k_requeue, store_.path_);
      update.bind(1, key).bind(2, attempt).bind(3, seq).run();
      return sqlite3_changes(db_) == 1;
    }
    bool start_queued(const ClaimRequest& started, int64_t attempt, const std::string& token,
                      int64_t lease_expires_ms) override {
      const core::Owner& owner = started.owner;
      Statement update(db_, sqlite_sql::k_start_queued, store_.path_);
      update.bind(1, started.key).bind(2, attempt).bind(3, owner.host).bind(4, owner.boot_id);
      update.bind(5, owner.pid).bind(6, owner.start_ticks).bind(7, owner.machine_id);
      update.bind(8, owner.pid_ns).bind(9, token).bind_null_if_zero(10, lease_expires_ms);
      update.bind(11, started.now_ms).run();
      return sqlite3_changes(db_) == 1;
    }
    bool renew_queued(const std::string& key, const std::string& token,
                      int64_t lease_expires_ms) override {
      Statement update(db_, sqlite_sql::k_renew_queued, store_.path_);
      update.bind(1, key).bind(2, token).bind_null_if_zero(3, lease_expires_ms).run();
      return sqlite3_changes(db_) == 1;
    }
    bool inserts_first() const override { return false; }
    [[noreturn]] void vanished(const std::string& key) override {
      throw StoreError("store " + store_.path_ + ": '" + core::display_key(key) +
                       "' vanished under the writer lock");
    }
    std::string where() const override { return store_.path_; }

   private:
    SqliteStore& store_;
    Connection db_;
  };

  // The key's latest history entry ended by `outcome`, in finish's transaction.
  void finish_history(Connection db, const std::string& key, const core::Outcome& outcome) {
    Statement update(db, sqlite_sql::k_history_finish, path_);
    update.bind(1, key).bind(2, std::string(core::to_string(outcome.status)));
    update.bind(3, outcome.finished_ms).bind(4, std::string(core::end_reason(outcome)));
    update.bind_optional(5, outcome.exit_code).bind_optional(6, outcome.signal);
    update.bind_optional(
        7, outcome.response ? std::optional<int>(outcome.response->status) : std::nullopt);
    update.bind(8, outcome.note).run();
  }

  // A response that cannot be stored throws std::invalid_argument (finish encodes it before its
  // transaction, so nothing is written).
  static std::optional<std::string> stored_response(const core::Outcome& outcome) {
    if (!outcome.response) return std::nullopt;
    return core::encode_response(*outcome.response);
  }

  static Record read_record(const Statement& s) {
    Record r;
    r.key = s.text_at(0);
    r.fingerprint = s.text_at(1);
    r.kind = s.text_at(2);
    r.status = core::status_from_string(s.text_at(3)).value_or(Status::failed);
    r.attempt = s.int_at(4);
    r.owner = core::Owner{s.text_at(5), s.text_at(6),  s.int_at(7),
                          s.int_at(8),  s.text_at(26), s.int_at(27)};
    r.started_ms = s.int_at(9);
    r.finished_ms = s.int_at(10);
    r.ttl_ms = s.int_at(11);
    r.expires_ms = s.int_at(12);
    r.exit_code = s.optional_int_at(13);
    r.signal = s.optional_int_at(14);
    r.timed_out = s.int_at(15) != 0;
    r.output_bytes = s.int_at(16);
    r.output_truncated = s.int_at(17) != 0;
    r.request = s.text_at(18);
    r.note = s.text_at(19);
    // A stored answer that does not decode (edited by hand) reads as none rather than failing
    // every read of the key; list() reads NULL here.
    if (!s.is_null(20)) r.response = core::decode_response(s.text_at(20));
    r.process_group = core::ProcessGroup{s.int_at(21), s.int_at(22), s.text_at(30)};
    r.attempt_token = s.text_at(23);
    r.lease_expires_ms = s.int_at(24);
    r.replay_failures = s.int_at(25) != 0;
    r.replays = s.int_at(28);
    r.last_replay_ms = s.int_at(29);
    r.serial_group = s.text_at(31);
    r.queue_seq = s.int_at(32);
    r.superseded_by = s.text_at(33);
    r.span = core::SpanIds{s.text_at(34), s.text_at(35), s.text_at(36)};
    return r;
  }

  std::optional<Record> select_record(const std::string& key, bool with_output) {
    return select_record(connection(), key, with_output);
  }
  // One read: the record, then its output by blob I/O while the statement still holds the
  // snapshot it was found in (so the rowid is the output of this very attempt).
  std::optional<Record> select_record(Connection db, const std::string& key, bool with_output) {
    Statement select(db, sqlite_sql::select_record(with_output), path_);
    select.bind(1, key);
    if (!select.step()) return std::nullopt;
    Record r = read_record(select);
    if (!select.is_null(sqlite_sql::k_output_column))
      r.output = OutputBlob(db, select.int_at(sqlite_sql::k_output_column), false, path_).read();
    return r;
  }

  // What the WAL holds after this connection's last commit or checkpoint.
  int64_t wal_bytes() const { return wal_frames_ * wal_frame_bytes_; }
  // The size is looked at again behind the queue: of several writers that found the WAL large,
  // the first checkpoints it and the others find it empty.
  // A writer's: none while a gc holds its mark (gc's own checkpoints will copy the WAL).
  void checkpoint_if_wal_large() {
    if (writer_) return writer_->checkpoint_if_wal_large();  // its commits are the batches'
    if (wal_bytes() > checkpoint_wal_bytes_ && !gc_marked(path_))
      checkpoint_if_wal_large(checkpoint_wal_bytes_);
  }
  // gc's batches, at their own size. The WAL keeps its blocks: the next commit writes over them.
  void checkpoint_if_wal_large(int64_t large_bytes) {
    if (wal_bytes() <= large_bytes) return;
    std::lock_guard queued(writers_->transactions());
    if (wal_bytes() > large_bytes) checkpoint_queued(checkpoint_mode_, true);
  }

  // Behind this process's other writers (writer_queue_of), like a transaction: a checkpoint
  // holds SQLite's writer lock throughout, and a writer of this process that met it there would
  // poll it from its busy handler, holding the queue, instead of waiting its turn in the queue.
  bool checkpoint_truncate() {
    std::lock_guard queued(writers_->transactions());
    return checkpoint_queued(SQLITE_CHECKPOINT_TRUNCATE, false);
  }

  // Takes the writer lock (waiting via the busy handler) and copies the WAL into the database;
  // TRUNCATE then truncates the WAL to zero bytes, RESTART leaves the file for the next write to
  // start over (both wait for readers still on the WAL). Readers still holding old snapshots make
  // it return early (false): that is not an error, the next one finishes the job. `keep_blocks`:
  // TRUNCATE zeroes the WAL's header instead of emptying the file (keep_wal_blocks).
  bool checkpoint_queued(int mode, bool keep_blocks) {
    int frames = -1;
    keep_wal_blocks(db_, keep_blocks);
    const bool done = sqlite3_wal_checkpoint_v2(db_, nullptr, mode, &frames, nullptr) == SQLITE_OK;
    keep_wal_blocks(db_, false);
    if (done)
      wal_frames_ = 0;
    else if (frames >= 0)
      wal_frames_ = frames;
    return done;
  }

  std::string path_;
  const int64_t checkpoint_wal_bytes_;  // StoreOptions::long_lived
  const int checkpoint_mode_;           // SQLITE_CHECKPOINT_TRUNCATE, or RESTART (long_lived)
  std::optional<LiveSpool> live_;       // beside the file itself (links resolved)
  sqlite3* db_ = nullptr;
  StatementCache statements_;  // db_'s, finalized before it closes
  int64_t busy_timeout_ms_;
  int64_t keep_attempts_;             // StoreOptions::keep_attempts
  std::shared_ptr<Writers> writers_;  // this process's writers of the file
  // The claim this connection committed unsynced (key, attempt): the next record of its process
  // group is synced to make it durable (set_process_group).
  std::optional<std::pair<std::string, int64_t>> unsynced_claim_;
  int64_t busy_since_ms_ = 0;
  // The dedicated writer (long-lived stores but the writer itself): leads every batch.
  std::shared_ptr<SqliteStore> writer_;
  // In the WAL after this connection's last commit; a dedicated writer's is read by the threads
  // of the stores it writes for.
  std::atomic<int64_t> wal_frames_ = 0;
  int64_t wal_frame_bytes_ = 4096 + k_wal_frame_header_bytes;  // a page and its frame header
  int opened_version_ = 0;             // PRAGMA user_version when the connection was opened
  int32_t opened_application_id_ = 0;  // PRAGMA application_id then
};

}  // namespace

}  // namespace sqlite

std::unique_ptr<Store> open_sqlite_store(const std::string& path,
                                         std::optional<int64_t> busy_timeout_ms,
                                         std::optional<int64_t> keep_attempts, bool long_lived) {
  return std::make_unique<sqlite::SqliteStore>(path, busy_timeout_ms, keep_attempts, long_lived);
}

}  // namespace idem::store
