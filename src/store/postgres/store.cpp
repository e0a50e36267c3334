// The PostgreSQL store. With the backend's other files (postgres_connection: the connection,
// statements and transactions; postgres_schema: migrations; postgres/sql.hpp: all of its SQL),
// the only code that includes <libpq-fe.h>; the claim and release themselves are
// store/claim_flow.cpp's.
//
// One connection per Store object (the daemon's StoreProvider pools them). Every statement is
// parameterised ($n, types given, binary results); a user's key or output is never spliced into
// SQL. Durability: each write commits before it returns, so a claim or an outcome is as durable
// as the server's synchronous_commit makes a commit (docs/store-and-postgresql.md, "Durability").
//
// Concurrency: the claim inserts with ON CONFLICT DO NOTHING, so a new key is one statement;
// a key that exists is read FOR UPDATE (its row lock orders the claimers), decided by
// core::decide like on SQLite, and replaced by an UPDATE conditioned on the attempt it read.
// Every later write is conditioned on the attempt (or its token) and on `running`: a stale owner
// changes nothing. Transactions that fail with a serialization failure or a deadlock (SQLSTATE
// 40001, 40P01) are retried. No advisory locks, no LISTEN/NOTIFY: the SQL stays within what
// PostgreSQL-compatible distributed engines accept, and works behind a transaction pooler.
//
// Time: callers give now_ms from their clock (a fake one in tests). Hosts sharing a server may
// disagree, so the connection measures the server's clock against this host's when it opens, and
// when they differ by more than k_clock_tolerance_ms every time the store is given is moved onto
// the server's clock (docs/internals.md, "Time on PostgreSQL").
#include "store/store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "core/response.hpp"
#include "store/claim_flow.hpp"
#include "store/postgres/connection.hpp"
#include "store/postgres/schema.hpp"
#include "store/postgres/sql.hpp"

namespace idem::store {

namespace postgres {

namespace {

using core::Record;
using core::Status;

// Tries of a claim whose connection was lost, each after finding its earlier try did not land.
constexpr int k_claim_tries = 3;
// Host and server clocks closer than this are taken as equal (NTP keeps hosts well within it);
// further apart, the server's clock wins (see the file comment).
constexpr int64_t k_clock_tolerance_ms = 1000;
// gc deletes at most this many records per transaction (each its own commit).
constexpr int64_t k_gc_batch = 500;
// ls reads this many rows per page: nothing more is held in memory.
constexpr int64_t k_list_page = 500;
// Live segments read at once (Store::read_live).
constexpr int64_t k_live_rows_read = 16;

std::optional<std::string> text_or_null(const std::string& text) {
  return text.empty() ? std::nullopt : std::optional(text);
}

Record read_record(const Result& r, int row) {
  Record rec;
  rec.key = r.bytes_at(row, 0);
  rec.fingerprint = r.bytes_at(row, 1);
  rec.kind = r.bytes_at(row, 2);
  rec.status = core::status_from_string(r.bytes_at(row, 3)).value_or(Status::failed);
  rec.attempt = r.int_at(row, 4);
  rec.owner = core::Owner{r.bytes_at(row, 5), r.bytes_at(row, 6),  r.int_at(row, 7),
                          r.int_at(row, 8),   r.bytes_at(row, 26), r.int_at(row, 27)};
  rec.started_ms = r.int_at(row, 9);
  rec.finished_ms = r.int_at(row, 10);
  rec.ttl_ms = r.int_at(row, 11);
  rec.expires_ms = r.int_at(row, 12);
  rec.exit_code = r.optional_int_at(row, 13);
  rec.signal = r.optional_int_at(row, 14);
  rec.timed_out = r.int_at(row, 15) != 0;
  rec.output_bytes = r.int_at(row, 16);
  rec.output_truncated = r.int_at(row, 17) != 0;
  rec.request = r.bytes_at(row, 18);
  rec.note = r.bytes_at(row, 19);
  // A stored answer that does not decode reads as none rather than failing every read.
  if (!r.is_null(row, 20)) rec.response = core::decode_response(r.bytes_at(row, 20));
  rec.process_group = core::ProcessGroup{r.int_at(row, 21), r.int_at(row, 22), r.bytes_at(row, 30)};
  rec.attempt_token = r.bytes_at(row, 23);
  rec.lease_expires_ms = r.int_at(row, 24);
  rec.replay_failures = r.int_at(row, 25) != 0;
  rec.replays = r.int_at(row, 28);
  rec.last_replay_ms = r.int_at(row, 29);
  rec.serial_group = r.bytes_at(row, 31);
  rec.queue_seq = r.int_at(row, 32);
  rec.superseded_by = r.bytes_at(row, 33);
  rec.span = core::SpanIds{r.bytes_at(row, 34), r.bytes_at(row, 35), r.bytes_at(row, 36)};
  rec.output = r.bytes_at(row, 37);
  return rec;
}

int64_t host_wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

class PostgresStore final : public Store {
 public:
  PostgresStore(const StoreLocation& where, std::optional<int64_t> busy_timeout_ms,
                std::optional<int64_t> keep_attempts)
      : where_(where) {
    // PostgreSQL reads a lock_timeout of 0 as no limit; a busy timeout of 0 means not waiting.
    lock_timeout_ms_ = std::max<int64_t>(busy_timeout_in_force(busy_timeout_ms), 1);
    keep_attempts_ = keep_attempts_in_force(keep_attempts);
    std::optional<int> found;
    guarded("connect", [&] {
      conn_.emplace(where_);
      found = set_up_session(true);
      return 0;
    });
    guarded("create or migrate idem's tables", [&] {
      opened_version_ = migrate(conn(), lock_timeout_ms_, found);
      return 0;
    });
  }

  ClaimResult claim(const ClaimRequest& request, const OwnerGone& owner_gone) override {
    ClaimRequest req = request;
    req.now_ms = server_ms(req.now_ms);
    // The token is drawn once for every try: a claim whose COMMIT went out but whose answer was
    // lost with the connection is found again by it (only this process knows it).
    const std::string token = new_attempt_token();
    for (int tries = 1;; ++tries) {
      try {
        return guarded("claim", [&] { return claim_once(req, owner_gone, token); });
      } catch (const StoreError& e) {
        if (!e.transient() || !conn_ || !conn_->lost() || tries >= k_claim_tries) throw;
        if (std::optional<ClaimResult> landed = claim_landed(req, token, e)) return *landed;
      }
    }
  }

  bool finish(const std::string& key, int64_t attempt, const core::Outcome& outcome) override {
    const std::optional<std::string> response =
        outcome.response ? std::optional(core::encode_response(*outcome.response)) : std::nullopt;
    // Its last alternative matches this very outcome, already written by a try whose answer the
    // connection lost: the write is repeatable, so a lost connection is met by doing it again.
    Params p;
    p.text(key).integer(attempt).text(std::string(core::to_string(outcome.status)));
    p.integer(server_ms(outcome.finished_ms)).optional_integer(outcome.exit_code);
    p.optional_integer(outcome.signal).integer(outcome.timed_out).bytes(outcome.output);
    p.integer(outcome.output_bytes).integer(outcome.output_truncated).text(outcome.note);
    p.optional_text(response).text(core::end_reason(outcome));
    p.optional_integer(outcome.response ? std::optional<int>(outcome.response->status)
                                        : std::nullopt);
    p.integer(outcome.kept_until_removed);
    return guarded(
        "finish", [&] { return conn().exec(postgres_sql::k_finish, p).int_at(0, 0) == 1; },
        OnLoss::repeat);
  }

  std::vector<bool> put_all(std::span<const Record> records, bool replace,
                            std::span<const std::vector<core::HistoryEntry>> histories) override {
    static const std::vector<core::HistoryEntry> none;
    return guarded("import", [&] {
      std::vector<bool> written;
      Transaction tx(conn(), lock_timeout_ms_);
      for (size_t i = 0; i < records.size(); ++i)
        written.push_back(put_in(records[i], replace, i < histories.size() ? histories[i] : none));
      tx.commit();
      return written;
    });
  }

  bool set_process_group(const std::string& key, int64_t attempt,
                         const core::ProcessGroup& group) override {
    Params p;
    p.text(key).integer(attempt).integer(group.pgid).integer(group.leader_start_ticks);
    p.optional_text(text_or_null(group.cgroup));
    return guarded(
        "record the process group",
        [&] { return conn().exec(postgres_sql::k_set_process_group, p).changed() == 1; },
        OnLoss::repeat);
  }

  bool mark_abandoned(const std::string& key, int64_t attempt) override {
    return guarded("mark abandoned", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      Rows rows(*this);
      const bool changed = abandon_rows(rows, key, attempt, k_owner_died);
      tx.commit();
      return changed;
    });
  }

  bool heartbeat(const std::string& key, const std::string& attempt_token, int64_t lease_ms,
                 int64_t now_ms) override {
    if (attempt_token.empty()) return false;
    const int64_t now = server_ms(now_ms);
    Params p;
    p.text(key).text(attempt_token).integer(now).integer_or_null(lease_end(now, lease_ms));
    return guarded(
        "heartbeat", [&] { return conn().exec(postgres_sql::k_heartbeat, p).changed() == 1; },
        OnLoss::repeat);
  }

  bool release(const std::string& key, const std::string& attempt_token) override {
    if (attempt_token.empty()) return false;
    return guarded("release", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      Rows rows(*this);
      const bool changed = release_rows(rows, key, attempt_token);
      tx.commit();
      return changed;
    });
  }

  std::optional<Record> get(const std::string& key) override {
    return guarded("read", [&] { return select_record(key, true, false); });
  }

  std::optional<Record> get_without_output(const std::string& key) override {
    return guarded("read", [&] { return select_record(key, false, false); });
  }

  // Each read one statement: substring() of the stored value.
  std::unique_ptr<OutputReader> open_output(const std::string& key, int64_t attempt) override {
    class RangeReader final : public OutputReader {
     public:
      RangeReader(PostgresStore& store, std::string key, int64_t attempt)
          : store_(store), key_(std::move(key)), attempt_(attempt) {}
      std::string read(int64_t offset, int64_t length) override {
        return store_.read_range(key_, attempt_, offset, length);
      }

     private:
      PostgresStore& store_;
      const std::string key_;
      const int64_t attempt_;
    };
    return std::make_unique<RangeReader>(*this, key, attempt);
  }

  std::string read_range(const std::string& key, int64_t attempt, int64_t offset, int64_t length) {
    if (offset < 0 || length <= 0 || offset >= core::k_store_row_limit) return {};
    length = std::min(length, core::k_store_row_limit);
    return guarded("read the output", [&] {
      Result r = conn().exec(postgres_sql::k_read_output,
                             Params().text(key).integer(attempt).integer(offset).integer(length));
      return r.rows() == 1 ? r.bytes_at(0, 0) : std::string();
    });
  }

  bool append_live(const std::string& key, int64_t attempt,
                   const core::LiveSegment& segment) override {
    return guarded("write live output", [&] {
      Params p;
      p.text(key).integer(attempt).integer(segment.offset).integer(segment.size);
      p.bytes(segment.frames);
      return conn().exec(postgres_sql::k_append_live, p).changed() > 0;
    });
  }

  // Rows of up to k_live_rows_read at a time: a segment is at most a feed's bound (engine/live).
  size_t read_live_into(const std::string& key, int64_t attempt, int64_t from, int64_t max_bytes,
                        std::vector<core::LiveSegment>& into) override {
    return guarded("read live output", [&] {
      Result r =
          conn().exec(postgres_sql::k_read_live,
                      Params().text(key).integer(attempt).integer(from).integer(k_live_rows_read));
      size_t count = 0;
      int64_t held = 0;
      for (int row = 0; row < r.rows() && held < std::max<int64_t>(max_bytes, 1); ++row) {
        if (count == into.size()) into.emplace_back();
        core::LiveSegment& s = into[count++];
        s.offset = r.int_at(row, 0);
        s.size = r.int_at(row, 1);
        s.frames = r.bytes_at(row, 2);
        held += int64_t(s.frames.size());
      }
      return count;
    });
  }

  int64_t drop_stale_live(const OwnerGone& owner_gone, int64_t now_ms) override {
    std::vector<std::pair<std::string, int64_t>> attempts = guarded("read live output", [&] {
      std::vector<std::pair<std::string, int64_t>> found;
      Result r = conn().exec(postgres_sql::k_live_attempts);
      for (int row = 0; row < r.rows(); ++row)
        found.emplace_back(r.bytes_at(row, 0), r.int_at(row, 1));
      return found;
    });
    int64_t dropped = 0;
    for (const auto& found : attempts) {
      const std::string& key = found.first;  // (not bindings: a lambda below captures them)
      const int64_t attempt = found.second;
      const std::optional<Record> r = get_without_output(key);
      if (r && r->status == Status::running && r->attempt == attempt &&
          !core::owner_counts_gone(*r, now_ms, owner_gone))
        continue;
      guarded("drop live output", [&] {
        return conn()
            .exec(postgres_sql::k_drop_live, Params().text(key).integer(attempt))
            .changed();
      });
      ++dropped;
    }
    return dropped;
  }

  void put_expectation(const core::Expectation& e) override {
    guarded("keep an expectation", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      conn().exec(postgres_sql::k_findings_delete, Params().text(e.pattern));
      Params p;
      p.text(e.pattern).integer(e.every_ms).text(e.cron).text(e.tz).integer(e.grace_ms);
      p.integer(e.max_runtime_ms).integer(e.at_most).integer(e.created_ms);
      conn().exec(postgres_sql::k_expectation_put, p);
      tx.commit();
      return 0;
    });
  }

  bool remove_expectation(const std::string& pattern) override {
    return guarded("remove an expectation", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      const bool removed =
          conn().exec(postgres_sql::k_expectation_delete, Params().text(pattern)).changed() > 0;
      conn().exec(postgres_sql::k_findings_delete, Params().text(pattern));
      tx.commit();
      return removed;
    });
  }

  std::vector<StoredExpectation> expectations() override {
    return guarded("read the expectations", [&] {
      std::vector<StoredExpectation> all;
      Result r =
          conn().exec(postgres_sql::k_expectations, Params().integer(core::k_max_expectations));
      for (int row = 0; row < r.rows(); ++row) {
        StoredExpectation x;
        core::Expectation& e = x.expectation;
        e.pattern = r.bytes_at(row, 0);
        e.every_ms = r.int_at(row, 1);
        e.cron = r.bytes_at(row, 2);
        e.tz = r.bytes_at(row, 3);
        e.grace_ms = r.int_at(row, 4);
        e.max_runtime_ms = r.int_at(row, 5);
        e.at_most = r.int_at(row, 6);
        e.created_ms = r.int_at(row, 7);
        x.revision = r.int_at(row, 8);
        x.state = core::schedule_state_from_text(r.bytes_at(row, 9));
        all.push_back(std::move(x));
      }
      return all;
    });
  }

  std::optional<std::vector<core::ScheduleFinding>> save_evaluation(
      const std::string& pattern, int64_t revision, const core::Evaluation& ev) override {
    return guarded("keep an evaluation",
                   [&]() -> std::optional<std::vector<core::ScheduleFinding>> {
                     Transaction tx(conn(), lock_timeout_ms_);
                     Params save;
                     save.text(pattern).integer(revision).text(core::schedule_state_text(ev.state));
                     if (conn().exec(postgres_sql::k_expectation_save, save).changed() == 0)
                       return std::nullopt;
                     std::vector<core::ScheduleFinding> kept;
                     auto put = [&](const core::ScheduleFinding& f) {
                       Params p;
                       p.text(pattern).text(std::string(core::to_string(f.kind))).integer(f.at_ms);
                       p.text(f.key).integer(f.attempt).text(f.detail).integer(f.found_ms);
                       if (conn().exec(postgres_sql::k_finding_put, p).changed() > 0)
                         kept.push_back(f);
                     };
                     for (const core::ScheduleFinding& f : ev.findings)
                       if (f.kind != core::FindingKind::recovered) put(f);
                     for (const core::ScheduleFinding& f : ev.findings) {
                       if (f.kind != core::FindingKind::recovered) continue;
                       Params resolve;
                       resolve.text(pattern).integer(f.at_ms);
                       if (conn().exec(postgres_sql::k_findings_resolve, resolve).changed() > 0)
                         put(f);
                     }
                     if (!kept.empty())
                       conn().exec(postgres_sql::k_findings_trim,
                                   Params().text(pattern).integer(k_findings_kept - 1));
                     tx.commit();
                     return kept;
                   });
  }

  std::vector<core::ScheduleFinding> findings(const std::string& pattern, bool open_only,
                                              int64_t limit) override {
    return guarded("read the findings", [&] {
      std::vector<core::ScheduleFinding> found;
      Params p;
      p.text(pattern).text(open_only ? "true" : "false").integer(limit);
      Result r = conn().exec(postgres_sql::k_findings, p);
      for (int row = 0; row < r.rows(); ++row) {
        core::ScheduleFinding f;
        f.pattern = pattern;
        f.kind =
            core::finding_kind_from_string(r.bytes_at(row, 0)).value_or(core::FindingKind::missed);
        f.at_ms = r.int_at(row, 1);
        f.key = r.bytes_at(row, 2);
        f.attempt = r.int_at(row, 3);
        f.detail = r.bytes_at(row, 4);
        f.found_ms = r.int_at(row, 5);
        f.resolved = r.int_at(row, 6) != 0;
        found.push_back(std::move(f));
      }
      return found;
    });
  }

  // Times in the history are the server's (server_ms): read and given back in this host's.
  std::vector<core::AttemptFact> attempts_started(const core::KeyPattern& pattern, int64_t from_ms,
                                                  const std::string& from_key, int64_t from_number,
                                                  int64_t before_ms, int64_t limit) override {
    return guarded("read the history by start", [&] {
      std::vector<core::AttemptFact> found;
      int64_t after_ms = server_ms(from_ms);
      std::string after_key = from_key;
      int64_t after_number = from_number;
      const std::string like = postgres_sql::like_prefix(pattern.head());
      // A glob's non-matching keys are read and passed over, a page at a time.
      for (bool more = true; more && int64_t(found.size()) < limit;) {
        Params p;
        p.integer(after_ms).text(after_key).integer(after_number).integer(server_ms(before_ms));
        p.text(like).integer(limit);
        Result r = conn().exec(postgres_sql::k_attempts_started, p);
        for (int row = 0; row < r.rows(); ++row) {
          core::AttemptFact a;
          a.key = r.bytes_at(row, 0);
          a.number = r.int_at(row, 1);
          after_ms = r.int_at(row, 2);
          a.started_ms = after_ms - clock_offset_ms_;
          const int64_t ended = r.int_at(row, 3);
          a.ended_ms = ended == 0 ? 0 : ended - clock_offset_ms_;
          a.outcome = core::status_from_string(r.bytes_at(row, 4)).value_or(Status::failed);
          a.exit_code = r.optional_int_at(row, 5);
          a.http_status = r.optional_int_at(row, 6);
          after_key = a.key;
          after_number = a.number;
          if (pattern.matches(a.key) && int64_t(found.size()) < limit)
            found.push_back(std::move(a));
        }
        more = r.rows() == limit;
      }
      return found;
    });
  }

  HistoryPage history_page(const std::string& key, const HistoryQuery& query) override {
    return guarded("read the history", [&] {
      HistoryPage page;
      Result bounds = conn().exec(postgres_sql::k_history_bounds, Params().text(key));
      page.first_kept = bounds.int_at(0, 0);
      page.last = bounds.int_at(0, 1);
      if (page.last == 0) return page;
      std::vector<core::HistoryEntry>& entries = page.entries;
      Params p;
      p.text(key).integer(query.before > 0 ? query.before : INT64_MAX);
      p.integer_or_null(query.limit > 0 ? query.limit : 0);
      Result r = conn().exec(postgres_sql::k_history, p);
      for (int row = 0; row < r.rows(); ++row) {
        core::HistoryEntry e;
        e.number = r.int_at(row, 0);
        e.trigger = r.bytes_at(row, 1);
        e.host = r.bytes_at(row, 2);
        e.pid = r.int_at(row, 3);
        e.started_ms = r.int_at(row, 4);
        e.ended_ms = r.int_at(row, 5);
        e.outcome = core::status_from_string(r.bytes_at(row, 6)).value_or(Status::failed);
        e.reason = r.bytes_at(row, 7);
        e.exit_code = r.optional_int_at(row, 8);
        e.signal = r.optional_int_at(row, 9);
        e.http_status = r.optional_int_at(row, 10);
        e.note = r.bytes_at(row, 11);
        entries.push_back(std::move(e));
      }
      std::reverse(entries.begin(), entries.end());
      return page;
    });
  }

  // One statement for one key (the CLI's replay), else one transaction; never waited for on the
  // server's WAL flush (k_count_replays).
  void count_replays(std::span<const ReplayCount> counts) override {
    if (counts.empty()) return;
    auto params = [&](const ReplayCount& c) {
      return Params().text(c.key).integer(c.count).integer(server_ms(c.last_ms));
    };
    if (counts.size() == 1) {
      guarded(
          "count replays",
          [&] { return conn().exec(postgres_sql::k_count_replays, params(counts[0])).changed(); },
          OnLoss::fail);
      return;
    }
    guarded("count replays", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      for (const ReplayCount& c : counts) conn().exec(postgres_sql::k_count_replays, params(c));
      tx.commit();
      return 0;
    });
  }

  ListStop list(const ListQuery& query, const RecordVisitor& visit) override {
    if (!query.live && !query.include_expired) return std::nullopt;
    ListQuery q = query;
    q.now_ms = server_ms(q.now_ms);
    q.since_ms = server_ms(q.since_ms);
    q.until_ms = server_ms(q.until_ms);
    ListStop stop;
    guarded("list", [&] {
      stop = list_pages(q, visit);
      return 0;
    });
    return stop;
  }

  TurnResult take_turn(const TurnRequest& request, const OwnerGone& owner_gone) override {
    TurnRequest req = request;
    req.now_ms = server_ms(req.now_ms);
    const std::string token = new_attempt_token();
    return guarded("take a turn", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      Rows rows(*this);
      TurnResult result = turn_rows(rows, req, owner_gone, token);
      tx.commit();
      return result;
    });
  }

  bool withdraw(const std::string& key, const std::string& token) override {
    if (token.empty()) return false;
    return guarded(
        "withdraw",
        [&] {
          return conn().exec(postgres_sql::k_withdraw, Params().text(key).text(token)).changed() ==
                 1;
        },
        OnLoss::repeat);
  }

  std::vector<QueuedGroup> queued_groups(const std::string& prefix, int64_t limit) override {
    return guarded("list the queued groups", [&] {
      Result r = conn().exec(postgres_sql::k_queued_groups,
                             Params().text(postgres_sql::like_prefix(prefix)).integer(limit));
      std::vector<QueuedGroup> groups;
      for (int row = 0; row < r.rows(); ++row)
        groups.push_back(
            QueuedGroup{r.bytes_at(row, 0), r.int_at(row, 1), r.int_at(row, 2) - clock_offset_ms_});
      return groups;
    });
  }

  std::vector<Record> group_line(const std::string& group, int64_t limit) override {
    return guarded("read a serial group's line", [&] {
      std::vector<Record> line;
      Result runner = conn().exec(postgres_sql::select_group_record(true), Params().text(group));
      if (runner.rows() > 0) line.push_back(read_record(runner, 0));
      Result r =
          conn().exec(postgres_sql::select_group_line(), Params().text(group).integer(limit));
      for (int row = 0; row < r.rows(); ++row) line.push_back(read_record(r, row));
      return line;
    });
  }

  RemoveResult remove(const std::string& key, bool force, const OwnerGone& owner_gone) override {
    return guarded("remove", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      Rows rows(*this);
      const RemoveResult result = remove_rows(rows, key, force, owner_gone);
      if (result == RemoveResult::removed) tx.commit();
      return result;
    });
  }

  GcResult gc(const GcQuery& query) override {
    const int64_t now = server_ms(query.now_ms);
    Params p;
    p.integer(now).integer(now - query.older_than_ms).integer(k_gc_batch);
    const int64_t removed = guarded("gc", [&] {
      if (query.dry_run) {
        int64_t n = conn().exec(postgres_sql::gc_count(false), p).int_at(0, 0);
        if (query.older_than_ms > 0) n += conn().exec(postgres_sql::gc_count(true), p).int_at(0, 0);
        return n;
      }
      int64_t n = delete_batches(postgres_sql::gc_delete_batch(false), p);
      if (query.older_than_ms > 0) n += delete_batches(postgres_sql::gc_delete_batch(true), p);
      return n;
    });
    return {removed, 0};  // no WAL of idem's to empty
  }

  // Each kind of write idem makes, on no row, in a transaction rolled back: the server refuses
  // them as it would a claim when it accepts no writes (a standby, default_transaction_read_only:
  // 25006) or the role may not write the table (42501), and waits for a lock on the table as a
  // claim would (55P03 past the lock timeout). No row is written, locked or read.
  void check_writable() override {
    guarded("check", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      conn().exec_script(postgres_sql::k_write_probe);
      return 0;
    });
  }

  StoreHealth health() override {
    return guarded("check", [&] {
      StoreHealth h;
      Result r = conn().exec(postgres_sql::k_server_version);
      h.engine = "PostgreSQL " + r.bytes_at(0, 0);
      h.schema_version = schema_version(conn(), false);
      h.opened_schema_version = opened_version_;
      h.clock_offset_ms = clock_offset_ms_;
      return h;
    });
  }

  bool spans_hosts() const override { return true; }

 private:
  // One record of put_all, in its transaction.
  bool put_in(const Record& r, bool replace, const std::vector<core::HistoryEntry>& history) {
    const std::optional<std::string> response =
        r.response ? std::optional(core::encode_response(*r.response)) : std::nullopt;
    Params p;
    p.text(r.key).text(r.fingerprint).text(r.kind).text(std::string(core::to_string(r.status)));
    p.integer(r.attempt).text(r.owner.host).text(r.owner.boot_id).integer(r.owner.pid);
    p.integer(r.owner.start_ticks).integer(r.started_ms).integer_or_null(r.finished_ms);
    p.integer(r.ttl_ms).integer_or_null(r.expires_ms).optional_integer(r.exit_code);
    p.optional_integer(r.signal).integer(r.timed_out).bytes(r.output).integer(r.output_bytes);
    p.integer(r.output_truncated).text(r.request).text(r.note).optional_text(response);
    p.integer_or_null(r.process_group.pgid).integer_or_null(r.process_group.leader_start_ticks);
    p.integer_or_null(r.lease_expires_ms).integer(r.replay_failures);
    p.text(r.owner.machine_id).integer(r.owner.pid_ns);
    p.integer(r.replays).integer_or_null(r.last_replay_ms);
    p.optional_text(text_or_null(r.process_group.cgroup));
    p.optional_text(text_or_null(r.serial_group)).integer_or_null(r.queue_seq);
    p.optional_text(text_or_null(r.superseded_by));
    span_params(p, r.span);
    if (replace) conn().exec(postgres_sql::k_delete_record, Params().text(r.key));
    if (conn().exec(postgres_sql::k_put, p).rows() != 1) return false;
    if (history.empty() && core::has_run(r))
      conn().exec(postgres_sql::k_history_of_record, Params().text(r.key));
    for (const core::HistoryEntry& e : history) {
      Params h;
      h.text(r.key).integer(e.number).text(e.trigger).text(e.host).integer(e.pid);
      h.integer(e.started_ms).integer_or_null(e.ended_ms);
      h.text(std::string(core::to_string(e.outcome))).text(e.reason);
      h.optional_integer(e.exit_code).optional_integer(e.signal);
      h.optional_integer(e.http_status).text(e.note);
      conn().exec(postgres_sql::k_history_put, h);
    }
    return true;
  }

  Connection& conn() {
    if (!conn_) throw PgError{"", "not connected"};
    return *conn_;
  }

  // What a lost connection means for an operation. A transaction (BEGIN first) or a read whose
  // first statement found the connection gone sent nothing the server could have acted on, so it
  // is run again on a new connection (a server restarted while a pooled connection sat idle). A
  // single-statement write may have committed before the connection went: it is not repeated
  // (the error says so; the next operation reconnects), unless it is `repeat`able: doing it twice
  // ends as doing it once, and says so.
  enum class OnLoss { retry_if_nothing_sent, repeat, fail };

  // Runs `body`, retrying it when the server aborted it as a serialization failure or a
  // deadlock, or (see OnLoss) lost the connection before it began; any other PgError becomes a
  // StoreError naming the store and the operation.
  template <class Body>
  auto guarded(const char* what, const Body& body, OnLoss on_loss = OnLoss::retry_if_nothing_sent)
      -> decltype(body()) {
    std::minstd_rand jitter(std::random_device{}());
    bool reconnected = false;
    for (int tries = 1;; ++tries) {
      const int64_t sent_before = conn_ ? conn_->succeeded() : 0;
      try {
        if (conn_ && conn_->lost()) reconnect();
        return body();
      } catch (const PgError& e) {
        const bool lost_at_once =
            e.sqlstate.empty() && conn_ && conn_->lost() && conn_->succeeded() == sent_before;
        const bool lost = e.sqlstate.empty() && conn_ && conn_->lost();
        if (((lost_at_once && on_loss == OnLoss::retry_if_nothing_sent) ||
             (lost && on_loss == OnLoss::repeat)) &&
            !reconnected) {
          reconnected = true;
          continue;  // reconnects at the top
        }
        if (!e.retryable() || tries >= k_serialization_tries)
          throw StoreError("store " + where_.display() + ": " + what + ": " + e.message,
                           e.transient() ? StoreFailure::transient : StoreFailure::permanent);
        std::this_thread::sleep_for(std::chrono::milliseconds(1 + jitter() % (2 << tries)));
      }
    }
  }

  void reconnect() {
    conn_->reconnect();
    set_up_session();
  }

  // In one round trip: how long a row lock is waited for (the busy timeout; its error, 55P03,
  // is transient), and the server's clock minus this host's, measured once per connection (0
  // within tolerance). `with_version` (a new store): in the same round trip, the schema version,
  // returned when idem's tables hold one (else a second round trip sets the session up alone).
  std::optional<int> set_up_session(bool with_version = false) {
    const Params lock_timeout = Params().text(std::to_string(lock_timeout_ms_));
    int64_t before = host_wall_ms();
    std::optional<Result> r;
    if (with_version) {
      try {
        r.emplace(conn().exec(postgres_sql::k_set_up_session_and_version, lock_timeout));
        if (r->rows() == 0) r.reset();  // the version's row is missing: migrate() adds it
      } catch (const PgError& e) {
        // A new database (42P01), or a table this role may not read: the two steps below meet it
        // again and say so as before. A lost connection is not met by a second try here.
        if (e.sqlstate.empty()) throw;
      }
    }
    const bool versioned = r.has_value();
    if (!versioned) {
      before = host_wall_ms();
      r.emplace(conn().exec(postgres_sql::k_set_up_session, lock_timeout));
    }
    const int64_t after = host_wall_ms();
    const int64_t offset = r->int_at(0, 0) - (before + after) / 2;
    clock_offset_ms_ = std::llabs(offset) > k_clock_tolerance_ms ? offset : 0;
    if (!versioned) return std::nullopt;
    return int(r->int_at(0, 2));
  }
  int64_t server_ms(int64_t host_ms) const { return host_ms == 0 ? 0 : host_ms + clock_offset_ms_; }

  // After a claim lost its connection: whether its COMMIT had landed, read back by its token
  // (reconnecting) for up to the busy timeout while the server cannot be reached. Nothing when
  // it did not land: the caller claims again. Throws when it cannot be told.
  std::optional<ClaimResult> claim_landed(const ClaimRequest& req, const std::string& token,
                                          const StoreError& first) {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(lock_timeout_ms_);
    for (int64_t pause_ms = 50;; pause_ms = std::min<int64_t>(pause_ms * 2, 1000)) {
      try {
        return guarded("claim", [&]() -> std::optional<ClaimResult> {
          Result r = conn().exec(postgres_sql::k_claim_landed, Params().text(req.key).text(token));
          if (r.rows() == 0) return std::nullopt;
          const bool queued = r.bytes_at(0, 2) == "queued";
          return ClaimResult{queued ? core::Verdict::queued : core::Verdict::claim, r.int_at(0, 0),
                             token, r.int_at(0, 1), std::nullopt};
        });
      } catch (const StoreError& e) {
        if (!e.transient() || std::chrono::steady_clock::now() >= give_up)
          throw StoreError(std::string(first.what()) +
                               "; whether the claim was recorded is unknown (if it was, it shows "
                               "abandoned once its lease runs out)",
                           StoreFailure::transient);
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      }
    }
  }

  ClaimResult claim_once(const ClaimRequest& req, const OwnerGone& owner_gone,
                         const std::string& token) {
    Transaction tx(conn(), lock_timeout_ms_);
    Rows rows(*this);
    ClaimResult result = claim_rows(rows, req, owner_gone, token);
    tx.commit();
    return result;
  }

  // The claim flow's row operations (store/claim_flow.hpp), in the transaction of the operation
  // that makes them: a key's row is held by FOR UPDATE, a new key by its unique constraint.
  class Rows final : public RowOperations {
   public:
    explicit Rows(PostgresStore& store) : store_(store) {}

    std::optional<Record> lock(const std::string& key) override {
      return store_.select_record(key, false, true);
    }
    std::optional<Record> read_with_output(const std::string& key) override {
      return store_.select_record(key, true, false);
    }
    // With the attempt's history entry, which the flow asks for next (start_history, not
    // afresh: nothing was there): one round trip less per new key.
    bool insert(const ClaimRequest& req, int64_t attempt, const std::string& token) override {
      Params p = claim_params(req, attempt, token);
      p.text(trigger_of(req));
      group_params(p, req);
      p.optional_text(req.serial ? std::optional(req.serial->group) : std::nullopt);
      span_params(p, req.span);
      history_started_ = store_.conn().exec(postgres_sql::k_claim_insert, p).rows() == 1;
      return history_started_;
    }
    bool replace(const ClaimRequest& req, int64_t attempt, const std::string& token,
                 int64_t observed) override {
      Params update = claim_params(req, attempt, token);
      update.integer(observed);
      group_params(update, req);
      update.optional_text(req.serial ? std::optional(req.serial->group) : std::nullopt);
      span_params(update, req.span);
      return store_.conn().exec(postgres_sql::k_claim_replace, update).changed() == 1;
    }
    bool set_abandoned(const std::string& key, int64_t attempt, const char* note) override {
      return store_.set_abandoned(key, attempt, note);
    }
    bool delete_first_attempt(const std::string& key, const std::string& token) override {
      return store_.conn()
                 .exec(postgres_sql::k_release_first_attempt, Params().text(key).text(token))
                 .changed() == 1;
    }
    bool restore_previous_attempt(const std::string& key, const std::string& token) override {
      return store_.conn()
                 .exec(postgres_sql::k_restore_previous_attempt, Params().text(key).text(token))
                 .changed() == 1;
    }
    void delete_record(const std::string& key) override {
      store_.conn().exec(postgres_sql::k_delete_record, Params().text(key));
    }
    void start_history(const ClaimRequest& req, bool afresh) override {
      if (std::exchange(history_started_, false)) return;  // insert() wrote it
      if (afresh) store_.conn().exec(postgres_sql::k_history_clear, Params().text(req.key));
      Params p;
      p.text(req.key).text(trigger_of(req));
      p.text(req.owner.host).integer(req.owner.pid).integer(req.now_ms);
      store_.conn().exec(postgres_sql::k_history_start, p.integer(store_.keep_attempts_));
    }
    void abandon_history(const std::string& key, const char* reason) override {
      store_.conn().exec(postgres_sql::k_history_abandon, Params().text(key).text(reason));
    }
    void lock_group(const std::string& group) override {
      store_.conn().exec(postgres_sql::k_lock_group, Params().text(group));
    }
    std::optional<Record> group_runner(const std::string& group) override {
      return group_record(true, group);
    }
    std::optional<Record> group_head(const std::string& group) override {
      return group_record(false, group);
    }
    int64_t queue_length(const std::string& group) override {
      return store_.conn().exec(postgres_sql::k_queue_length, Params().text(group)).int_at(0, 0);
    }
    int64_t queued_in_group(const std::string& group, int64_t up_to) override {
      return store_.conn()
          .exec(postgres_sql::k_queued_in_group, Params().text(group).integer(up_to))
          .int_at(0, 0);
    }
    int64_t next_queue_seq(const std::string&) override {
      return store_.conn().exec(postgres_sql::k_next_queue_seq).int_at(0, 0);
    }
    bool enqueue(const ClaimRequest& req, int64_t attempt, const std::string& token, int64_t seq,
                 std::optional<int64_t> observed) override {
      Params p = claim_params(req, attempt, token);
      p.text(req.serial->group).integer(seq);
      span_params(p, req.span);
      if (observed) p.integer(*observed);
      const char* sql = observed ? postgres_sql::k_enqueue_replace : postgres_sql::k_enqueue_insert;
      return store_.conn().exec(sql, p).changed() == 1;
    }
    std::vector<std::string> supersede_pending(const std::string& group, const std::string& by,
                                               int64_t now_ms) override {
      Result r = store_.conn().exec(postgres_sql::k_supersede_pending,
                                    Params().text(group).text(by).integer(now_ms));
      std::vector<std::string> keys;
      for (int row = 0; row < r.rows(); ++row) keys.push_back(r.bytes_at(row, 0));
      return keys;
    }
    bool requeue(const std::string& key, int64_t attempt, int64_t seq) override {
      return store_.conn()
                 .exec(postgres_sql::k_requeue, Params().text(key).integer(attempt).integer(seq))
                 .changed() == 1;
    }
    // With its history entry (start_history then writes none): one round trip.
    bool start_queued(const ClaimRequest& started, int64_t attempt, const std::string& token,
                      int64_t lease_expires_ms) override {
      const core::Owner& owner = started.owner;
      Params p;
      p.text(started.key).integer(attempt).text(owner.host).text(owner.boot_id);
      p.integer(owner.pid).integer(owner.start_ticks).text(owner.machine_id);
      p.integer(owner.pid_ns).text(token).integer_or_null(lease_expires_ms);
      p.integer(started.now_ms).text(trigger_of(started)).integer(store_.keep_attempts_);
      history_started_ = store_.conn().exec(postgres_sql::k_start_queued, p).int_at(0, 0) == 1;
      return history_started_;
    }
    bool renew_queued(const std::string& key, const std::string& token,
                      int64_t lease_expires_ms) override {
      return store_.conn()
                 .exec(postgres_sql::k_renew_queued,
                       Params().text(key).text(token).integer_or_null(lease_expires_ms))
                 .changed() == 1;
    }
    bool inserts_first() const override { return true; }
    // Removed between the insert and the read: a serialization failure of our own making.
    [[noreturn]] void vanished(const std::string&) override {
      throw PgError{"40001", "the key was removed during its claim"};
    }
    std::string where() const override { return store_.where_.display(); }

   private:
    std::optional<Record> group_record(bool runner, const std::string& group) {
      Result r =
          store_.conn().exec(postgres_sql::select_group_record(runner), Params().text(group));
      if (r.rows() == 0) return std::nullopt;
      return read_record(r, 0);
    }
    static std::string trigger_of(const ClaimRequest& req) {
      return req.trigger.empty() ? std::string(core::trigger_of_kind(req.kind)) : req.trigger;
    }

    PostgresStore& store_;
    bool history_started_ = false;  // the last insert() wrote the attempt's history entry
  };

  static Params claim_params(const ClaimRequest& req, int64_t attempt, const std::string& token) {
    Params p;
    p.text(req.key).text(req.fingerprint).text(req.kind).integer(attempt);
    p.text(req.owner.host).text(req.owner.boot_id).integer(req.owner.pid);
    p.integer(req.owner.start_ticks).integer(req.now_ms).integer(req.ttl_ms).text(req.request);
    p.text(token).integer_or_null(lease_end(req.now_ms, req.lease_ms));
    p.integer(req.policy.replay_failures).text(req.owner.machine_id).integer(req.owner.pid_ns);
    return p;
  }

  // A span's ids (core::SpanIds), NULL where empty.
  static void span_params(Params& p, const core::SpanIds& span) {
    p.optional_text(text_or_null(span.trace_id)).optional_text(text_or_null(span.span_id));
    p.optional_text(text_or_null(span.parent_span_id));
  }

  // $18, $19, $20 of a claim: the process group it records, or NULLs.
  static void group_params(Params& p, const ClaimRequest& req) {
    p.integer_or_null(req.group ? req.group->pgid : 0);
    p.integer_or_null(req.group ? req.group->leader_start_ticks : 0);
    p.optional_text(req.group ? text_or_null(req.group->cgroup) : std::nullopt);
  }

  bool set_abandoned(const std::string& key, int64_t attempt, const char* note) {
    return conn()
               .exec(postgres_sql::k_set_abandoned, Params().text(key).integer(attempt).text(note))
               .changed() == 1;
  }

  std::optional<Record> select_record(const std::string& key, bool with_output, bool for_update) {
    Result r =
        conn().exec(postgres_sql::select_record(with_output, for_update), Params().text(key));
    if (r.rows() == 0) return std::nullopt;
    return read_record(r, 0);
  }

  // The listing's parameters $1 to $13 (postgres_sql::list_page): `last` the row its page
  // follows, `stop` where a bounded scan ends, `n` the page size or the count's bound.
  static Params listing_params(const ListQuery& q, const std::vector<std::string>& statuses,
                               const ListStop& last, int64_t n, const ListStop& stop) {
    Params p;
    p.integer(q.now_ms).text_array(statuses).text(postgres_sql::like_prefix(q.prefix));
    p.integer(last ? last->first : 0).text(last ? last->second : "").integer(n);
    p.text(q.kind).integer(q.since_ms).integer(q.until_ms).text(q.result);
    p.integer(stop ? stop->first : 0).text(stop ? stop->second : "").integer(n);
    return p;
  }

  // Pages of k_list_page rows, each its own query after the last row of the one before, so the
  // first page costs the same on any store size and nothing but a page is ever held. A bounded
  // scan (scan_limit) first finds the entry it ends at, on the index of the condition with the
  // fewest entries in the range, and the pages stop there.
  ListStop list_pages(const ListQuery& q, const RecordVisitor& visit) {
    std::vector<std::string> statuses;
    for (Status s : q.statuses) statuses.emplace_back(core::to_string(s));
    ListStop stop;
    if (q.scan_limit > 0) {
      const ListDrive drive =
          lists_unfinished_only(q) ? ListDrive::unfinished : pick_list_drive(q, [&](ListDrive d) {
            Result r = conn().exec(postgres_sql::list_count(q, d),
                                   listing_params(q, statuses, q.after, q.scan_limit, stop));
            return r.int_at(0, 0);
          });
      Result r = conn().exec(postgres_sql::list_stop(q, drive),
                             listing_params(q, statuses, q.after, q.scan_limit, stop));
      if (r.rows() > 0) stop.emplace(r.int_at(0, 0), r.bytes_at(0, 1));
    }
    int64_t left = q.limit > 0 ? q.limit : -1;
    ListStop last = q.after;
    while (left != 0) {
      const int64_t page = left > 0 ? std::min(left, k_list_page) : k_list_page;
      Result r = conn().exec(postgres_sql::list_page(q, last.has_value(), stop.has_value()),
                             listing_params(q, statuses, last, page, stop));
      for (int row = 0; row < r.rows(); ++row) {
        Record rec;
        if (q.keys_only)
          rec.key = r.bytes_at(row, 0);
        else
          rec = read_record(r, row);
        last.emplace(r.int_at(row, 9), r.bytes_at(row, 0));
        if (!visit(rec)) return stop;
      }
      if (r.rows() < page) return stop;
      if (left > 0) left -= page;
    }
    return stop;
  }

  // One committed batch after another, until a batch comes back short.
  int64_t delete_batches(const std::string& sql, const Params& p) {
    int64_t removed = 0;
    for (;;) {
      const int64_t n = conn().exec(sql, p).changed();
      removed += n;
      if (n < k_gc_batch) return removed;
    }
  }

  StoreLocation where_;
  std::optional<Connection> conn_;
  int64_t lock_timeout_ms_;
  int64_t keep_attempts_;  // StoreOptions::keep_attempts
  int64_t clock_offset_ms_ = 0;
  int opened_version_ = 0;  // the schema version found at connect (0: none yet)
};

}  // namespace

}  // namespace postgres

std::unique_ptr<Store> open_postgres_store(const StoreLocation& where,
                                           std::optional<int64_t> busy_timeout_ms,
                                           std::optional<int64_t> keep_attempts) {
  return std::make_unique<postgres::PostgresStore>(where, busy_timeout_ms, keep_attempts);
}

}  // namespace idem::store
