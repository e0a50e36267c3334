// The PostgreSQL store. The only file that includes <libpq-fe.h>.
//
// One connection per Store object (the daemon's StoreProvider pools them). Every statement is
// parameterised ($n, types given, binary results); a user's key or output is never spliced into
// SQL. Durability: each write commits before it returns, so a claim or an outcome is as durable
// as the server's synchronous_commit makes a commit (README: "PostgreSQL").
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
// the server's clock (ARCHITECTURE.md, "Time on PostgreSQL").
#include <endian.h>
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/response.hpp"
#include "store/claim_flow.hpp"
#include "store/postgres_sql.hpp"
#include "store/store.hpp"

namespace idem::store {

namespace {

using core::Record;
using core::Status;

// Tries of a transaction that the server aborted as a serialization failure or a deadlock.
constexpr int k_serialization_tries = 8;
// Tries of a claim whose connection was lost, each after finding its earlier try did not land.
constexpr int k_claim_tries = 3;
// Host and server clocks closer than this are taken as equal (NTP keeps hosts well within it);
// further apart, the server's clock wins (see the file comment).
constexpr int64_t k_clock_tolerance_ms = 1000;
// gc deletes at most this many records per transaction (each its own commit).
constexpr int64_t k_gc_batch = 500;
// ls reads this many rows per page: nothing more is held in memory.
constexpr int64_t k_list_page = 500;
// How long opening the connection may take before the store counts as unreachable.
constexpr const char* k_connect_timeout_s = "10";

// Type OIDs of the parameters (pg_type.h), given so the server never has to guess one.
constexpr Oid k_int8 = 20;
constexpr Oid k_text = 25;
constexpr Oid k_bytea = 17;
constexpr Oid k_text_array = 1009;

// A server error with its SQLSTATE, before it becomes a StoreError.
struct PgError {
  std::string sqlstate;  // empty: no answer (the connection is gone)
  std::string message;
  bool retryable() const { return sqlstate == "40001" || sqlstate == "40P01"; }
  // A later try may get past it by itself: a lost connection, a lock wait that timed out, a
  // server shutting down or short of resources, a transaction retried too often.
  bool transient() const {
    if (sqlstate.empty() || retryable()) return true;
    const std::string cls = sqlstate.substr(0, 2);
    return cls == "08" || cls == "53" || cls == "57" || sqlstate == "55P03";
  }
};

// The parameters of one statement: text values (integers in decimal), NULLs, and bytea passed
// as binary without a copy (an output can be 900 MiB: it must outlive the statement's run).
class Params {
 public:
  Params& text(std::string value) { return add(k_text, std::move(value)); }
  Params& integer(int64_t value) { return add(k_int8, std::to_string(value)); }
  Params& optional_integer(const std::optional<int>& value) {
    return value ? integer(*value) : null(k_int8);
  }
  Params& optional_text(const std::optional<std::string>& value) {
    return value ? text(*value) : null(k_text);
  }
  Params& integer_or_null(int64_t value) { return value != 0 ? integer(value) : null(k_int8); }
  Params& text_array(const std::vector<std::string>& values) {
    std::string literal = "{";
    for (size_t i = 0; i < values.size(); ++i) literal += (i ? "," : "") + values[i];
    return add(k_text_array, literal + "}");  // status names: letters only, nothing to quote
  }
  Params& bytes(const std::string& value) {
    items_.push_back({k_bytea, {}, &value, false});
    return *this;
  }
  Params& null(Oid type) {
    items_.push_back({type, {}, nullptr, true});
    return *this;
  }

  int size() const { return int(items_.size()); }
  // Arrays for PQexecParams, valid while this object lives and is not changed.
  void arrays(std::vector<Oid>& types, std::vector<const char*>& values, std::vector<int>& lengths,
              std::vector<int>& formats) const {
    for (const Item& item : items_) {
      types.push_back(item.type);
      const std::string* value = item.binary != nullptr ? item.binary : &item.value;
      values.push_back(item.null ? nullptr : value->data());
      lengths.push_back(item.null ? 0 : int(value->size()));
      formats.push_back(item.binary != nullptr ? 1 : 0);
    }
  }

 private:
  struct Item {
    Oid type;
    std::string value;
    const std::string* binary;
    bool null;
  };
  Params& add(Oid type, std::string value) {
    items_.push_back({type, std::move(value), nullptr, false});
    return *this;
  }
  std::vector<Item> items_;
};

// A result in binary format: integers big-endian, booleans one byte, text and bytea raw.
class Result {
 public:
  explicit Result(PGresult* result) : result_(result) {}
  ~Result() { PQclear(result_); }
  Result(Result&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;

  int rows() const { return PQntuples(result_); }
  // Rows a write changed.
  int64_t changed() const { return std::atoll(PQcmdTuples(result_)); }
  bool is_null(int row, int col) const { return PQgetisnull(result_, row, col) != 0; }
  std::string bytes_at(int row, int col) const {
    return std::string(PQgetvalue(result_, row, col), size_t(PQgetlength(result_, row, col)));
  }
  int64_t int_at(int row, int col) const {
    if (is_null(row, col)) return 0;
    const char* p = PQgetvalue(result_, row, col);
    switch (PQgetlength(result_, row, col)) {
      case 8: {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return int64_t(be64toh(v));
      }
      case 4: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return int32_t(be32toh(v));
      }
      case 2: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return int16_t(be16toh(v));
      }
      case 1:
        return p[0] != 0;  // boolean
      default:
        return 0;
    }
  }
  std::optional<int> optional_int_at(int row, int col) const {
    if (is_null(row, col)) return std::nullopt;
    return int(int_at(row, col));
  }

 private:
  PGresult* result_;
};

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
  rec.process_group = core::ProcessGroup{r.int_at(row, 21), r.int_at(row, 22)};
  rec.attempt_token = r.bytes_at(row, 23);
  rec.lease_expires_ms = r.int_at(row, 24);
  rec.replay_failures = r.int_at(row, 25) != 0;
  rec.output = r.bytes_at(row, 28);
  return rec;
}

int64_t host_wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// The connection, its statements and transactions. Throws PgError.
class Connection {
 public:
  explicit Connection(const StoreLocation& where) {
    // expand_dbname: "dbname", last, holds the whole URL, so its own parameters win over ours.
    // A network cut shows as a failed call within about ten seconds (keepalives while waiting
    // for an answer, tcp_user_timeout while a request goes unacknowledged), not after the
    // kernel's fifteen minutes: an owner must learn in time that it cannot renew its lease.
    const char* keys[] = {
        "application_name", "connect_timeout",  "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "dbname",          nullptr};
    const char* values[] = {"idem",  k_connect_timeout_s,  "5",    "2", "3",
                            "10000", where.target.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
      std::string why = conn_ != nullptr ? PQerrorMessage(conn_) : "out of memory";
      PQfinish(conn_);
      conn_ = nullptr;
      throw PgError{"", first_line(why)};
    }
    // The server's notices ("relation already exists, skipping") are not the user's business.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  }
  ~Connection() { PQfinish(conn_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Result exec(const char* sql, const Params& params = Params()) {
    std::vector<Oid> types;
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    params.arrays(types, values, lengths, formats);
    return check(PQexecParams(conn_, sql, params.size(), types.data(), values.data(),
                              lengths.data(), formats.data(), 1));
  }
  Result exec(const std::string& sql, const Params& params = Params()) {
    return exec(sql.c_str(), params);
  }
  // Several statements of fixed text (the schema), no parameters.
  void exec_script(const char* sql) { check(PQexec(conn_, sql)); }

  // Statements that succeeded on this connection so far.
  int64_t succeeded() const { return succeeded_; }
  bool lost() const { return PQstatus(conn_) == CONNECTION_BAD; }
  // Connects again with the same parameters (a server restart, a dropped connection).
  void reconnect() {
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK)
      throw PgError{"", "reconnecting: " + first_line(PQerrorMessage(conn_))};
  }

 private:
  Result check(PGresult* raw) {
    Result result(raw);
    const ExecStatusType status = PQresultStatus(raw);
    if (raw != nullptr && (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)) {
      ++succeeded_;
      return result;
    }
    const char* state = raw != nullptr ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    const char* primary =
        raw != nullptr ? PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string message = primary != nullptr ? primary : first_line(PQerrorMessage(conn_));
    // A connection that broke has no SQLSTATE to give: it counts as lost.
    if (PQstatus(conn_) == CONNECTION_BAD) throw PgError{"", "connection lost: " + message};
    throw PgError{state != nullptr ? state : "", message};
  }

  static std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    return line.empty() ? "no answer from the server" : line;
  }

  PGconn* conn_ = nullptr;
  int64_t succeeded_ = 0;
};

// BEGIN ... COMMIT on a connection, rolled back unless commit() is called. Its lock_timeout is
// its own (SET LOCAL, in the BEGIN's round trip): behind a transaction pooler the session's
// setting belongs to whichever client set it last on that server connection.
class Transaction {
 public:
  Transaction(Connection& conn, int64_t lock_timeout_ms) : conn_(conn) {
    const std::string begin = "BEGIN; SET LOCAL lock_timeout = " + std::to_string(lock_timeout_ms);
    conn_.exec_script(begin.c_str());
  }
  ~Transaction() {
    if (!open_) return;
    try {
      conn_.exec("ROLLBACK");
    } catch (const PgError&) {
      // The connection is gone: the server rolls the transaction back itself.
    }
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    open_ = false;
    conn_.exec("COMMIT");
  }

 private:
  Connection& conn_;
  bool open_ = true;
};

class PostgresStore final : public Store {
 public:
  PostgresStore(const StoreLocation& where, std::optional<int64_t> busy_timeout_ms)
      : where_(where) {
    // PostgreSQL reads a lock_timeout of 0 as no limit; a busy timeout of 0 means not waiting.
    lock_timeout_ms_ = std::max<int64_t>(busy_timeout_in_force(busy_timeout_ms), 1);
    guarded("connect", [&] {
      conn_.emplace(where_);
      set_up_session();
      return 0;
    });
    guarded("create or migrate idem's tables", [&] {
      migrate();
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
    p.optional_text(response);
    return guarded(
        "finish",
        [&] {
          return conn()
                     .exec(R"sql(
        UPDATE idem_records SET status = $3, finished_at = $4, expires_at = $4 + ttl_ms,
               exit_code = $5, signal = $6, timed_out = $7 <> 0, output = $8,
               output_bytes = $9, output_truncated = $10 <> 0, note = $11, response = $12,
               attempt_token = '', lease_expires = NULL
        WHERE key = $1 AND attempt = $2
          AND ((status = 'running' AND (lease_expires IS NULL OR lease_expires > $4))
               OR (status = $3 AND finished_at = $4 AND attempt_token = ''))
      )sql",
                           p)
                     .changed() == 1;
        },
        OnLoss::repeat);
  }

  std::vector<bool> put_all(std::span<const Record> records, bool replace) override {
    return guarded("import", [&] {
      std::vector<bool> written;
      Transaction tx(conn(), lock_timeout_ms_);
      for (const Record& r : records) written.push_back(put_in(r, replace));
      tx.commit();
      return written;
    });
  }

  bool set_process_group(const std::string& key, int64_t attempt,
                         const core::ProcessGroup& group) override {
    Params p;
    p.text(key).integer(attempt).integer(group.pgid).integer(group.leader_start_ticks);
    return guarded(
        "record the process group",
        [&] {
          return conn()
                     .exec(R"sql(
        UPDATE idem_records SET pgid = $3, pgid_start = $4
        WHERE key = $1 AND attempt = $2 AND status = 'running')sql",
                           p)
                     .changed() == 1;
        },
        OnLoss::repeat);
  }

  bool mark_abandoned(const std::string& key, int64_t attempt) override {
    return guarded(
        "mark abandoned", [&] { return set_abandoned(key, attempt, k_owner_died); }, OnLoss::fail);
  }

  bool heartbeat(const std::string& key, const std::string& attempt_token, int64_t lease_ms,
                 int64_t now_ms) override {
    if (attempt_token.empty()) return false;
    const int64_t now = server_ms(now_ms);
    Params p;
    p.text(key).text(attempt_token).integer(now).integer_or_null(lease_end(now, lease_ms));
    return guarded(
        "heartbeat",
        [&] {
          return conn()
                     .exec(R"sql(
        UPDATE idem_records SET lease_expires = $4
        WHERE key = $1 AND attempt_token = $2 AND status = 'running'
          AND (lease_expires IS NULL OR lease_expires > $3))sql",
                           p)
                     .changed() == 1;
        },
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

  void list(const ListQuery& query, const RecordVisitor& visit) override {
    if (!query.live && !query.include_expired) return;
    ListQuery q = query;
    q.now_ms = server_ms(q.now_ms);
    guarded("list", [&] { return list_pages(q, visit); });
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

  int64_t gc(const GcQuery& query) override {
    const int64_t now = server_ms(query.now_ms);
    Params p;
    p.integer(now).integer(now - query.older_than_ms).integer(k_gc_batch);
    return guarded("gc", [&] {
      if (query.dry_run) {
        int64_t n = conn().exec(postgres_sql::gc_count(false), p).int_at(0, 0);
        if (query.older_than_ms > 0) n += conn().exec(postgres_sql::gc_count(true), p).int_at(0, 0);
        return n;
      }
      int64_t removed = delete_batches(postgres_sql::gc_delete_batch(false), p);
      if (query.older_than_ms > 0)
        removed += delete_batches(postgres_sql::gc_delete_batch(true), p);
      return removed;
    });
  }

  // Each kind of write idem makes, on no row, in a transaction rolled back: the server refuses
  // them as it would a claim when it accepts no writes (a standby, default_transaction_read_only:
  // 25006) or the role may not write the table (42501), and waits for a lock on the table as a
  // claim would (55P03 past the lock timeout). No row is written, locked or read.
  void check_writable() override {
    guarded("check", [&] {
      Transaction tx(conn(), lock_timeout_ms_);
      conn().exec_script(
          "INSERT INTO idem_records SELECT * FROM idem_records WHERE false; "
          "UPDATE idem_records SET note = note WHERE false; "
          "DELETE FROM idem_records WHERE false");
      return 0;
    });
  }

  StoreHealth health() override {
    return guarded("check", [&] {
      StoreHealth h;
      Result r = conn().exec("SELECT current_setting('server_version')");
      h.engine = "PostgreSQL " + r.bytes_at(0, 0);
      h.schema_version = schema_version(false);
      h.opened_schema_version = opened_version_;
      h.clock_offset_ms = clock_offset_ms_;
      return h;
    });
  }

  bool spans_hosts() const override { return true; }

 private:
  // One record of put_all, in its transaction.
  bool put_in(const Record& r, bool replace) {
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
    if (replace) conn().exec("DELETE FROM idem_records WHERE key = $1", Params().text(r.key));
    return conn()
               .exec(R"sql(
      INSERT INTO idem_records (key, fingerprint, kind, status, attempt, owner_host,
                                owner_boot_id, owner_pid, owner_start, started_at, finished_at,
                                ttl_ms, expires_at, exit_code, signal, timed_out, output,
                                output_bytes, output_truncated, request, note, response, pgid,
                                pgid_start, attempt_token, lease_expires, replay_failures,
                                owner_machine_id, owner_pid_ns)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 <> 0, $17, $18, $19 <> 0, $20, $21, $22, $23,
              $24, '', $25, $26 <> 0, $27, $28)
      ON CONFLICT (key) DO NOTHING RETURNING attempt)sql",
                     p)
               .rows() == 1;
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
  // within tolerance).
  void set_up_session() {
    const int64_t before = host_wall_ms();
    Result r = conn().exec(
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint, "
        "set_config('lock_timeout', $1, false)",
        Params().text(std::to_string(lock_timeout_ms_)));
    const int64_t after = host_wall_ms();
    const int64_t offset = r.int_at(0, 0) - (before + after) / 2;
    clock_offset_ms_ = std::llabs(offset) > k_clock_tolerance_ms ? offset : 0;
  }
  int64_t server_ms(int64_t host_ms) const { return host_ms == 0 ? 0 : host_ms + clock_offset_ms_; }

  // Creates or migrates the schema. The fast path is one read; otherwise one transaction that
  // creates the version table if absent and locks its row, so concurrent first opens from any
  // number of processes migrate once (the losers of a race to create the table retry).
  void migrate() {
    try {
      opened_version_ = schema_version(false);
      if (opened_version_ == postgres_sql::k_schema_version) return;
    } catch (const PgError& e) {
      if (e.sqlstate != "42P01") throw;  // undefined_table: a new database
    }
    for (int tries = 1;; ++tries) {
      try {
        migrate_locked();
        return;
      } catch (const PgError& e) {
        // 23505/42P07/42710: another process created the table at the same moment (42710 is
        // "type ... already exists": its row type was committed first); it exists now.
        const bool raced = e.sqlstate == "23505" || e.sqlstate == "42P07" || e.sqlstate == "42710";
        if (!(raced || e.retryable()) || tries == k_serialization_tries) throw;
      }
    }
  }

  void migrate_locked() {
    Transaction tx(conn(), lock_timeout_ms_);
    conn().exec(postgres_sql::k_create_schema_table);
    conn().exec("INSERT INTO idem_schema (id, version) VALUES (1, 0) ON CONFLICT DO NOTHING");
    int version = schema_version(true);
    for (; version < postgres_sql::k_schema_version; ++version)
      conn().exec_script(postgres_sql::k_migrations[version]);
    conn().exec("UPDATE idem_schema SET version = $1 WHERE id = 1",
                Params().integer(postgres_sql::k_schema_version));
    tx.commit();
  }

  int schema_version(bool lock) {
    Result r = conn().exec(lock ? "SELECT version FROM idem_schema WHERE id = 1 FOR UPDATE"
                                : "SELECT version FROM idem_schema WHERE id = 1");
    const int version = r.rows() == 0 ? 0 : int(r.int_at(0, 0));
    if (version > postgres_sql::k_schema_version)
      throw PgError{"XX000", "schema version " + std::to_string(version) +
                                 " is newer than this idem understands (" +
                                 std::to_string(postgres_sql::k_schema_version) +
                                 "); upgrade idem"};
    return version;
  }

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
          Result r = conn().exec(
              "SELECT attempt, lease_expires FROM idem_records WHERE key = $1 AND "
              "attempt_token = $2 AND status = 'running'",
              Params().text(req.key).text(token));
          if (r.rows() == 0) return std::nullopt;
          return ClaimResult{core::Verdict::claim, r.int_at(0, 0), token, r.int_at(0, 1),
                             std::nullopt};
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
    bool insert(const ClaimRequest& req, int64_t attempt, const std::string& token) override {
      return store_.conn()
                 .exec(R"sql(
          INSERT INTO idem_records (key, fingerprint, kind, status, attempt, owner_host,
                                    owner_boot_id, owner_pid, owner_start, started_at, ttl_ms,
                                    request, attempt_token, lease_expires, replay_failures,
                                    owner_machine_id, owner_pid_ns)
          VALUES ($1, $2, $3, 'running', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 <> 0,
                  $15, $16)
          ON CONFLICT (key) DO NOTHING RETURNING attempt)sql",
                       claim_params(req, attempt, token))
                 .rows() == 1;
    }
    bool replace(const ClaimRequest& req, int64_t attempt, const std::string& token,
                 int64_t observed) override {
      Params update = claim_params(req, attempt, token);
      update.integer(observed);
      return store_.conn()
                 .exec(R"sql(
          UPDATE idem_records SET fingerprint = $2, kind = $3, status = 'running', attempt = $4,
                 owner_host = $5, owner_boot_id = $6, owner_pid = $7, owner_start = $8,
                 started_at = $9, ttl_ms = $10, request = $11, finished_at = NULL,
                 expires_at = NULL, exit_code = NULL, signal = NULL, timed_out = false,
                 output = NULL, output_bytes = 0, output_truncated = false, note = '',
                 response = NULL, pgid = NULL, pgid_start = NULL, attempt_token = $12,
                 lease_expires = $13, replay_failures = $14 <> 0, owner_machine_id = $15,
                 owner_pid_ns = $16
          WHERE key = $1 AND attempt = $17)sql",
                       update)
                 .changed() == 1;
    }
    bool set_abandoned(const std::string& key, int64_t attempt, const char* note) override {
      return store_.set_abandoned(key, attempt, note);
    }
    bool delete_first_attempt(const std::string& key, const std::string& token) override {
      return store_.conn()
                 .exec(R"sql(
        DELETE FROM idem_records
        WHERE key = $1 AND attempt_token = $2 AND status = 'running' AND attempt = 1)sql",
                       Params().text(key).text(token))
                 .changed() == 1;
    }
    bool restore_previous_attempt(const std::string& key, const std::string& token) override {
      return store_.conn()
                 .exec(R"sql(
          UPDATE idem_records SET attempt = attempt - 1, status = 'abandoned',
                 note = 'attempt ' || attempt || ' was released', attempt_token = '',
                 lease_expires = NULL
          WHERE key = $1 AND attempt_token = $2 AND status = 'running' AND attempt > 1)sql",
                       Params().text(key).text(token))
                 .changed() == 1;
    }
    void delete_record(const std::string& key) override {
      store_.conn().exec("DELETE FROM idem_records WHERE key = $1", Params().text(key));
    }
    bool inserts_first() const override { return true; }
    // Removed between the insert and the read: a serialization failure of our own making.
    [[noreturn]] void vanished(const std::string&) override {
      throw PgError{"40001", "the key was removed during its claim"};
    }
    std::string where() const override { return store_.where_.display(); }

   private:
    PostgresStore& store_;
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

  bool set_abandoned(const std::string& key, int64_t attempt, const char* note) {
    return conn()
               .exec(R"sql(
      UPDATE idem_records SET status = 'abandoned', note = $3, attempt_token = '',
             lease_expires = NULL
      WHERE key = $1 AND attempt = $2 AND status = 'running')sql",
                     Params().text(key).integer(attempt).text(note))
               .changed() == 1;
  }

  std::optional<Record> select_record(const std::string& key, bool with_output, bool for_update) {
    std::string sql = std::string("SELECT ") + postgres_sql::k_record_columns +
                      (with_output ? ", output" : ", NULL::bytea") +
                      " FROM idem_records WHERE key = $1" + (for_update ? " FOR UPDATE" : "");
    Result r = conn().exec(sql, Params().text(key));
    if (r.rows() == 0) return std::nullopt;
    return read_record(r, 0);
  }

  // Pages of k_list_page rows, each its own query after the last row of the one before, so the
  // first page costs the same on any store size and nothing but a page is ever held.
  int list_pages(const ListQuery& q, const RecordVisitor& visit) {
    std::vector<std::string> statuses;
    for (Status s : q.statuses) statuses.emplace_back(core::to_string(s));
    int64_t left = q.limit > 0 ? q.limit : -1;
    std::optional<std::pair<int64_t, std::string>> last;
    while (left != 0) {
      const int64_t page = left > 0 ? std::min(left, k_list_page) : k_list_page;
      Params p;
      p.integer(q.now_ms).text_array(statuses).text(postgres_sql::like_prefix(q.prefix));
      p.integer(last ? last->first : 0).text(last ? last->second : "").integer(page);
      Result r = conn().exec(postgres_sql::list_page(q, last.has_value()), p);
      for (int row = 0; row < r.rows(); ++row) {
        Record rec;
        if (q.keys_only)
          rec.key = r.bytes_at(row, 0);
        else
          rec = read_record(r, row);
        last.emplace(r.int_at(row, 9), r.bytes_at(row, 0));
        if (!visit(rec)) return 0;
      }
      if (r.rows() < page) return 0;
      if (left > 0) left -= page;
    }
    return 0;
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
  int64_t clock_offset_ms_ = 0;
  int opened_version_ = 0;  // the schema version found at connect (0: none yet)
};

}  // namespace

namespace postgres_sql {

std::string like_prefix(const std::string& prefix) {
  std::string pattern;
  for (char c : prefix) {
    if (c == '\\' || c == '%' || c == '_') pattern += '\\';
    pattern += c;
  }
  return pattern + '%';
}

bool lists_unfinished_only(const ListQuery& q) {
  if (!q.live || q.include_expired || q.statuses.empty()) return false;
  return std::all_of(q.statuses.begin(), q.statuses.end(), [](core::Status s) {
    return s == core::Status::running || s == core::Status::abandoned;
  });
}

std::string list_page(const ListQuery& q, bool after) {
  std::string sql = std::string("SELECT ") +
                    (q.keys_only ? "key, NULL, NULL, NULL, NULL, NULL, "
                                   "NULL, NULL, NULL, started_at"
                                 : k_list_columns) +
                    " FROM idem_records WHERE true";
  // The partial index's own condition, spelled out: the planner then knows the index holds every
  // row wanted without proving it from `status = ANY ($2)`, whose value a generic plan lacks.
  if (lists_unfinished_only(q)) sql += " AND status IN ('running', 'abandoned')";
  if (!q.prefix.empty()) sql += " AND key LIKE $3";
  if (after) sql += " AND (started_at < $4 OR (started_at = $4 AND key > $5))";
  std::string live = "(expires_at IS NULL OR expires_at > $1)";
  if (!q.statuses.empty()) live += " AND status = ANY ($2)";
  const std::string expired = "expires_at <= $1";
  if (q.live && q.include_expired && !q.statuses.empty())
    sql += " AND ((" + live + ") OR " + expired + ")";
  else if (q.live && !q.include_expired)
    sql += " AND " + live;
  else if (!q.live)
    sql += " AND " + expired;
  return sql + " ORDER BY started_at DESC, key LIMIT $6";
}

std::string gc_count(bool ended) {
  return ended ? "SELECT count(*) FROM idem_records WHERE status <> 'running'"
                 " AND coalesce(finished_at, started_at) <= $2"
                 " AND (expires_at IS NULL OR expires_at > $1)"
               : "SELECT count(*) FROM idem_records WHERE status <> 'running'"
                 " AND expires_at <= $1";
}

// The rows are picked through the partial index and locked with SKIP LOCKED: a row a claim holds
// (a retry of an expired key) is left for the next gc rather than waited for.
std::string gc_delete_batch(bool ended) {
  const std::string picked = ended
                                 ? "status <> 'running' AND coalesce(finished_at, started_at) <= $2"
                                   " AND (expires_at IS NULL OR expires_at > $1)"
                                 : "status <> 'running' AND expires_at <= $1";
  return "DELETE FROM idem_records WHERE key IN (SELECT key FROM idem_records WHERE " + picked +
         " LIMIT $3 FOR UPDATE SKIP LOCKED) AND status <> 'running'";
}

}  // namespace postgres_sql

std::unique_ptr<Store> open_postgres_store(const StoreLocation& where,
                                           std::optional<int64_t> busy_timeout_ms) {
  return std::make_unique<PostgresStore>(where, busy_timeout_ms);
}

}  // namespace idem::store
