// The SQLite store. The only file that includes <sqlite3.h>.
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
// (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE), and the only checkpoints are TRUNCATE checkpoints, which
// take the writer lock for their whole duration: after a finish once the WAL has grown past
// k_checkpoint_wal_bytes, and at the end of `idem gc`.
//
// Syncs: a first run costs two, the claim's and the outcome's. The process group in between is
// written unsynced (set_process_group says why), and the store is opened through a thin VFS
// ("idem", over SQLite's own "unix") that opens an existing WAL without the create flag: SQLite
// syncs the folder at the first commit of every connection that opened its WAL with that flag,
// which is needed once, by the process that creates the WAL file, not by every run after it.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "core/response.hpp"
#include "store/claim_flow.hpp"
#include "store/sqlite_sql.hpp"
#include "store/store.hpp"
#include "store/write_queue.hpp"
#include "util/clock.hpp"
#include "util/crash_point.hpp"

namespace idem::store {

namespace {

using core::Record;
using core::Status;

constexpr int k_schema_version = 9;
// PRAGMA application_id of an idem store: "IDEM". Every migration transaction sets it, so stores
// made or migrated since carry it; a store made before carries 0, like any SQLite file that never
// set one. A file with another id belongs to another program and is refused (SPEC §2).
constexpr int32_t k_application_id = 0x4944454d;
// idem's own tables; any other (SQLite's internal sqlite_% aside) makes a file someone else's.
constexpr const char* k_own_tables[] = {"records", "outputs"};
// Every process that opens the store alone (the usual case for `idem run`) rebuilds the WAL's
// index by reading the whole WAL, so it is kept small: a run adds about 20 KiB.
constexpr int64_t k_checkpoint_wal_bytes = 256 * 1024;
// The blob of doctor's trial write (check_writable): with its table's page and page 1, four
// WAL frames (16 KiB), about what a run's claim writes.
constexpr int64_t k_write_probe_bytes = 12 * 1024;
// gc deletes at most this many records per write transaction: a few milliseconds of writer lock.
constexpr int k_gc_batch = 500;
// Between two gc batches the writer lock is left free this long. A waiting writer polls the lock
// every k_busy_poll_ms for the first k_busy_fast_ms of its wait (see on_busy), so a pause at least
// that long lets the writers that queued during a batch in before the next one: gc gives way
// instead of starving them. After k_busy_fast_ms a writer is in a crowd of writers, not behind
// gc, and polls every k_busy_slow_poll_ms: a crowd polling every few ms costs the CPU that the
// lock's holder needs.
constexpr auto k_gc_yield = std::chrono::milliseconds(4);

// The "idem" VFS: SQLite's "unix" VFS, except that a WAL that exists already is opened without
// SQLITE_OPEN_CREATE. The unix VFS marks a WAL opened with the create flag for a folder sync at
// its first sync, whether or not the file was new; the folder entry of a WAL that exists was made
// durable by the process that created it. An absent WAL is created, and its folder synced, as
// usual.
int open_existing_wal(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags,
                      int* out_flags) {
  auto* unix_vfs = static_cast<sqlite3_vfs*>(vfs->pAppData);
  if (name != nullptr && (flags & SQLITE_OPEN_WAL) != 0 && (flags & SQLITE_OPEN_CREATE) != 0 &&
      ::access(name, F_OK) == 0) {
    int rc = unix_vfs->xOpen(unix_vfs, name, file, flags & ~SQLITE_OPEN_CREATE, out_flags);
    if (rc == SQLITE_OK) return rc;  // else it went away meanwhile: create it
  }
  return unix_vfs->xOpen(unix_vfs, name, file, flags, out_flags);
}

const char* idem_vfs_name() {
  static const char* name = [] {
    static sqlite3_vfs vfs{};
    // SQLite's allocation statistics take one process-wide mutex around every allocation; idem
    // reads none of them, and the daemon's threads queued on it. Only possible before SQLite
    // initialises (sqlite3_vfs_find does), refused and harmless after.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == nullptr) return static_cast<const char*>(nullptr);
    vfs = *unix_vfs;
    vfs.zName = "idem";
    vfs.pNext = nullptr;
    vfs.pAppData = unix_vfs;
    vfs.xOpen = open_existing_wal;
    return sqlite3_vfs_register(&vfs, 0) == SQLITE_OK ? vfs.zName : nullptr;
  }();
  return name;
}

constexpr int64_t k_busy_poll_ms = 4;
constexpr int64_t k_busy_fast_ms = 100;
constexpr int64_t k_busy_slow_poll_ms = 20;
// `ls --prefix`: a prefix matching fewer records than this is read through the key index and
// sorted (at most this many rows); a commoner one walks the newest-first index instead.
constexpr int64_t k_prefix_sort_max = 10000;

// Migrations from version i to i+1, applied in order inside one BEGIN IMMEDIATE transaction.
// Never edit a published step: add a new one and bump k_schema_version.
constexpr const char* k_migrations[] = {
    // 0 -> 1: the records table.
    R"sql(
    CREATE TABLE records (
      key              TEXT    NOT NULL PRIMARY KEY,
      fingerprint      TEXT    NOT NULL,
      kind             TEXT    NOT NULL,
      status           TEXT    NOT NULL
                       CHECK (status IN ('running', 'succeeded', 'failed', 'abandoned')),
      attempt          INTEGER NOT NULL,
      owner_host       TEXT    NOT NULL,
      owner_boot_id    TEXT    NOT NULL,
      owner_pid        INTEGER NOT NULL,
      owner_start      INTEGER NOT NULL,
      started_at       INTEGER NOT NULL,
      finished_at      INTEGER,
      ttl_ms           INTEGER NOT NULL,
      expires_at       INTEGER,
      exit_code        INTEGER,
      signal           INTEGER,
      timed_out        INTEGER NOT NULL DEFAULT 0,
      output           BLOB,
      output_bytes     INTEGER NOT NULL DEFAULT 0,
      output_truncated INTEGER NOT NULL DEFAULT 0,
      request          TEXT    NOT NULL DEFAULT '{}',
      note             TEXT    NOT NULL DEFAULT ''
    );
    CREATE INDEX records_by_expiry ON records (expires_at) WHERE expires_at IS NOT NULL;
    CREATE INDEX records_by_start ON records (started_at);
    )sql",
    // 1 -> 2: what an HTTP delivery answered (idem serve), so a duplicate gets the same answer.
    R"sql(
    ALTER TABLE records ADD COLUMN http_status INTEGER;
    ALTER TABLE records ADD COLUMN content_type TEXT NOT NULL DEFAULT '';
    )sql",
    // 2 -> 3: indexes gc and ls walk instead of the table. gc takes expired records from
    // records_expiring and, for --older-than, records whose attempt ended (or, abandoned, began)
    // before the cutoff from records_by_end, which also holds expires_at so a dry run counts from
    // the index alone; both leave running records out by construction. ls reads newest first
    // from records_by_recent, whose order is exactly ls's (started_at DESC, key), so no sort.
    // They replace the version 1 indexes, which no query can use that way.
    R"sql(
    DROP INDEX IF EXISTS records_by_expiry;
    DROP INDEX IF EXISTS records_by_start;
    CREATE INDEX records_expiring ON records (expires_at) WHERE status <> 'running';
    CREATE INDEX records_by_end ON records (coalesce(finished_at, started_at), expires_at)
      WHERE status <> 'running';
    CREATE INDEX records_by_recent ON records (started_at DESC, key);
    -- The process group of the attempt's command and its leader's start time, so a retry of
    -- an abandoned attempt can tell whether processes of it are still alive.
    ALTER TABLE records ADD COLUMN pgid INTEGER;
    ALTER TABLE records ADD COLUMN pgid_start INTEGER;
    )sql",
    // 3 -> 4: the attempt's token (a capability: heartbeat and release need it; '' for records
    // claimed before, which nothing can match) and its lease (Unix ms; NULL: no lease).
    R"sql(
    ALTER TABLE records ADD COLUMN attempt_token TEXT NOT NULL DEFAULT '';
    ALTER TABLE records ADD COLUMN lease_expires INTEGER;
    )sql",
    // 4 -> 5: the stored answer (core::Response's stored form, JSON; NULL: none) replaces the
    // HTTP status and content type of version 2, so the record keeps no HTTP of its own: a
    // delivery's answer becomes that status with its Content-Type header (none when it had no
    // content type). json_object writes the same compact form encode_response does. DROP
    // COLUMN rewrites the table once (SQLite 3.35+); neither column is in an index, so it is
    // allowed.
    R"sql(
    ALTER TABLE records ADD COLUMN response TEXT;
    UPDATE records
      SET response = json_object('status', http_status, 'headers',
                                 CASE WHEN content_type = '' THEN json_array()
                                      ELSE json_array(json_array('Content-Type', content_type))
                                 END)
      WHERE http_status IS NOT NULL;
    ALTER TABLE records DROP COLUMN http_status;
    ALTER TABLE records DROP COLUMN content_type;
    )sql",
    // 5 -> 6: outputs move to a table of their own, keyed by the attempt that wrote them, so that
    // finish writes one by incremental blob I/O from the caller's buffer (SQLite would otherwise
    // build the whole row in memory: a second copy of up to the output cap), which SQLite refuses
    // for a column of a table with an expression index (records_by_end). Records stay small, so
    // a claim, ls or gc reading one never walks an output's overflow pages. The triggers keep
    // an output no longer than its record's attempt: deleting a record (rm, gc, release)
    // deletes it, and so does a claim that starts a new attempt (the record becomes running;
    // an expired record's new attempt may have the number of the one it replaces).
    R"sql(
    CREATE TABLE outputs (
      key     TEXT    NOT NULL,
      attempt INTEGER NOT NULL,
      output  BLOB    NOT NULL,
      PRIMARY KEY (key, attempt)
    );
    INSERT INTO outputs (key, attempt, output)
      SELECT key, attempt, output FROM records WHERE length(output) > 0;
    ALTER TABLE records DROP COLUMN output;
    CREATE TRIGGER outputs_of_deleted AFTER DELETE ON records
      BEGIN DELETE FROM outputs WHERE key = old.key; END;
    CREATE TRIGGER outputs_of_replaced AFTER UPDATE OF status ON records
      WHEN new.status = 'running' BEGIN DELETE FROM outputs WHERE key = old.key; END;
    )sql",
    // 6 -> 7: the replay policy the attempt was claimed under (1: --replay-failures, its failure
    // is final for every later attempt). Records from before were claimed without a recorded
    // policy: 0, a failure runs again, as every later attempt without the flag did then.
    R"sql(
    ALTER TABLE records ADD COLUMN replay_failures INTEGER NOT NULL DEFAULT 0;
    )sql",
    // 7 -> 8: the unfinished records (running and abandoned) in ls's order, for `ls --status
    // running` and `idem doctor`, which otherwise walk records_by_recent through every finished
    // record. Partial, so the finished records, nearly all of them, are never in it: a claim adds
    // its key and a finish takes it out again, an index of a few pages.
    R"sql(
    CREATE INDEX records_unfinished ON records (started_at DESC, key)
      WHERE status IN ('running', 'abandoned');
    )sql",
    // 8 -> 9: the owner's machine id and pid namespace (core::Owner), so that a twin host of the
    // same name, or another container on the same kernel, never judges an owner by a pid it
    // cannot see. Records from before get '' and 0: their pid is never judged (proc::owner_gone).
    R"sql(
    ALTER TABLE records ADD COLUMN owner_machine_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE records ADD COLUMN owner_pid_ns INTEGER NOT NULL DEFAULT 0;
    )sql",
};
static_assert(std::size(k_migrations) == k_schema_version);

// Busy and locked are the only SQLite failures a later try gets past by itself (the lock's holder
// lets go). Everything else — not a database, corruption, a read-only file, a full disk, a newer
// schema — needs someone to act, so it is permanent.
StoreFailure failure_of(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED ? StoreFailure::transient
                                                            : StoreFailure::permanent;
}

[[noreturn]] void throw_sqlite(int rc, const std::string& where, const std::string& message) {
  throw StoreError("store " + where + ": " + message, failure_of(rc));
}

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

// The connection a batch of writes runs on (WriteQueue): its leader's. A batch that needs no
// sync (every write in it is an unsynced claim, ClaimRequest::sync, or writes nothing) commits
// with synchronous=NORMAL; the connection is FULL again after.
class BatchConnection {
 public:
  BatchConnection(Connection connection, const std::string& where)
      : db(connection), where_(where) {}

  void begin(bool sync) {
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
  void exec(const char* sql) {
    char* err = nullptr;
    if (int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
      std::string message = err != nullptr ? err : sqlite3_errmsg(db);
      sqlite3_free(err);
      throw_sqlite(rc, where_, message);
    }
  }
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
  std::string read() {
    std::string bytes(size(), '\0');
    for (size_t at = 0; at < bytes.size(); at += k_piece) {
      const size_t n = std::min(k_piece, bytes.size() - at);
      if (sqlite3_blob_read(blob_, bytes.data() + at, int(n), int(at)) != SQLITE_OK) fail();
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
std::shared_ptr<Writers> writer_queue_of(const std::string& resolved_path) {
  static std::mutex registry_mutex;
  static std::map<std::string, std::shared_ptr<Writers>> registry;  // one per file
  std::lock_guard lock(registry_mutex);
  auto& queue = registry[resolved_path];
  if (!queue) queue = std::make_shared<Writers>();
  return queue;
}

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
    char* err = nullptr;
    if (int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
      std::string message = err != nullptr ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw_sqlite(rc, where_, message);
    }
    open_ = true;
  }

  std::unique_lock<std::mutex> queued_;  // released last, after COMMIT or ROLLBACK
  sqlite3* db_;
  const std::string& where_;
  bool open_ = false;
};

std::string errno_text() { return std::strerror(errno); }

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What opening a store created, so that a failed open can take it back.
struct Created {
  std::vector<std::string> dirs;  // outermost first
  bool file = false;
};

// mkdir -p; folders idem creates are 0700 whatever the umask (captured output may hold secrets).
void make_private_dirs(const std::string& dir, Created& created) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw StoreError("store folder " + dir + " is not a directory");
    return;
  }
  if (errno != ENOENT) throw StoreError("store folder " + dir + ": " + errno_text());
  std::string parent = parent_dir(dir);
  if (parent != dir) make_private_dirs(parent, created);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    if (errno == EEXIST) return;
    throw StoreError("cannot create store folder " + dir + ": " + errno_text());
  }
  created.dirs.push_back(dir);
  ::chmod(dir.c_str(), 0700);
}

// The database file and its -wal and -shm must not be symlinks (a link would let someone else
// choose where captured output is written); the folders above them may be. A -wal or -shm that
// is there must be a regular file too: SQLite fails on a folder only once the database file
// exists, and then with "disk I/O error".
void refuse_odd_companion(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISLNK(st.st_mode))
    throw StoreError("store " + path + " is a symlink; refusing to follow it");
  if (!S_ISREG(st.st_mode))
    throw StoreError("store " + path + " is not a regular file; move it away");
}

// Refuses symlinks and files owned by someone else; creates the file 0600 if absent. Returns the
// file's mode, which make_private then narrows once the file is known to be an idem store.
mode_t prepare_db_file(const std::string& path, Created& created) {
  refuse_odd_companion(path + "-wal");
  refuse_odd_companion(path + "-shm");
  for (int tries = 0; tries < 2; ++tries) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      if (S_ISLNK(st.st_mode))
        throw StoreError("store " + path + " is a symlink; refusing to follow it");
      if (!S_ISREG(st.st_mode)) throw StoreError("store " + path + " is not a regular file");
      if (st.st_uid != ::geteuid())
        throw StoreError("store " + path + " is owned by uid " + std::to_string(st.st_uid) +
                         ", not by you; refusing to use it");
      return st.st_mode & 07777;
    }
    if (errno != ENOENT) throw StoreError("store " + path + ": " + errno_text());
    make_private_dirs(parent_dir(path), created);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::fchmod(fd, 0600);
      ::close(fd);
      created.file = true;
      return 0600;
    }
    if (errno != EEXIST) throw StoreError("cannot create store " + path + ": " + errno_text());
    // Another process created it between our lstat and open: check it like any existing file.
  }
  throw StoreError("store " + path + " keeps appearing and vanishing; try again",
                   StoreFailure::transient);
}

// Takes group and other access away from the database file (MODE, as prepare_db_file found it)
// before SQLite creates its -wal and -shm, which take the database file's mode. Never adds write
// access the owner removed on purpose. Only once the file is known to be an idem store: a file
// that is refused is left as it was.
void make_private(const std::string& path, mode_t mode) {
  if ((mode & 0077) != 0 && ::chmod(path.c_str(), mode & 0700) != 0)
    throw StoreError("cannot make store " + path + " private: " + errno_text());
}

// A name read from a file for a one-line message: control characters shown as '?', long names
// cut.
std::string printable_name(std::string name) {
  for (char& c : name)
    if (uint8_t(c) < 0x20 || uint8_t(c) == 0x7f) c = '?';
  return core::display_key(name, 64);
}

// The path SQLite is given: the folder resolved (SQLite's SQLITE_OPEN_NOFOLLOW refuses a symlink
// anywhere in the path, and Debian's /var/run or a symlinked $HOME are ordinary), the file name
// as it is, so NOFOLLOW still refuses a database file that became a symlink after our lstat.
std::string resolved_path(const std::string& path) {
  std::string dir = parent_dir(path);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (real == nullptr) throw StoreError("store folder " + dir + ": " + errno_text());
  std::string resolved(real);
  std::free(real);
  return (resolved == "/" ? "" : resolved) + "/" + base_name(path);
}

bool is_empty_file(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Takes back what a failed open created. The file only while it is still empty with no WAL file
// beside it: then no process has made it a database yet (a store that another process has begun
// to use has a WAL or a header; a folder or other non-file at the -wal path is no WAL, and no
// process can have written one there), so removing it cannot lose anyone's records. Folders
// only while empty.
void take_back(const std::string& path, const Created& created) {
  if (created.file && is_empty_file(path) && !is_regular_file(path + "-wal")) {
    ::unlink(path.c_str());
    if (is_empty_file(path + "-shm")) ::unlink((path + "-shm").c_str());
  }
  for (auto dir = created.dirs.rbegin(); dir != created.dirs.rend(); ++dir)
    if (::rmdir(dir->c_str()) != 0) break;
}

// While it lives, the connection's commits are not synced (synchronous=NORMAL: the WAL stays
// consistent, the last commits can be lost to a power cut); FULL again after. Set outside a
// transaction, before it begins and after it ended.
class UnsyncedCommits {
 public:
  UnsyncedCommits(sqlite3* db, bool unsynced) : db_(unsynced ? db : nullptr) {
    if (db_ != nullptr) sqlite3_exec(db_, "PRAGMA synchronous = NORMAL", nullptr, nullptr, nullptr);
  }
  ~UnsyncedCommits() {
    if (db_ != nullptr) sqlite3_exec(db_, "PRAGMA synchronous = FULL", nullptr, nullptr, nullptr);
  }
  UnsyncedCommits(const UnsyncedCommits&) = delete;
  UnsyncedCommits& operator=(const UnsyncedCommits&) = delete;

 private:
  sqlite3* db_;
};

class SqliteStore final : public Store {
 public:
  SqliteStore(const std::string& path, std::optional<int64_t> busy_timeout_ms) : path_(path) {
    // Bad settings are refused before anything is created.
    busy_timeout_ms_ = busy_timeout_in_force(busy_timeout_ms);
    Created created;
    try {
      const mode_t mode = prepare_db_file(path_, created);
      const std::string resolved = resolved_path(path_);
      writers_ = writer_queue_of(resolved);
      int rc = sqlite3_open_v2(resolved.c_str(), &db_,
                               SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
                               idem_vfs_name());
      if (rc != SQLITE_OK) {
        std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        throw StoreError("cannot open store " + path_ + ": " + message, failure_of(rc));
      }
      configure(mode);
      migrate();
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
    // A claim that need not be synced (ClaimRequest::sync) is so only if its batch needs no sync.
    batched(req.sync, [&](Connection db) {
      Rows rows(*this, db);
      result = claim_rows(rows, req, owner_gone, new_attempt_token());
    });
    if (!req.sync && result.verdict == core::Verdict::claim)
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
    Statement(db_, "CREATE TABLE idem_write_probe (b BLOB)", path_).run();
    Statement insert(db_, "INSERT INTO idem_write_probe VALUES (zeroblob(?1))", path_);
    insert.bind(1, k_write_probe_bytes).run();
    // The handle's message is still the last statement's: the code says what went wrong.
    if (int rc = sqlite3_db_cacheflush(db_); rc != SQLITE_OK)
      throw_sqlite(rc, path_, sqlite3_errstr(rc));
  }  // rolled back by tx

  StoreHealth health() override {
    StoreHealth h;
    h.engine = std::string("SQLite ") + sqlite3_libversion();
    h.schema_version = user_version();
    h.opened_schema_version = opened_version_;
    // A damaged page may also fail the check itself: that is damage too.
    try {
      Statement check(db_, "PRAGMA quick_check(5)", path_);
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
      Statement update(db, R"sql(
        UPDATE records SET status = ?3, finished_at = ?4, expires_at = ?4 + ttl_ms,
               exit_code = ?5, signal = ?6, timed_out = ?7, output_bytes = ?8,
               output_truncated = ?9, note = ?10, response = ?11, attempt_token = '',
               lease_expires = NULL
        WHERE key = ?1 AND attempt = ?2 AND status = 'running'
          AND (lease_expires IS NULL OR lease_expires > ?4))sql",
                       path_);
      update.bind(1, key).bind(2, attempt).bind(3, std::string(core::to_string(outcome.status)));
      update.bind(4, outcome.finished_ms).bind_optional(5, outcome.exit_code);
      update.bind_optional(6, outcome.signal).bind(7, int64_t(outcome.timed_out));
      update.bind(8, outcome.output_bytes).bind(9, int64_t(outcome.output_truncated));
      update.bind(10, outcome.note).bind_optional(11, response);
      update.run();
      changed = sqlite3_changes(db) == 1;
      if (changed && !outcome.output.empty()) write_output(db, key, attempt, outcome.output);
      IDEM_CRASH_POINT("finish-before-commit");
    });
    checkpoint_if_wal_large();
    return changed;
  }

  std::vector<bool> put_all(std::span<const Record> records, bool replace) override {
    std::vector<bool> written(records.size(), false);
    batched(true, [&](Connection db) {
      for (size_t i = 0; i < records.size(); ++i) written[i] = put_in(db, records[i], replace);
    });
    checkpoint_if_wal_large();
    return written;
  }

  // One record of put_all, in its transaction.
  bool put_in(Connection db, const Record& r, bool replace) {
    const std::optional<std::string> response =
        r.response ? std::optional(core::encode_response(*r.response)) : std::nullopt;
    if (replace) Statement(db, "DELETE FROM records WHERE key = ?1", path_).bind(1, r.key).run();
    Statement insert(db, R"sql(
      INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                           owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                           exit_code, signal, timed_out, output_bytes, output_truncated,
                           request, note, response, pgid, pgid_start, attempt_token,
                           lease_expires, replay_failures, owner_machine_id, owner_pid_ns)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
              ?19, ?20, ?21, ?22, ?23, '', ?24, ?25, ?26, ?27)
      ON CONFLICT (key) DO NOTHING)sql",
                     path_);
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
    insert.run();
    const bool changed = sqlite3_changes(db) == 1;
    if (changed && !r.output.empty()) write_output(db, r.key, r.attempt, r.output);
    return changed;
  }

  bool set_process_group(const std::string& key, int64_t attempt,
                         const core::ProcessGroup& group) override {
    // Written to the WAL before the command starts. Synced only when it is what makes this
    // attempt's claim durable (a claim committed unsynced, ClaimRequest::sync). Otherwise not: it
    // survives a crash of idem (the frames are in the file, for every other process to read),
    // and what a power cut could take (the group) it takes along with the group's processes; the
    // outcome's sync after it covers it too. One fsync less per run.
    const bool makes_claim_durable =
        unsynced_claim_ && unsynced_claim_->first == key && unsynced_claim_->second == attempt;
    unsynced_claim_.reset();
    bool changed = false;
    batched(makes_claim_durable, [&](Connection db) {
      Statement update(db, R"sql(
        UPDATE records SET pgid = ?3, pgid_start = ?4
        WHERE key = ?1 AND attempt = ?2 AND status = 'running')sql",
                       path_);
      update.bind(1, key).bind(2, attempt).bind(3, group.pgid).bind(4, group.leader_start_ticks);
      update.run();
      changed = sqlite3_changes(db) == 1;
    });
    return changed;
  }

  bool mark_abandoned(const std::string& key, int64_t attempt) override {
    bool changed = false;
    batched(true, [&](Connection db) { changed = set_abandoned(db, key, attempt); });
    return changed;
  }

  bool heartbeat(const std::string& key, const std::string& attempt_token, int64_t lease_ms,
                 int64_t now_ms) override {
    if (attempt_token.empty()) return false;
    Transaction tx(db_, path_, writers_->transactions());
    Statement update(db_, R"sql(
      UPDATE records SET lease_expires = ?4
      WHERE key = ?1 AND attempt_token = ?2 AND status = 'running'
        AND (lease_expires IS NULL OR lease_expires > ?3))sql",
                     path_);
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

  std::optional<Record> get(const std::string& key) override { return select_record(key, true); }

  void list(const ListQuery& q, const RecordVisitor& visit) override {
    if (!q.live && !q.include_expired) return;
    const std::string end = sqlite_sql::prefix_end(q.prefix);
    // A rare prefix is read from the key index (see k_prefix_sort_max); unfinished records from
    // their own small index whatever the prefix.
    const bool by_key = !q.prefix.empty() && !sqlite_sql::lists_unfinished_only(q) &&
                        count_keys_with_prefix(q.prefix, end) < k_prefix_sort_max;
    const std::string sql = sqlite_sql::list(q, by_key);
    Statement select(db_, sql.c_str(), path_);
    const int params = select.parameter_count();
    if (params >= 1) select.bind(1, q.now_ms);
    if (params >= 2) select.bind(2, q.prefix);
    if (params >= 3) select.bind(3, end);
    while (select.step()) {
      Record r;
      if (q.keys_only)
        r.key = select.text_at(0);
      else
        r = read_record(select);
      if (!visit(r)) return;
    }
  }

  RemoveResult remove(const std::string& key, bool force, const OwnerGone& owner_gone) override {
    Transaction tx(db_, path_, writers_->transactions());
    Rows rows(*this, connection());
    const RemoveResult result = remove_rows(rows, key, force, owner_gone);
    if (result == RemoveResult::removed) tx.commit();
    return result;
  }

  int64_t gc(const GcQuery& q) override {
    auto bind = [&](Statement& s) {
      s.bind(1, q.now_ms);
      if (s.parameter_count() >= 2) s.bind(2, q.now_ms - q.older_than_ms);
    };
    if (q.dry_run) {
      int64_t n = count_of(sqlite_sql::gc_expired("count(*)"), bind);
      if (q.older_than_ms > 0) n += count_of(sqlite_sql::gc_ended("count(*)"), bind);
      return n;
    }
    int64_t removed = delete_picked(sqlite_sql::gc_expired("rowid"), bind);
    if (q.older_than_ms > 0) removed += delete_picked(sqlite_sql::gc_ended("rowid"), bind);
    wal_bytes_after_gc_ = checkpoint_truncate() ? 0 : wal_bytes();
    return removed;
  }

  int64_t wal_bytes_after_gc() const override { return wal_bytes_after_gc_; }

 private:
  static constexpr const char* k_select_columns =
      "SELECT key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid, "
      "owner_start, started_at, finished_at, ttl_ms, expires_at, exit_code, signal, timed_out, "
      "output_bytes, output_truncated, request, note, response, pgid, pgid_start, "
      "attempt_token, lease_expires, replay_failures, owner_machine_id, owner_pid_ns";
  // The rowid of the record's output in `outputs`, NULL when it has none (one index lookup).
  static constexpr const char* k_output_rowid =
      ", (SELECT rowid FROM outputs WHERE outputs.key = records.key"
      " AND outputs.attempt = records.attempt)";
  static constexpr int k_output_column = 28;

  // The outcome's output, written in place into a zeroblob of its size: SQLite keeps a zeroblob
  // that ends a row as a count rather than bytes, so neither the insert nor the writes hold a
  // second copy of it. Inside finish's transaction, on the row it inserts.
  void write_output(Connection db, const std::string& key, int64_t attempt,
                    const std::string& output) {
    Statement insert(db, R"sql(
      INSERT OR REPLACE INTO outputs (key, attempt, output) VALUES (?1, ?2, zeroblob(?3)))sql",
                     path_);
    insert.bind(1, key).bind(2, attempt).bind(3, int64_t(output.size())).run();
    OutputBlob(db, sqlite3_last_insert_rowid(db), true, path_).write(output);
  }

  // How many keys start with the prefix, counting no further than k_prefix_sort_max (from the
  // key index alone).
  int64_t count_keys_with_prefix(const std::string& prefix, const std::string& end) {
    std::string sql = "SELECT count(*) FROM (SELECT 1 FROM records WHERE key >= ?1";
    if (!end.empty()) sql += " AND key < ?2";
    sql += " LIMIT " + std::to_string(k_prefix_sort_max) + ")";
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
    const std::string pick_sql = picked + " LIMIT " + std::to_string(k_gc_batch);
    // gc's commits are not synced one by one (synchronous=NORMAL keeps the WAL consistent, only
    // the last batches can be lost to a power cut, and the next gc collects them again); the
    // commits of other processes, synced, make the earlier frames durable anyway. This takes a
    // thousand fsyncs off a collection of 500,000 records.
    UnsyncedCommits unsynced(db_, true);
    int64_t removed = 0;
    std::vector<int64_t> rowids;
    for (;;) {
      {
        Transaction tx(db_, path_, writers_->transactions());
        Statement pick(db_, pick_sql.c_str(), path_);
        bind(pick);
        rowids.clear();
        while (pick.step()) rowids.push_back(pick.int_at(0));
        Statement del(db_, "DELETE FROM records WHERE rowid = ?1 AND status <> 'running'", path_);
        for (int64_t rowid : rowids) {
          del.reset();
          del.bind(1, rowid).run();
          removed += sqlite3_changes(db_);
        }
        tx.commit();
      }
      checkpoint_if_wal_large();
      if (rowids.size() < size_t(k_gc_batch)) return removed;
      std::this_thread::sleep_for(k_gc_yield);
    }
  }

  void exec(const char* sql) {
    char* err = nullptr;
    if (int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
      std::string message = err != nullptr ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw_sqlite(rc, path_, message);
    }
  }

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
    opened_version_ = user_version();
    opened_application_id_ = application_id();
    refuse_foreign_file(opened_application_id_, opened_version_);
    refuse_newer_schema(opened_version_);
    make_private(path_, mode);
    enable_wal();
    exec("PRAGMA synchronous = FULL");
    exec("PRAGMA wal_autocheckpoint = 0");
    exec("PRAGMA trusted_schema = OFF");
  }

  // Switching a new file to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once
  // instead of calling the busy handler; several first runs at the same moment would then see
  // "database is locked". So retry, with the same patience as the busy timeout.
  void enable_wal() {
    const int64_t give_up = util::monotonic_ms() + busy_timeout_ms_;
    int64_t pause_ms = 1;
    for (;;) {
      sqlite3_stmt* stmt = nullptr;
      int rc = sqlite3_prepare_v2(db_, "PRAGMA journal_mode = WAL", -1, &stmt, nullptr);
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

  void refuse_newer_schema(int version) {
    if (version > k_schema_version)
      throw StoreError("store " + path_ + " has schema version " + std::to_string(version) +
                       ", newer than this idem understands (" + std::to_string(k_schema_version) +
                       "); upgrade idem");
  }

  // SPEC §2: a file that is not an idem store is refused, not made one. Idem's application id
  // says it is one. A file without an id (0) is a new store when it holds nothing at all, or a
  // store made before idem set the id when its tables are idem's and, past version 0, include
  // `records`; anything else (another program's tables, a user_version some other program set)
  // is someone else's file. VERSION: the file's user_version.
  void refuse_foreign_file(int32_t application_id, int version) {
    if (application_id == k_application_id) return;
    std::string why;
    if (application_id != 0) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%08x", unsigned(uint32_t(application_id)));
      why = std::string("it holds another application_id ") + hex;
    } else {
      std::vector<std::string> others;
      bool has_records = false;
      Statement tables(db_, R"sql(
        SELECT name FROM sqlite_master
        WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
        ORDER BY name)sql",
                       path_);
      while (tables.step()) {
        std::string name = tables.text_at(0);
        if (name == "records") has_records = true;
        if (std::find(std::begin(k_own_tables), std::end(k_own_tables), name) ==
            std::end(k_own_tables))
          others.push_back(std::move(name));
      }
      constexpr size_t k_named = 3;
      if (!others.empty()) {
        why = "it holds other tables: ";
        for (size_t i = 0; i < others.size() && i < k_named; ++i)
          why += (i ? ", " : "") + printable_name(others[i]);
        if (others.size() > k_named)
          why += " and " + std::to_string(others.size() - k_named) + " more";
      } else if (version != 0 && !has_records) {
        why = "it has user_version " + std::to_string(version) + " but no records table";
      }
    }
    if (why.empty()) return;
    // Closing then runs SQLite's checkpoint on close again, which removes the -wal and -shm that
    // reading a WAL-mode file made: the file is not idem's, so idem's reason to skip it (see the
    // top of this file) does not hold, and nothing of idem's may be left beside it.
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
    throw StoreError("store " + path_ + " is not an idem store (" + why +
                     "): give idem a file of its own");
  }

  int user_version() {
    Statement v(db_, "PRAGMA user_version", path_);
    v.step();
    return int(v.int_at(0));
  }

  int32_t application_id() {
    Statement v(db_, "PRAGMA application_id", path_);
    v.step();
    return int32_t(v.int_at(0));
  }

  // The version and id read at open are enough when they are the current ones: no process ever
  // lowers the version or clears the id. Else the writer lock is taken and both read again.
  void migrate() {
    if (opened_version_ == k_schema_version && opened_application_id_ == k_application_id) return;
    Transaction tx(db_, path_, writers_->transactions());
    // Another process may have migrated, or put something else in the file, while we waited for
    // the writer lock.
    int version = user_version();
    refuse_foreign_file(application_id(), version);
    refuse_newer_schema(version);
    for (; version < k_schema_version; ++version) exec(k_migrations[version]);
    exec(("PRAGMA application_id = " + std::to_string(k_application_id)).c_str());
    exec(("PRAGMA user_version = " + std::to_string(k_schema_version)).c_str());
    tx.commit();
  }

  Connection connection() { return Connection{db_, &statements_}; }

  // Runs `body` in a batch of this process's writes to the file (writer_queue_of), on whichever
  // connection leads the batch: `body` reaches the store only through the one it is given.
  // Returns once the batch committed (durable if `sync` or another write of it asked so).
  void batched(bool sync, const std::function<void(Connection)>& body) {
    BatchConnection mine(connection(), path_);
    writers_->run(mine, sync, [&](BatchConnection& leader) { body(leader.db); });
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
    return s;
  }

  bool set_abandoned(Connection db, const std::string& key, int64_t attempt,
                     const char* note = k_owner_died) {
    Statement update(db, R"sql(
      UPDATE records SET status = 'abandoned', note = ?3, attempt_token = '', lease_expires = NULL
      WHERE key = ?1 AND attempt = ?2 AND status = 'running')sql",
                     path_);
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
      Statement insert(db_, R"sql(
        INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                             owner_pid, owner_start, started_at, ttl_ms, request, attempt_token,
                             lease_expires, replay_failures, owner_machine_id, owner_pid_ns)
        VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?16,
                ?17)
        ON CONFLICT (key) DO NOTHING)sql",
                       store_.path_);
      store_.bind_claim(insert, req, attempt, token).run();
      return sqlite3_changes(db_) == 1;
    }
    bool replace(const ClaimRequest& req, int64_t attempt, const std::string& token,
                 int64_t observed) override {
      Statement update(db_, R"sql(
        UPDATE records SET fingerprint = ?2, kind = ?3, status = 'running', attempt = ?4,
               owner_host = ?5, owner_boot_id = ?6, owner_pid = ?7, owner_start = ?8,
               started_at = ?9, ttl_ms = ?10, request = ?11, finished_at = NULL,
               expires_at = NULL, exit_code = NULL, signal = NULL, timed_out = 0,
               output_bytes = 0, output_truncated = 0, note = '', response = NULL, pgid = NULL,
               pgid_start = NULL, attempt_token = ?12, lease_expires = ?13,
               replay_failures = ?14, owner_machine_id = ?16, owner_pid_ns = ?17
        WHERE key = ?1 AND attempt = ?15)sql",
                       store_.path_);
      store_.bind_claim(update, req, attempt, token).bind(15, observed).run();
      return sqlite3_changes(db_) == 1;
    }
    bool set_abandoned(const std::string& key, int64_t attempt, const char* note) override {
      return store_.set_abandoned(db_, key, attempt, note);
    }
    bool delete_first_attempt(const std::string& key, const std::string& token) override {
      Statement del(db_, R"sql(
        DELETE FROM records
        WHERE key = ?1 AND attempt_token = ?2 AND status = 'running' AND attempt = 1)sql",
                    store_.path_);
      del.bind(1, key).bind(2, token).run();
      return sqlite3_changes(db_) == 1;
    }
    bool restore_previous_attempt(const std::string& key, const std::string& token) override {
      Statement back(db_, R"sql(
        UPDATE records SET attempt = attempt - 1, status = 'abandoned',
               note = 'attempt ' || attempt || ' was released', attempt_token = '',
               lease_expires = NULL
        WHERE key = ?1 AND attempt_token = ?2 AND status = 'running' AND attempt > 1)sql",
                     store_.path_);
      back.bind(1, key).bind(2, token).run();
      return sqlite3_changes(db_) == 1;
    }
    void delete_record(const std::string& key) override {
      Statement(db_, "DELETE FROM records WHERE key = ?1", store_.path_).bind(1, key).run();
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
    r.process_group = core::ProcessGroup{s.int_at(21), s.int_at(22)};
    r.attempt_token = s.text_at(23);
    r.lease_expires_ms = s.int_at(24);
    r.replay_failures = s.int_at(25) != 0;
    return r;
  }

  std::optional<Record> select_record(const std::string& key, bool with_output) {
    return select_record(connection(), key, with_output);
  }
  // One read: the record, then its output by blob I/O while the statement still holds the
  // snapshot it was found in (so the rowid is the output of this very attempt).
  std::optional<Record> select_record(Connection db, const std::string& key, bool with_output) {
    std::string sql = std::string(k_select_columns) + (with_output ? k_output_rowid : ", NULL") +
                      " FROM records WHERE key = ?1";
    Statement select(db, sql.c_str(), path_);
    select.bind(1, key);
    if (!select.step()) return std::nullopt;
    Record r = read_record(select);
    if (!select.is_null(k_output_column))
      r.output = OutputBlob(db, select.int_at(k_output_column), false, path_).read();
    return r;
  }

  int64_t wal_bytes() const {
    struct stat st {};
    return ::stat((path_ + "-wal").c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
  }
  bool wal_large() const { return wal_bytes() > k_checkpoint_wal_bytes; }

  // The size is looked at again behind the queue: of several writers that found the WAL large,
  // the first checkpoints it and the others find it empty.
  void checkpoint_if_wal_large() {
    if (!wal_large()) return;
    std::lock_guard queued(writers_->transactions());
    if (wal_large()) checkpoint_truncate_queued();
  }

  // Behind this process's other writers (writer_queue_of), like a transaction: a checkpoint
  // holds SQLite's writer lock throughout, and a writer of this process that met it there would
  // poll it from its busy handler, holding the queue, instead of waiting its turn in the queue.
  bool checkpoint_truncate() {
    std::lock_guard queued(writers_->transactions());
    return checkpoint_truncate_queued();
  }

  // Takes the writer lock (waiting via the busy handler), copies the WAL into the database and
  // truncates the WAL to zero bytes. Readers still holding old snapshots make it return early
  // (false): that is not an error, the next one finishes the job.
  bool checkpoint_truncate_queued() {
    return sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr) ==
           SQLITE_OK;
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  StatementCache statements_;  // db_'s, finalized before it closes
  int64_t busy_timeout_ms_;
  std::shared_ptr<Writers> writers_;  // this process's writers of the file
  // The claim this connection committed unsynced (key, attempt): the next record of its process
  // group is synced to make it durable (set_process_group).
  std::optional<std::pair<std::string, int64_t>> unsynced_claim_;
  int64_t busy_since_ms_ = 0;
  int64_t wal_bytes_after_gc_ = 0;     // what gc's checkpoint could not empty (wal_bytes_after_gc)
  int opened_version_ = 0;             // PRAGMA user_version when the connection was opened
  int32_t opened_application_id_ = 0;  // PRAGMA application_id then
};

}  // namespace

namespace sqlite_sql {

std::string prefix_end(std::string prefix) {
  while (!prefix.empty() && uint8_t(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = char(uint8_t(prefix.back()) + 1);
  return prefix;
}

// Both gc queries read one partial index of non-running records: running ones are never seen.
std::string gc_expired(const char* what) {
  return std::string("SELECT ") + what +
         " FROM records INDEXED BY records_expiring"
         " WHERE status <> 'running' AND expires_at <= ?1";
}

// Finished records whose attempt ended before the cutoff ?2 (abandoned ones: began), the expired
// ones left out (gc_expired has them; so a dry run does not count them twice).
std::string gc_ended(const char* what) {
  return std::string("SELECT ") + what +
         " FROM records INDEXED BY records_by_end"
         " WHERE status <> 'running' AND coalesce(finished_at, started_at) <= ?2"
         " AND (expires_at IS NULL OR expires_at > ?1)";
}

bool lists_unfinished_only(const ListQuery& q) {
  if (!q.live || q.include_expired || q.statuses.empty()) return false;
  return std::all_of(q.statuses.begin(), q.statuses.end(), [](core::Status s) {
    return s == core::Status::running || s == core::Status::abandoned;
  });
}

std::string list(const ListQuery& q, bool by_key) {
  // ls's columns: no request, no output, no response (never read, so a listing costs the same
  // whatever the records hold).
  std::string sql = q.keys_only
                        ? "SELECT key"
                        : "SELECT key, fingerprint, kind, status, attempt, owner_host, "
                          "owner_boot_id, owner_pid, owner_start, started_at, finished_at, ttl_ms, "
                          "expires_at, exit_code, signal, timed_out, output_bytes, "
                          "output_truncated, '', note, NULL, pgid, pgid_start, '', "
                          "lease_expires, replay_failures, owner_machine_id, owner_pid_ns, NULL";
  // Newest first straight from records_by_recent, whose order is the listing's, stopping at the
  // limit; or a prefix's range of the key index, then sorted; or, for unfinished records only,
  // from records_unfinished, in the same order. SQLite uses a partial index only for a query whose
  // WHERE holds the index's own condition as a term, so it is spelled exactly as in the index.
  if (lists_unfinished_only(q))
    sql +=
        " FROM records INDEXED BY records_unfinished"
        " WHERE status IN ('running', 'abandoned')";
  else if (by_key)
    sql += " FROM records INDEXED BY sqlite_autoindex_records_1 WHERE 1";
  else
    sql += " FROM records INDEXED BY records_by_recent WHERE 1";
  if (!q.prefix.empty()) {
    sql += " AND key >= ?2";
    if (!prefix_end(q.prefix).empty()) sql += " AND key < ?3";
  }
  std::string live = "(expires_at IS NULL OR expires_at > ?1)";
  if (!q.statuses.empty()) {
    live += " AND status IN (";
    for (size_t i = 0; i < q.statuses.size(); ++i)
      live += (i ? ",'" : "'") + std::string(core::to_string(q.statuses[i])) + "'";
    live += ")";
  }
  const std::string expired = "expires_at <= ?1";
  if (q.live && q.include_expired && !q.statuses.empty())
    sql += " AND ((" + live + ") OR " + expired + ")";
  else if (q.live && !q.include_expired)
    sql += " AND " + live;
  else if (!q.live)
    sql += " AND " + expired;
  sql += " ORDER BY started_at DESC, key";
  if (q.limit > 0) sql += " LIMIT " + std::to_string(q.limit);
  return sql;
}

}  // namespace sqlite_sql

std::unique_ptr<Store> open_sqlite_store(const std::string& path,
                                         std::optional<int64_t> busy_timeout_ms) {
  return std::make_unique<SqliteStore>(path, busy_timeout_ms);
}

}  // namespace idem::store
