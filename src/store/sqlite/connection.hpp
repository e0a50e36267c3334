#pragma once
// The SQLite store's connection wrappers: prepared statements and their cache, the transactions
// (batched through the file's WriteQueue, or alone behind it), incremental blob I/O, and the
// "idem" VFS. With the other files of store/sqlite/, the only code that includes <sqlite3.h>.
#include <sqlite3.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.hpp"
#include "store/sqlite/write_queue.hpp"
#include "store/store.hpp"

namespace idem::store::sqlite {

// Busy and locked are the only SQLite failures a later try gets past by itself (the lock's holder
// lets go). Everything else — not a database, corruption, a read-only file, a full disk, a newer
// schema — needs someone to act, so it is permanent.
StoreFailure failure_of(int rc);

[[noreturn]] void throw_sqlite(int rc, const std::string& where, const std::string& message);

// Runs SQL of fixed text (several statements may follow each other) on `db`; throws StoreError
// naming `where`.
void exec(sqlite3* db, const char* sql, const std::string& where);

// The name of the "idem" VFS, registered at the first call (nullptr if it could not be).
const char* idem_vfs_name();

// Whether the truncation that ends a TRUNCATE checkpoint on `db` keeps the WAL's blocks (its
// header zeroed, the file cut back to one extent): for the checkpoints a writer makes as the WAL
// grows, whose next commit then writes over blocks the file has. Not for gc's last one, which
// leaves the file empty. Applies to the WAL `db` has open through the "idem" VFS.
void keep_wal_blocks(sqlite3* db, bool keep);

// A connection's prepared statements, kept by their SQL text between uses: the daemon runs the
// same few statements thousands of times a second on each connection, and preparing one (parsing,
// resolving names against the schema, planning) cost more than running it. Used by one thread at
// a time, as its connection is. A statement the schema changed under is prepared again by SQLite
// itself at its next step.
class StatementCache {
 public:
  StatementCache() = default;
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;
  ~StatementCache() { clear(); }

  // An idle prepared statement for `sql`, now in use, or nullptr.
  sqlite3_stmt* take(std::string_view sql) {
    for (Entry& e : entries_)
      if (!e.in_use && e.sql == sql) {
        e.in_use = true;
        return e.stmt;
      }
    return nullptr;
  }
  // Keeps a freshly prepared statement (in use until given back); false when the cache is full,
  // and the caller then finalizes it itself.
  bool keep(std::string_view sql, sqlite3_stmt* stmt) {
    if (entries_.size() >= k_max_statements) return false;
    entries_.push_back(Entry{std::string(sql), stmt, true});
    return true;
  }
  // Back from use: reset (no read or write lock held) and its bindings cleared.
  void give_back(sqlite3_stmt* stmt) {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    for (Entry& e : entries_)
      if (e.stmt == stmt) e.in_use = false;
  }
  // Before the connection closes.
  void clear() {
    for (Entry& e : entries_) sqlite3_finalize(e.stmt);
    entries_.clear();
  }

 private:
  // More than the store's statements; SQL built per call (listing's filters) fills it no further.
  static constexpr size_t k_max_statements = 48;
  struct Entry {
    std::string sql;
    sqlite3_stmt* stmt;
    bool in_use;
  };
  std::vector<Entry> entries_;
};

// A connection and its statement cache, as the store's methods and a batch's writes reach it.
// Converts to the raw handle for SQLite's own calls (sqlite3_changes and the like).
struct Connection {
  sqlite3* db;
  StatementCache* statements;
  operator sqlite3*() const { return db; }  // NOLINT(google-explicit-constructor)
};

class Statement {
 public:
  // Prepared for this one use, finalized at the end of it.
  Statement(sqlite3* db, const char* sql, const std::string& where) : db_(db), where_(where) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail();
  }
  // Taken from the connection's cache (prepared and kept there the first time), given back reset
  // at the end of the use. The same SQL used twice at once gets a second statement.
  Statement(Connection c, const char* sql, const std::string& where)
      : db_(c.db), where_(where), cache_(c.statements) {
    stmt_ = cache_->take(sql);
    if (stmt_ != nullptr) return;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK)
      fail();
    if (!cache_->keep(sql, stmt_)) cache_ = nullptr;
  }
  ~Statement() {
    if (cache_ != nullptr)
      cache_->give_back(stmt_);
    else
      sqlite3_finalize(stmt_);
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& text) {
    check(sqlite3_bind_text(stmt_, i, text.data(), int(text.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind_blob(int i, const std::string& bytes) {
    check(sqlite3_bind_blob64(stmt_, i, bytes.data(), bytes.size(), SQLITE_STATIC));
    return *this;
  }
  Statement& bind(int i, int64_t value) {
    check(sqlite3_bind_int64(stmt_, i, value));
    return *this;
  }
  Statement& bind_optional(int i, const std::optional<int>& value) {
    if (value) return bind(i, int64_t(*value));
    check(sqlite3_bind_null(stmt_, i));
    return *this;
  }
  Statement& bind_optional(int i, const std::optional<std::string>& text) {
    if (text) return bind(i, *text);
    check(sqlite3_bind_null(stmt_, i));
    return *this;
  }
  Statement& bind_null_if_zero(int i, int64_t value) {
    if (value != 0) return bind(i, value);
    check(sqlite3_bind_null(stmt_, i));
    return *this;
  }
  Statement& bind_null_if_empty(int i, const std::string& text) {
    if (!text.empty()) return bind(i, text);
    check(sqlite3_bind_null(stmt_, i));
    return *this;
  }

  // Returns true while rows come.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail();
  }
  void run() {
    while (step()) {
    }
  }
  int parameter_count() const { return sqlite3_bind_parameter_count(stmt_); }
  // Ready to run again with new bindings.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t int_at(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::optional<int> optional_int_at(int col) const {
    if (is_null(col)) return std::nullopt;
    return int(int_at(col));
  }
  std::string text_at(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), size_t(n));
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail();
  }
  [[noreturn]] void fail() {
    throw_sqlite(sqlite3_extended_errcode(db_), where_, sqlite3_errmsg(db_));
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  const std::string& where_;
  StatementCache* cache_ = nullptr;  // where stmt_ goes back to; null: finalized
};

// The connection a batch of writes runs on (WriteQueue): its leader's, or the long-lived
// process's dedicated writer. A batch that needs no sync (every write in it is an unsynced
// claim, ClaimRequest::sync, or writes nothing) commits with synchronous=NORMAL; the connection
// is FULL again after.
class BatchConnection {
 public:
  BatchConnection(Connection connection, const std::string& where)
      : db(connection), where_(where) {}

  void begin(bool sync) {
    // A transaction that a failed rollback left open (the daemon's writer connection lives as
    // long as the daemon) is given up, never joined.
    if (sqlite3_get_autocommit(db) == 0) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    if (!sync) sqlite3_exec(db, "PRAGMA synchronous = NORMAL", nullptr, nullptr, nullptr);
    unsynced_ = !sync;
    try {
      exec("BEGIN IMMEDIATE");
    } catch (...) {
      synced_again();
      throw;
    }
  }
  void savepoint() { exec("SAVEPOINT write"); }
  void release_savepoint() { exec("RELEASE write"); }
  // Fails (the transaction is lost) when the write's error made SQLite roll back everything.
  void rollback_to_savepoint() {
    exec("ROLLBACK TO write");
    exec("RELEASE write");
  }
  void commit() {
    exec("COMMIT");
    synced_again();
  }
  void rollback() noexcept {
    if (sqlite3_get_autocommit(db) == 0) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    synced_again();
  }

  const Connection db;

 private:
  void exec(const char* sql) { sqlite::exec(db, sql, where_); }
  void synced_again() {
    if (unsynced_) sqlite3_exec(db, "PRAGMA synchronous = FULL", nullptr, nullptr, nullptr);
    unsynced_ = false;
  }

  const std::string& where_;
  bool unsynced_ = false;
};

using Writers = WriteQueue<BatchConnection>;

// An output's blob, opened for incremental I/O: read or written where it lies, in place, with no
// copy of the whole value inside SQLite (a bound blob or a read column would be one more copy of
// up to the output cap). Valid within the transaction (or the running statement's read) that
// found its rowid, since a rowid of `outputs` can be reused once its row is deleted.
class OutputBlob {
 public:
  OutputBlob(sqlite3* db, int64_t rowid, bool write, const std::string& where)
      : db_(db), where_(where) {
    if (sqlite3_blob_open(db, "main", "outputs", "output", rowid, write ? 1 : 0, &blob_) !=
        SQLITE_OK)
      fail();
  }
  ~OutputBlob() { sqlite3_blob_close(blob_); }
  OutputBlob(const OutputBlob&) = delete;
  OutputBlob& operator=(const OutputBlob&) = delete;

  size_t size() const { return size_t(sqlite3_blob_bytes(blob_)); }
  // Piece by piece: sqlite3_blob_write takes an int, and SQLite writes each piece through its
  // page cache (spilled to the WAL as it fills), so nothing the size of the blob is allocated.
  void write(std::string_view bytes) {
    for (size_t at = 0; at < bytes.size(); at += k_piece) {
      const size_t n = std::min(k_piece, bytes.size() - at);
      if (sqlite3_blob_write(blob_, bytes.data() + at, int(n), int(at)) != SQLITE_OK) fail();
    }
  }
  std::string read() { return read(0, size()); }
  // The bytes from `offset` on, at most `length` of them (fewer at the end, none past it).
  std::string read(size_t offset, size_t length) {
    if (offset >= size()) return {};
    std::string bytes(std::min(length, size() - offset), '\0');
    for (size_t at = 0; at < bytes.size(); at += k_piece) {
      const size_t n = std::min(k_piece, bytes.size() - at);
      if (sqlite3_blob_read(blob_, bytes.data() + at, int(n), int(offset + at)) != SQLITE_OK)
        fail();
    }
    return bytes;
  }

 private:
  static constexpr size_t k_piece = 1 << 20;
  [[noreturn]] void fail() {
    throw_sqlite(sqlite3_extended_errcode(db_), where_, sqlite3_errmsg(db_));
  }

  sqlite3* db_;
  sqlite3_blob* blob_ = nullptr;
  const std::string& where_;
};

// The writers of one store file within this process queue here (one WriteQueue per file), so
// the daemon's threads commit their writes in batches, one commit and one sync for many writes
// (group commit), and a batch's leader takes SQLite's writer lock the moment the last batch
// released it instead of at a busy handler's poll. Writers in other processes still meet in the
// busy handler.
std::shared_ptr<Writers> writer_queue_of(const std::string& resolved_path);

// BEGIN IMMEDIATE ... COMMIT, rolled back unless commit() is called (an exception unwinding
// through it must leave the store as it was), for the writes that are not batched (migrations,
// gc's batches). Behind this process's other writers of the file first (Writers::transactions):
// each holds it for one transaction, whose BEGIN the busy timeout bounds.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& where, std::mutex& writers)
      : queued_(writers), db_(db), where_(where) {
    exec("BEGIN IMMEDIATE");
  }
  ~Transaction() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit() {
    exec("COMMIT");
    open_ = false;
    queued_.unlock();
  }

 private:
  void exec(const char* sql) {
    sqlite::exec(db_, sql, where_);
    open_ = true;
  }

  std::unique_lock<std::mutex> queued_;  // released last, after COMMIT or ROLLBACK
  sqlite3* db_;
  const std::string& where_;
  bool open_ = false;
};

// While it lives, a pragma of the connection has the value `set` gives it, and `restore` gives
// it back after. Each is a speed setting, so a failure is ignored. Made outside a transaction,
// before it begins and after it ended.
class ScopedPragma {
 public:
  ScopedPragma(sqlite3* db, const char* set, const char* restore) : db_(db), restore_(restore) {
    sqlite3_exec(db_, set, nullptr, nullptr, nullptr);
  }
  ~ScopedPragma() { sqlite3_exec(db_, restore_, nullptr, nullptr, nullptr); }
  ScopedPragma(const ScopedPragma&) = delete;
  ScopedPragma& operator=(const ScopedPragma&) = delete;

 private:
  sqlite3* db_;
  const char* restore_;
};

// The connection's commits are not synced (synchronous=NORMAL: the WAL stays consistent, the
// last commits can be lost to a power cut); FULL again after.
inline ScopedPragma unsynced_commits(sqlite3* db) {
  return {db, "PRAGMA synchronous = NORMAL", "PRAGMA synchronous = FULL"};
}

// The connection keeps its temporary files in memory: above all the statement journal of a
// statement that changes many rows inside a transaction, which SQLite otherwise spills to a file
// past 64 KiB (gc's batches: a few MiB at most, bounded by the batch).
inline ScopedPragma journal_in_memory(sqlite3* db) {
  return {db, "PRAGMA temp_store = MEMORY", "PRAGMA temp_store = DEFAULT"};
}

}  // namespace idem::store::sqlite
