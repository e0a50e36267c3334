// What only the SQLite store has, against real files in a private temp dir: the file rules
// (modes, symlinks, schema versions and migrations), WAL and checkpoints, query plans, and claims
// racing to create a store. Its behaviour as a Store is proven by the contract suite
// (store_contract.cpp), which runs against SQLite too.
#include <pwd.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/output.hpp"
#include "core/record.hpp"
#include "core/response.hpp"
#include "fixtures.hpp"
#include "race.hpp"
#include "store/sqlite/files.hpp"
#include "store/sqlite/sql.hpp"
#include "store/store.hpp"
#include "store_contract.hpp"
#include "temp_dir.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_sqlite_store {

using idem::StoreError;
using idem::core::Outcome;
using idem::core::Owner;
using idem::core::Record;
using idem::core::Status;
using idem::core::Verdict;
using idem::store::ClaimRequest;
using idem::store::ClaimResult;
using idem::store::GcQuery;
using idem::store::ListQuery;
using idem::store::open_sqlite_store;
using idem::store::OwnerGone;
using idem::store::RemoveResult;
using idem::store::Store;
using idem::test::fixture;
using idem::test::k_alive;
using idem::test::k_day;
using idem::test::k_fp;
using idem::test::k_gone;
using idem::test::k_t0;
using idem::test::keys_of;
using idem::test::listed;
using idem::test::outcome;
using idem::test::put_finished;
using idem::test::race;
using idem::test::request;
using idem::test::TempDir;
using idem::test::verdict_is;

namespace {

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// idem's PRAGMA application_id ("IDEM"), as a decimal for SQL and as PRAGMA reads it back.
constexpr const char* k_idem_application_id = "1229210957";

// Raw access for what the interface deliberately hides (schema version, journal mode).
struct RawDb {
  explicit RawDb(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            nullptr) == SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db); }
  std::string text(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr)
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    return out;
  }
  void exec(const char* sql) { REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == 0); }
  void exec(const std::string& sql) { exec(sql.c_str()); }
  sqlite3* db = nullptr;
};

// The schema version this build writes, as PRAGMA user_version reads it.
std::string current_version() { return std::to_string(idem::store::sqlite_sql::k_schema_version); }

class UmaskGuard {
 public:
  explicit UmaskGuard(mode_t mask) : old_(::umask(mask)) {}
  ~UmaskGuard() { ::umask(old_); }

 private:
  mode_t old_;
};

}  // namespace

TEST_CASE("store: gc in batches removes everything due and truncates the WAL", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path);
  const int n = 1234;  // more than two batches
  for (int i = 0; i < n; ++i)
    put_finished(*store, "e" + std::to_string(i), k_t0, Status::succeeded, k_t0 + 1, 1);
  for (int i = 0; i < 3; ++i)
    REQUIRE(store->claim(request("r" + std::to_string(i)), k_alive).verdict == Verdict::claim);

  GcQuery q;
  q.now_ms = k_t0 + 10;
  q.older_than_ms = 1;
  q.dry_run = true;
  CHECK(store->gc(q).removed == n);
  q.dry_run = false;
  CHECK(store->gc(q).removed == n);
  ListQuery all;
  all.include_expired = true;
  all.now_ms = q.now_ms;
  auto left = listed(*store, all);
  CHECK(keys_of(left) == std::vector<std::string>{"r0", "r1", "r2"});
  for (const auto& r : left) CHECK(r.status == Status::running);

  struct stat st {};
  REQUIRE(::stat((path + "-wal").c_str(), &st) == 0);
  CHECK(st.st_size == 0);
  CHECK(::access((path + ".gc").c_str(), F_OK) != 0);  // its mark is gone with it
}

// Finishes KEY with an outcome of 5 MiB: past every checkpoint threshold but gc's.
void finish_large(Store& store, const std::string& key) {
  ClaimResult c = store.claim(request(key), k_alive);
  idem::core::CapturedOutput captured;
  captured.append(idem::core::Stream::out, std::string(5 * 1024 * 1024, 'x'));
  Outcome o = outcome(Status::succeeded, 0, k_t0 + 1);
  o.output = captured.encode();
  o.output_bytes = captured.stored_bytes();
  REQUIRE(store.finish(key, c.attempt, o));
}

int64_t wal_size(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat((path + "-wal").c_str(), &st) == 0);
  return st.st_size;
}

// A WAL a checkpoint emptied: nothing, or blocks kept after a header of zeros (no frames).
bool wal_emptied(const std::string& path) {
  char header[32] = {};
  std::ifstream in(path + "-wal", std::ios::binary);
  in.read(header, sizeof header);
  return wal_size(path) == 0 ||
         std::all_of(std::begin(header), std::end(header), [](char c) { return c == 0; });
}

TEST_CASE("store: while a gc holds its mark, other writers leave the WAL to it", "[store]") {
  using idem::store::sqlite::gc_marked;
  using idem::store::sqlite::GcMark;
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path);
  CHECK_FALSE(gc_marked(path));
  {
    const GcMark mark(path);  // as another process's gc holds it
    CHECK(gc_marked(path));
    finish_large(*store, "during");
    CHECK(wal_size(path) > 5 * 1024 * 1024);
  }
  CHECK_FALSE(gc_marked(path));
  CHECK(::access((path + ".gc").c_str(), F_OK) != 0);
  finish_large(*store, "after");
  CHECK(wal_emptied(path));
  // A mark that a killed gc left behind, unlocked, is not heeded.
  std::ofstream(path + ".gc").close();
  CHECK_FALSE(gc_marked(path));
  finish_large(*store, "left");
  CHECK(wal_emptied(path));
  CHECK(store->get("during").has_value());
}

TEST_CASE("store: a large outcome checkpoints the WAL, which keeps one extent's blocks",
          "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path);
  ClaimResult c = store->claim(request("big"), k_alive);
  idem::core::CapturedOutput captured;
  captured.append(idem::core::Stream::out, std::string(5 * 1024 * 1024, 'x'));
  Outcome o = outcome(Status::succeeded, 0, k_t0 + 1);
  o.output = captured.encode();
  o.output_bytes = captured.stored_bytes();
  REQUIRE(store->finish("big", c.attempt, o));
  // Cut back to 512 KiB from more than 5 MiB, its header zeros: no frames.
  CHECK(wal_size(path) == 512 * 1024);
  CHECK(wal_emptied(path));
  auto r = store->get("big");
  REQUIRE(r.has_value());
  CHECK(r->output == o.output);
}

// A checkpoint as the WAL grows keeps the file's blocks, its header zeroed: a process that opens
// the store alone rebuilds the WAL's index from the file and must find none of the frames the
// checkpoint copied (a valid header would make it append after them: the WAL would grow without
// end), and every frame written after it. gc's own checkpoint still leaves the file empty.
TEST_CASE("store: after a checkpoint that kept the WAL's blocks, a new process finds its records",
          "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto first = open_sqlite_store(path);
  finish_large(*first, "big");
  CHECK(wal_emptied(path));
  // Another process (a connection of its own) writes over the kept blocks, then both close
  // (three runs: fewer frames than the next checkpoint waits for).
  auto second = open_sqlite_store(path);
  for (int i = 0; i < 3; ++i) {
    Store& s = i % 2 ? *second : *first;
    ClaimResult c = s.claim(request("k" + std::to_string(i)), k_alive);
    REQUIRE(s.finish("k" + std::to_string(i), c.attempt, outcome(Status::succeeded, 0, k_t0 + 1)));
  }
  CHECK_FALSE(wal_emptied(path));
  CHECK(wal_size(path) == 512 * 1024);  // written over, not grown
  first.reset();
  second.reset();
  auto reopened = open_sqlite_store(path);
  CHECK(reopened->get("big").has_value());
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    auto r = reopened->get("k" + std::to_string(i));
    REQUIRE(r.has_value());
    CHECK(r->status == Status::succeeded);
  }
  CHECK(reopened->health().damage.empty());
  // The next checkpoint as the WAL grows empties it again, at the same size.
  finish_large(*reopened, "big2");
  CHECK(wal_emptied(path));
  CHECK(wal_size(path) == 512 * 1024);
}

// Write system calls this process has made so far (/proc/self/io).
int64_t write_calls() {
  std::ifstream io("/proc/self/io");
  std::string name;
  int64_t value = 0;
  while (io >> name >> value)
    if (name == "syscw:") return value;
  FAIL("no syscw in /proc/self/io");
  return 0;
}

// SQLite writes each WAL frame as its 24-byte header, then its page; the idem VFS makes them
// one write. An outcome of 30 pages (and the record's index pages around it; short of the WAL
// size that makes a checkpoint) costs about one write a frame, not two; and what was written
// reads back whole in another connection.
TEST_CASE("store: a WAL frame's header and page go out in one write", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path);
  finish_large(*store, "first");  // the WAL made and extended: later frames write over its blocks
  ClaimResult c = store->claim(request("k"), k_alive);
  std::string bytes(120 * 1024, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char((i * 7919) % 251);
  idem::core::CapturedOutput captured;
  captured.append(idem::core::Stream::out, bytes);
  Outcome o = outcome(Status::succeeded, 0, k_t0 + 1);
  o.output = captured.encode();
  o.output_bytes = captured.stored_bytes();
  const int64_t before = write_calls();
  REQUIRE(store->finish("k", c.attempt, o));
  const int64_t writes = write_calls() - before;
  CAPTURE(writes);
  CHECK(writes >= 30);
  CHECK(writes < 50);  // two a frame would be over 60
  auto other = open_sqlite_store(path);
  auto r = other->get("k");
  REQUIRE(r.has_value());
  CHECK(r->output == o.output);
  CHECK(other->health().damage.empty());
}

// The idem VFS extends the WAL with zeros ahead of its frames (commits then write over blocks the
// file has), never over frames another connection wrote since this one last looked.
TEST_CASE("store: the WAL is extended ahead, never over another connection's frames", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto wal_size = [&] {
    struct stat st {};
    REQUIRE(::stat((path + "-wal").c_str(), &st) == 0);
    return int64_t(st.st_size);
  };
  auto first = open_sqlite_store(path);
  REQUIRE(first->claim(request("a0"), k_alive).verdict == Verdict::claim);
  CHECK(wal_size() == 512 * 1024);
  // Two connections take turns; each one's idea of the file's end is stale at every turn.
  auto second = open_sqlite_store(path);
  for (int i = 1; i < 40; ++i) {
    Store& s = i % 2 ? *second : *first;
    REQUIRE(s.claim(request("a" + std::to_string(i)), k_alive).verdict == Verdict::claim);
  }
  // Extended by whole steps of 512 KiB, past the first.
  CHECK(wal_size() > 512 * 1024);
  CHECK(wal_size() % (512 * 1024) == 0);
  // Closed and opened again: the WAL's index is rebuilt from the file, frame by frame, and stops
  // at the first frame that is not valid: zeros written over a frame would lose every later one.
  first.reset();
  second.reset();
  auto reopened = open_sqlite_store(path);
  for (int i = 0; i < 40; ++i) {
    CAPTURE(i);
    CHECK(reopened->get("a" + std::to_string(i)).has_value());
  }
  RawDb raw(path);
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
}

TEST_CASE("store: records survive reopening; WAL journal", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    auto store = open_sqlite_store(path);
    put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 5);
    REQUIRE(store->claim(request("r"), k_alive).verdict == Verdict::claim);
  }
  auto store = open_sqlite_store(path);
  auto r = store->get("k");
  REQUIRE(r.has_value());
  CHECK(r->status == Status::succeeded);
  CHECK(store->get("r")->status == Status::running);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
  CHECK(raw.text("PRAGMA user_version") != "0");
}

TEST_CASE("store: folder 0700 and files 0600 under umask 022", "[store][files]") {
  TempDir dir;
  UmaskGuard mask(022);
  const std::string state = dir / "state";
  const std::string folder = state + "/idem";
  const std::string path = folder + "/idem.db";
  auto store = open_sqlite_store(path);
  put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 1);  // makes the WAL and shm exist

  CHECK(mode_of(state) == 0700);
  CHECK(mode_of(folder) == 0700);
  CHECK(mode_of(path) == 0600);
  REQUIRE(exists(path + "-wal"));
  CHECK(mode_of(path + "-wal") == 0600);
  REQUIRE(exists(path + "-shm"));
  CHECK(mode_of(path + "-shm") == 0600);
}

TEST_CASE("store: an existing world-readable database is made private", "[store][files]") {
  TempDir dir;
  UmaskGuard mask(022);
  const std::string path = dir / "idem.db";
  { std::ofstream create(path); }
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  auto store = open_sqlite_store(path);
  CHECK(mode_of(path) == 0600);
  REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
}

TEST_CASE("store: a symlinked database path is refused", "[store][files]") {
  TempDir dir;
  const std::string real = dir / "real.db";
  const std::string link = dir / "link.db";
  {
    auto store = open_sqlite_store(real);
    REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
  }
  REQUIRE(::symlink(real.c_str(), link.c_str()) == 0);
  CHECK_THROWS_AS(open_sqlite_store(link), StoreError);
  try {
    open_sqlite_store(link);
  } catch (const StoreError& e) {
    CHECK(e.code() == idem::k_exit_store);
    CHECK(std::string(e.what()).find("symlink") != std::string::npos);
  }
  // The target is untouched and still usable.
  auto store = open_sqlite_store(real);
  CHECK(store->get("k").has_value());

  // A dangling symlink is refused too, and nothing is created at its target.
  const std::string dangling = dir / "dangling.db";
  const std::string target = dir / "target.db";
  REQUIRE(::symlink(target.c_str(), dangling.c_str()) == 0);
  CHECK_THROWS_AS(open_sqlite_store(dangling), StoreError);
  CHECK_FALSE(exists(target));
}

TEST_CASE("store: a database owned by another user is refused", "[store][files]") {
  if (::geteuid() != 0) {
    WARN("needs root to give a file to another user; skipped");
    return;
  }
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    auto store = open_sqlite_store(path);
    REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
  }
  REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  try {
    open_sqlite_store(path);
  } catch (const StoreError& e) {
    CHECK(std::string(e.what()).find("owned by uid 65534") != std::string::npos);
  }
}

TEST_CASE("store: a schema newer than this binary is refused", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    // A newer idem's store: idem's application id, tables this idem does not know.
    RawDb raw(path);
    raw.exec(
        "CREATE TABLE future (x); PRAGMA application_id = 1229210957;"
        "PRAGMA user_version = 999;");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  try {
    open_sqlite_store(path);
  } catch (const StoreError& e) {
    CHECK(e.code() == idem::k_exit_store);
    CHECK(std::string(e.what()).find("999") != std::string::npos);
  }
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "999");  // left as it was
}

namespace {

// Opens PATH as a store, expecting the refusal of a file that is not an idem store because WHY;
// the file is then as it was: the same bytes, the same mode, nothing beside it.
void check_refused_as_foreign(const std::string& path, const std::string& why) {
  const std::string before = bytes_of(path);
  const mode_t mode = mode_of(path);
  try {
    open_sqlite_store(path);
    FAIL("a file that is not an idem store was opened");
  } catch (const StoreError& e) {
    CHECK(e.code() == idem::k_exit_store);
    CHECK_FALSE(e.transient());
    CHECK(std::string(e.what()) ==
          "store " + path + " is not an idem store (" + why + "): give idem a file of its own");
  }
  CHECK(bytes_of(path) == before);
  CHECK(mode_of(path) == mode);
  CHECK_FALSE(exists(path + "-wal"));
  CHECK_FALSE(exists(path + "-shm"));
  CHECK_FALSE(exists(path + "-journal"));
}

}  // namespace

TEST_CASE("store: a file of another application is refused and left as it was", "[store][files]") {
  TempDir dir;
  UmaskGuard mask(022);
  const std::string path = dir / "other.db";
  {
    RawDb raw(path);
    raw.exec("CREATE TABLE records (x); PRAGMA application_id = 305419896;");  // 0x12345678
  }
  REQUIRE(::chmod(path.c_str(), 0644) == 0);  // not made private: it is not idem's
  check_refused_as_foreign(path, "it holds another application_id 0x12345678");

  // One whose id reads as negative, in WAL mode: reading it makes a -wal and -shm, which the
  // refusal takes away again.
  const std::string wal = dir / "wal.db";
  {
    RawDb raw(wal);
    raw.exec(
        "PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);"
        "PRAGMA application_id = -559038737;");  // 0xdeadbeef
  }
  REQUIRE_FALSE(exists(wal + "-wal"));
  check_refused_as_foreign(wal, "it holds another application_id 0xdeadbeef");
  RawDb raw(wal);
  CHECK(raw.text("PRAGMA journal_mode") == "wal");
  CHECK(raw.text("SELECT x FROM t") == "1");
}

TEST_CASE("store: a file with tables that are not idem's is refused", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "app.db";
  {
    RawDb raw(path);
    raw.exec("CREATE TABLE foo (x); CREATE TABLE bar (x); INSERT INTO bar VALUES ('kept');");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  check_refused_as_foreign(path, "it holds other tables: bar, foo");
  // idem's own tables beside others do not make it idem's; only the first few are named.
  const std::string mixed = dir / "mixed.db";
  {
    RawDb raw(mixed);
    raw.exec(
        "CREATE TABLE records (key TEXT PRIMARY KEY); CREATE TABLE outputs (key TEXT);"
        "CREATE TABLE a (x); CREATE TABLE b (x); CREATE TABLE c (x); CREATE VIEW d AS "
        "SELECT 1; PRAGMA user_version = 7;");
  }
  check_refused_as_foreign(mixed, "it holds other tables: a, b, c and 1 more");
}

TEST_CASE("store: a file with a user_version but no records table is refused", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "versioned.db";
  {
    RawDb raw(path);
    raw.exec("PRAGMA user_version = 3;");
  }
  check_refused_as_foreign(path, "it has user_version 3 but no records table");
  const std::string outputs_only = dir / "outputs.db";
  {
    RawDb raw(outputs_only);
    raw.exec("CREATE TABLE outputs (key TEXT); PRAGMA user_version = 6;");
  }
  check_refused_as_foreign(outputs_only, "it has user_version 6 but no records table");
}

TEST_CASE("store: a new store carries idem's application id", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    auto store = open_sqlite_store(path);
    REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
  }
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA application_id") == k_idem_application_id);
  }
  // So does an empty file given to idem.
  const std::string empty = dir / "empty.db";
  { std::ofstream create(empty); }
  REQUIRE(::chmod(empty.c_str(), 0600) == 0);
  open_sqlite_store(empty);
  RawDb raw(empty);
  CHECK(raw.text("PRAGMA application_id") == k_idem_application_id);
}

TEST_CASE("store: a current store made before application ids gets idem's", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  { put_finished(*open_sqlite_store(path), "k", k_t0, Status::succeeded, k_t0 + 1); }
  {
    RawDb raw(path);
    raw.exec("PRAGMA application_id = 0;");
  }
  auto store = open_sqlite_store(path);
  CHECK(store->get("k").has_value());
  RawDb raw(path);
  CHECK(raw.text("PRAGMA application_id") == k_idem_application_id);
}

TEST_CASE("store: an older (empty, version 0) database is migrated in place", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec("PRAGMA user_version = 0;");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  REQUIRE(store->claim(request("k"), k_alive).verdict == Verdict::claim);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == current_version());
}

TEST_CASE("store: a version 1 store keeps its records when migrated to version 2",
          "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    // The version 1 schema, frozen as it was published.
    RawDb raw(path);
    raw.exec(fixture("schema/sqlite-v1.sql"));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  auto old = store->get("old");
  REQUIRE(old);
  CHECK(old->attempt == 3);
  CHECK(old->exit_code == 7);
  CHECK_FALSE(old->response);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == current_version());
}

TEST_CASE("store: a corrupt file is a StoreError, not a crash", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    std::ofstream garbage(path, std::ios::binary);
    for (int i = 0; i < 4096; ++i) garbage.put(char(i * 31 + 7));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
}

TEST_CASE("store: a folder in place of the database is refused", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  REQUIRE(::mkdir(path.c_str(), 0700) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  // A file where the folder should be.
  const std::string blocker = dir / "file";
  { std::ofstream create(blocker); }
  CHECK_THROWS_AS(open_sqlite_store(blocker + "/idem.db"), StoreError);
}

TEST_CASE("store: concurrent claims from several connections: exactly one wins",
          "[store][concurrency]") {
  TempDir dir;
  // Either every round races on a database file nobody has opened yet (creation, WAL switch and
  // migration race too), or all rounds share one file created up front.
  const bool fresh_file = GENERATE(true, false);
  const std::string shared_path = dir / "idem.db";
  if (!fresh_file) open_sqlite_store(shared_path);

  constexpr int k_threads = 8;
  constexpr int k_rounds = 10;
  for (int round = 0; round < k_rounds; ++round) {
    const std::string key = "race-" + std::to_string(round);
    const std::string path =
        fresh_file ? dir / ("fresh-" + std::to_string(round) + ".db") : shared_path;
    auto claims = race(k_threads, [&](int t) {
      // Opening races too (a fresh file is created and migrated by whoever comes first).
      return open_sqlite_store(path)->claim(request(key, k_t0, 1000 + t), k_alive);
    });
    const std::vector<int> winners = claims.which(
        [](const ClaimResult& c) { return c.verdict == Verdict::claim && c.attempt == 1; });
    INFO("round " << round << (fresh_file ? " (fresh file)" : " (existing file)") << "\n"
                  << claims.errors);
    CHECK(claims.errors == "");
    CHECK(claims.count(verdict_is(Verdict::claim)) == 1);
    REQUIRE(winners.size() == 1);
    CHECK(claims.count(verdict_is(Verdict::running)) == k_threads - 1);

    auto store = open_sqlite_store(path);
    auto r = store->get(key);
    REQUIRE(r.has_value());
    CHECK(r->status == Status::running);
    CHECK(r->attempt == 1);
    CHECK(r->owner.pid == 1000 + winners[0]);
    RawDb raw(path);
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
}

TEST_CASE("store: default_db_path", "[store]") {
  struct Env {
    const char* name;
    std::optional<std::string> saved;
  };
  std::vector<Env> saved;
  for (const char* name : {"IDEM_DB", "XDG_STATE_HOME", "HOME"}) {
    const char* v = std::getenv(name);
    saved.push_back({name, v ? std::optional<std::string>(v) : std::nullopt});
  }
  setenv("HOME", "/home/u", 1);
  unsetenv("XDG_STATE_HOME");
  unsetenv("IDEM_DB");
  CHECK(idem::store::default_db_path() == "/home/u/.local/state/idem/idem.db");
  setenv("XDG_STATE_HOME", "/xdg", 1);
  CHECK(idem::store::default_db_path() == "/xdg/idem/idem.db");
  setenv("XDG_STATE_HOME", "relative", 1);  // not absolute: ignored, as the XDG spec says
  CHECK(idem::store::default_db_path() == "/home/u/.local/state/idem/idem.db");
  setenv("IDEM_DB", "/some/where.db", 1);
  CHECK(idem::store::default_db_path() == "/some/where.db");
  setenv("IDEM_DB", "", 1);
  CHECK(idem::store::default_db_path() == "/home/u/.local/state/idem/idem.db");
  unsetenv("IDEM_DB");
  unsetenv("XDG_STATE_HOME");
  // Without HOME (cron under env -i), the home of the user's passwd entry, as git finds it.
  unsetenv("HOME");
  const passwd* entry = getpwuid(getuid());
  REQUIRE(entry != nullptr);
  CHECK(idem::store::default_db_path() ==
        std::string(entry->pw_dir) + "/.local/state/idem/idem.db");

  for (const auto& env : saved) {
    if (env.saved)
      setenv(env.name, env.saved->c_str(), 1);
    else
      unsetenv(env.name);
  }
}

namespace {

// The plan's lines (EXPLAIN QUERY PLAN's detail column) for SQL run against the store at PATH.
std::vector<std::string> plan_of(const std::string& path, const std::string& sql) {
  RawDb raw(path);
  sqlite3_stmt* stmt = nullptr;
  const std::string explain = "EXPLAIN QUERY PLAN " + sql;
  REQUIRE(sqlite3_prepare_v2(raw.db, explain.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  std::vector<std::string> lines;
  while (sqlite3_step(stmt) == SQLITE_ROW)
    lines.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3)));
  sqlite3_finalize(stmt);
  return lines;
}

bool uses_only(const std::vector<std::string>& plan, const std::string& index) {
  for (const auto& line : plan) {
    // "SCAN records" without an index, or a sort, is what must not happen.
    if (line.find("TEMP B-TREE") != std::string::npos) return false;
    if (line.find("INDEX " + index) == std::string::npos) return false;
  }
  return !plan.empty();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "; ";
  return out;
}

}  // namespace

TEST_CASE("store: gc reads its indexes, never scans the table", "[store][plan]") {
  namespace sql = idem::store::sqlite_sql;
  TempDir dir;
  const std::string path = dir / "idem.db";
  open_sqlite_store(path);
  for (const char* what : {"rowid", "count(*)"}) {
    auto expired = plan_of(path, sql::gc_expired(what) + " LIMIT 500");
    INFO(joined(expired));
    CHECK(uses_only(expired, "records_expiring"));
    CHECK(joined(expired).find("(expires_at<?)") != std::string::npos);  // a range, not a scan
    auto ended = plan_of(path, sql::gc_ended(what) + " LIMIT 500");
    INFO(joined(ended));
    CHECK(uses_only(ended, "records_by_end"));
    CHECK(joined(ended).find("<expr><?") != std::string::npos);
  }
}

TEST_CASE("store: ls reads newest first from an index: no full scan, no sort", "[store][plan]") {
  namespace sql = idem::store::sqlite_sql;
  TempDir dir;
  const std::string path = dir / "idem.db";
  open_sqlite_store(path);
  ListQuery q;
  q.limit = 20;
  auto check = [&](const ListQuery& query) {
    auto plan = plan_of(path, sql::list(query, false));
    INFO(sql::list(query, false) + " => " + joined(plan));
    CHECK(uses_only(plan, "records_by_recent"));
  };
  check(q);
  q.statuses = {Status::failed, Status::abandoned};
  check(q);
  q.include_expired = true;
  check(q);
  q.prefix = "backup-";
  check(q);
  q.statuses.clear();
  q.keys_only = true;
  check(q);
  // The keys alone, expired ones included, come from the index without touching the table.
  q.prefix.clear();
  CHECK(joined(plan_of(path, sql::list(q, false))).find("COVERING INDEX records_by_recent") !=
        std::string::npos);
  // A rare prefix is a range of the key index (then sorted: it holds few rows).
  q.prefix = "backup-";
  auto by_key = joined(plan_of(path, sql::list(q, true)));
  INFO(by_key);
  CHECK(by_key.find("sqlite_autoindex_records_1 (key>? AND key<?)") != std::string::npos);
}

TEST_CASE("store: unfinished records are listed from their own index", "[store][plan]") {
  namespace sql = idem::store::sqlite_sql;
  TempDir dir;
  const std::string path = dir / "idem.db";
  open_sqlite_store(path);
  auto plan = [&](const ListQuery& query, bool by_key) {
    auto lines = plan_of(path, sql::list(query, by_key));
    INFO(sql::list(query, by_key) + " => " + joined(lines));
    return lines;
  };
  const std::vector<std::vector<Status>> unfinished{{Status::running},
                                                    {Status::abandoned},
                                                    {Status::running, Status::abandoned},
                                                    {Status::abandoned, Status::running}};
  for (const auto& statuses : unfinished)
    for (const char* prefix : {"", "backup-"})
      for (bool keys_only : {false, true})
        for (bool by_key : {false, true}) {  // a rare prefix too: the unfinished index is smaller
          ListQuery q;
          q.limit = 20;
          q.statuses = statuses;
          q.prefix = prefix;
          q.keys_only = keys_only;
          CHECK(sql::lists_unfinished_only(q));
          CHECK(uses_only(plan(q, by_key), "records_unfinished"));
        }
  // Finished records asked for too, or expired ones: the newest-first index, as before.
  ListQuery q;
  q.statuses = {Status::running, Status::failed};
  CHECK_FALSE(sql::lists_unfinished_only(q));
  CHECK(uses_only(plan(q, false), "records_by_recent"));
  q.statuses = {Status::running};
  q.include_expired = true;
  CHECK_FALSE(sql::lists_unfinished_only(q));
  CHECK(uses_only(plan(q, false), "records_by_recent"));
  q.include_expired = false;
  q.live = false;
  CHECK_FALSE(sql::lists_unfinished_only(q));
  q.live = true;
  q.statuses.clear();
  CHECK_FALSE(sql::lists_unfinished_only(q));
}

TEST_CASE("store: unfinished records list as a walk of every record would", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  // Finished records around unfinished ones, two of each status a second apart, keys tied.
  for (int i = 0; i < 40; ++i) {
    const std::string n = std::to_string(i);
    const int64_t t = k_t0 + (i / 2) * 1000;
    if (i % 10 == 3 || i % 10 == 4) {
      REQUIRE(store->claim(request("job-" + n, t), k_alive).verdict == Verdict::claim);
      if (i % 10 == 4) REQUIRE(store->mark_abandoned("job-" + n, 1));
    } else {
      put_finished(*store, (i % 3 == 0 ? "job-" : "other-") + n, t,
                   i % 2 ? Status::failed : Status::succeeded, t + 5);
    }
  }
  auto walked = [&](ListQuery q) {  // the same listing through records_by_recent
    std::vector<std::string> keys;
    const std::vector<Status> wanted = q.statuses;
    q.statuses.clear();
    for (const auto& r : listed(*store, q))
      if (std::find(wanted.begin(), wanted.end(), r.status) != wanted.end()) keys.push_back(r.key);
    return keys;
  };
  ListQuery q;
  q.now_ms = k_t0 + 100000;
  for (const auto& statuses : std::vector<std::vector<Status>>{
           {Status::running}, {Status::abandoned}, {Status::running, Status::abandoned}})
    for (const char* prefix : {"", "job-", "job-3", "other-"}) {
      q.statuses = statuses;
      q.prefix = prefix;
      INFO(prefix);
      CHECK(keys_of(listed(*store, q)) == walked(q));
    }
  q.prefix.clear();
  q.statuses = {Status::running, Status::abandoned};
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"job-34", "job-33", "job-24",
                                                               "job-23", "job-14", "job-13",
                                                               "job-4", "job-3"});
  q.limit = 3;
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"job-34", "job-33", "job-24"});
  // A finish takes its record out of the index.
  REQUIRE(store->finish("job-33", 1, outcome(Status::succeeded, 0, k_t0 + 20000)));
  q.statuses = {Status::running};
  q.limit = 0;
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"job-23", "job-13", "job-3"});
}

TEST_CASE("store: prefix_end bounds a prefix as a key range", "[store]") {
  using idem::store::sqlite_sql::prefix_end;
  CHECK(prefix_end("abc") == "abd");
  CHECK(prefix_end("a\xff") == "b");
  CHECK(prefix_end("\xff\xff").empty());
  CHECK(prefix_end("").empty());
  CHECK(prefix_end("x%") == "x&");
}

TEST_CASE("store: a common prefix and a rare one list the same way", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path);
  {
    // 12,000 records "common-N" (more than the store sorts) and three "rare-N"; same start times
    // in pairs, so the key decides ties.
    RawDb raw(path);
    raw.exec(R"sql(
      WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 12000)
      INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                           owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at)
      SELECT 'common-' || i, 'fp', 'run', 'succeeded', 1, 'h', 'b', 1, 1, 1000 + i / 2,
             2000 + i, 1000, 1790000000000 + 86400000 FROM n;
      INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                           owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at)
      VALUES ('rare-1', 'fp', 'run', 'succeeded', 1, 'h', 'b', 1, 1, 5, 6, 1, 1790000000000 + 86400000),
             ('rare-2', 'fp', 'run', 'failed', 1, 'h', 'b', 1, 1, 7, 8, 1, 1790000000000 + 86400000),
             ('rare-0', 'fp', 'run', 'succeeded', 1, 'h', 'b', 1, 1, 7, 8, 1, 1);)sql");
  }
  ListQuery q;
  q.now_ms = k_t0;
  q.prefix = "rare-";
  using V = std::vector<std::string>;
  CHECK(keys_of(listed(*store, q)) == V{"rare-2", "rare-1"});
  q.include_expired = true;
  CHECK(keys_of(listed(*store, q)) == V{"rare-0", "rare-2", "rare-1"});
  q.limit = 1;
  CHECK(keys_of(listed(*store, q)) == V{"rare-0"});
  q.prefix = "common-";
  q.limit = 4;
  CHECK(keys_of(listed(*store, q)) ==
        V{"common-11998", "common-11999", "common-11996", "common-11997"});
  q.keys_only = true;
  auto keys = listed(*store, q);
  CHECK(keys_of(keys) == V{"common-11998", "common-11999", "common-11996", "common-11997"});
  CHECK(keys[0].fingerprint.empty());  // keys only
}

TEST_CASE("store: a version 2 store keeps its records when migrated to version 3",
          "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    // The version 2 schema, frozen as it was published.
    RawDb raw(path);
    raw.exec(fixture("schema/sqlite-v2.sql"));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  auto kept = store->get("kept");
  REQUIRE(kept);
  CHECK(kept->attempt == 2);
  REQUIRE(kept->response);
  CHECK(kept->response->status == 201);
  CHECK(kept->response->headers.empty());  // it had no content type
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA user_version") == current_version());
    CHECK(raw.text("SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE "
                   "type = 'index' AND name LIKE 'records%' ORDER BY name)") ==
          "records_by_end records_by_kind records_by_recent records_by_result "
          "records_by_status records_expiring records_group_runner records_queue "
          "records_unfinished");
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
  ListQuery q;
  q.now_ms = 10000;
  q.include_expired = true;
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"running", "kept", "expired"});
  GcQuery gc;
  gc.now_ms = 10000;
  CHECK(store->gc(gc).removed == 1);
  CHECK_FALSE(store->get("expired"));
  gc.older_than_ms = 1;
  CHECK(store->gc(gc).removed == 1);  // "kept"; never "running"
  CHECK(store->get("running"));
}

TEST_CASE("store: folders above the database may be symlinks", "[store][files]") {
  TempDir dir;
  const std::string real = dir / "real";
  REQUIRE(::mkdir(real.c_str(), 0700) == 0);
  REQUIRE(::symlink(real.c_str(), (dir / "link").c_str()) == 0);
  // /var/run -> /run, or a symlinked $HOME: an existing folder behind a link, and folders to
  // create behind one.
  for (const std::string& path : {dir / "link/idem.db", dir / "link/state/idem/idem.db"}) {
    INFO(path);
    {
      auto store = open_sqlite_store(path);
      put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 1);
    }
    auto store = open_sqlite_store(path);
    CHECK(store->get("k"));
    CHECK(mode_of(path) == 0600);
  }
  CHECK(exists(real + "/idem.db"));
  CHECK(mode_of(real + "/state/idem") == 0700);
  // The database file itself, or its WAL, as a symlink stays refused.
  REQUIRE(::symlink((real + "/idem.db").c_str(), (dir / "direct.db").c_str()) == 0);
  CHECK_THROWS_AS(open_sqlite_store(dir / "direct.db"), StoreError);
  REQUIRE(::symlink((real + "/elsewhere").c_str(), (dir / "w.db-wal").c_str()) == 0);
  CHECK_THROWS_AS(open_sqlite_store(dir / "w.db"), StoreError);
  CHECK_FALSE(exists(dir / "w.db"));
  CHECK_FALSE(exists(real + "/elsewhere"));
}

TEST_CASE("store: a failed open leaves nothing behind", "[store][files]") {
  TempDir dir;
  // The file is created, then SQLite cannot open its journal (a folder is in the way): the empty
  // file idem made is taken back.
  const std::string path = dir / "idem.db";
  REQUIRE(::mkdir((path + "-journal").c_str(), 0700) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  CHECK_FALSE(exists(path));
  CHECK_FALSE(exists(path + "-wal"));
  CHECK_FALSE(exists(path + "-shm"));
  // Folders idem created for a file it then cannot create are taken back too; existing ones stay.
  const std::string long_name(300, 'x');
  CHECK_THROWS_AS(open_sqlite_store(dir / "new/deeper/" + long_name), StoreError);
  CHECK_FALSE(exists(dir / "new"));
  CHECK(exists(dir.path()));
  // An existing store that fails to open is never removed.
  {
    auto store = open_sqlite_store(dir / "kept.db");
    put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 1);
  }
  REQUIRE(::chmod((dir / "kept.db").c_str(), 0600) == 0);
  {
    RawDb raw(dir / "kept.db");
    raw.exec("PRAGMA user_version = 999");
  }
  CHECK_THROWS_AS(open_sqlite_store(dir / "kept.db"), StoreError);
  CHECK(exists(dir / "kept.db"));
}

TEST_CASE("store: the linked SQLite keeps rows as large as captured output may make them",
          "[store]") {
  TempDir dir;
  RawDb raw(dir / "x.db");
  CHECK(sqlite3_limit(raw.db, SQLITE_LIMIT_LENGTH, -1) >= idem::core::k_store_row_limit);
  CHECK(idem::core::k_max_encoded_output < idem::core::k_store_row_limit);
}

TEST_CASE("store: a version 3 store keeps its records when migrated to version 4",
          "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    // The version 3 schema, frozen as it was published (the version 2 table, its indexes
    // replaced, process groups added).
    RawDb raw(path);
    raw.exec(fixture("schema/sqlite-v3.sql"));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  auto done = store->get("done");
  REQUIRE(done);
  CHECK(done->attempt == 3);
  CHECK(done->status == Status::succeeded);
  // A record claimed before tokens and leases: no token (nothing can match it), no lease (only
  // its pid decides), and it is as alive as before.
  auto running = store->get("running");
  REQUIRE(running);
  CHECK(running->attempt_token.empty());
  CHECK(running->lease_expires_ms == 0);
  CHECK(running->process_group.pgid == 7);
  CHECK_FALSE(store->heartbeat("running", "", 1000, 6000));
  CHECK_FALSE(store->release("running", ""));
  ClaimRequest again = request("running", k_t0);
  again.fingerprint = "fp";
  CHECK(store->claim(again, k_alive).verdict == Verdict::running);
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA user_version") == current_version());
    CHECK(raw.text("SELECT count(*) FROM records WHERE attempt_token = '' AND lease_expires IS "
                   "NULL") == "2");
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
  // New claims get a token and, when asked, a lease.
  ClaimRequest fresh = request("new", k_t0);
  fresh.lease_ms = 30000;
  ClaimResult c = store->claim(fresh, k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  CHECK(c.attempt_token.size() == 32);
  CHECK(store->get("new")->lease_expires_ms == k_t0 + 30000);
}

TEST_CASE("store: the token is kept, but never listed", "[store]") {
  TempDir dir;
  auto store = open_sqlite_store(dir / "idem.db");
  ClaimResult c = store->claim(request("k"), k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  ListQuery q;
  q.now_ms = k_t0;
  auto records = listed(*store, q);
  REQUIRE(records.size() == 1);
  CHECK(records[0].attempt_token.empty());  // ls has no use for the capability
  CHECK(store->get("k")->attempt_token == c.attempt_token);
}

namespace {

// The version 4 schema, frozen as it was published (version 3's table plus the attempt's
// token and lease), with records of each kind a version 4 daemon and CLI wrote.
constexpr const char* k_version_4 = "schema/sqlite-v4.sql";

}  // namespace

TEST_CASE("store: a version 4 store's HTTP status and content type become its responses",
          "[store][files]") {
  using idem::core::Response;
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_4));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  auto response_of = [&](const std::string& key) {
    auto r = store->get(key);
    REQUIRE(r);
    return r->response;
  };
  CHECK(response_of("/h#json") == Response{200, {{"Content-Type", "application/json"}}});
  CHECK(response_of("/h#quoted") == Response{200, {{"Content-Type", R"(text/plain; x="a\b")"}}});
  CHECK(response_of("/h#problem") == Response{500, {{"Content-Type", "application/problem+json"}}});
  CHECK(response_of("/h#daemon-error") == Response{500, {}});  // no content type: no header
  CHECK_FALSE(response_of("cli"));
  // The rest of a record is as it was; the body stays the stored stdout.
  auto json = store->get("/h#json");
  auto out = idem::core::CapturedOutput::decode(json->output);
  REQUIRE(out);
  CHECK(out->stream_bytes(idem::core::Stream::out) == "{\"ok\":true}\n");
  CHECK(json->output_bytes == 12);
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA user_version") == current_version());
    CHECK(raw.text("SELECT count(*) FROM pragma_table_info('records') WHERE name IN "
                   "('http_status', 'content_type')") == "0");
    // The migration writes the very text the store does.
    CHECK(raw.text("SELECT response FROM records WHERE key = '/h#json'") ==
          idem::core::encode_response(Response{200, {{"Content-Type", "application/json"}}}));
    CHECK(raw.text("SELECT count(*) FROM records WHERE response IS NULL") == "1");
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
  // A duplicate is replayed with it.
  ClaimRequest again = request("/h#json", 2500);  // before the record expires
  again.fingerprint = "fp";
  ClaimResult c = store->claim(again, k_alive);
  REQUIRE(c.verdict == Verdict::replay);
  CHECK(c.existing->response == Response{200, {{"Content-Type", "application/json"}}});
}

TEST_CASE("store: a migration that fails leaves the version 4 store as it was", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_4));
    // An index on a column the step drops makes its DROP COLUMN fail, after its UPDATE ran.
    raw.exec("CREATE INDEX by_http_status ON records (http_status);");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "4");
  CHECK(raw.text("SELECT count(*) FROM pragma_table_info('records') WHERE name = 'response'") ==
        "0");
  CHECK(raw.text("SELECT group_concat(http_status || ' ' || content_type, ',') FROM "
                 "(SELECT * FROM records WHERE http_status IS NOT NULL ORDER BY key)") ==
        "500 ,200 application/json,500 application/problem+json,200 text/plain; x=\"a\\b\"");
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
}

namespace {

// The version 5 schema, frozen as it was published (version 4's table with the stored
// answer for the HTTP status and content type, the output in the record), with outputs of each
// kind: two streams interleaved, binary and truncated, empty, none (NULL), a running attempt.
constexpr const char* k_version_5 = "schema/sqlite-v5.sql";

const std::string k_both_output("\x01\x01\x03\0\0\0abc\x02\x02\0\0\0e!\x01\x02\0\0\0d\n", 23);
const std::string k_binary_output("\x01\x01\x04\0\0\0\0\n\0\xff", 10);

}  // namespace

TEST_CASE("store: a version 5 store's outputs move to their own table", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_5));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA user_version") == current_version());
    CHECK(raw.text("SELECT count(*) FROM pragma_table_info('records') WHERE name = 'output'") ==
          "0");
    // Only outputs with bytes get a row, under the attempt that wrote them.
    CHECK(raw.text("SELECT group_concat(key || ' ' || attempt, ',') FROM "
                   "(SELECT * FROM outputs ORDER BY key)") == "binary 1,both 2");
    CHECK(raw.text("SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE "
                   "type IN ('index', 'trigger') AND tbl_name = 'records' ORDER BY name)") ==
          "attempts_of_deleted outputs_of_deleted outputs_of_replaced records_by_end "
          "records_by_kind records_by_recent records_by_result records_by_status "
          "records_expiring records_group_runner records_queue records_unfinished "
          "serial_lines_delete serial_lines_insert serial_lines_update "
          "sqlite_autoindex_records_1");
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
  // Every record reads as it did, byte for byte.
  auto both = store->get("both");
  REQUIRE(both);
  CHECK(both->output == k_both_output);
  CHECK(both->output_bytes == 7);
  CHECK(both->attempt == 2);
  auto binary = store->get("binary");
  REQUIRE(binary);
  CHECK(binary->output == k_binary_output);
  CHECK(binary->output_truncated);
  REQUIRE(binary->response);
  CHECK(binary->response->status == 200);
  CHECK(store->get("empty")->output.empty());
  CHECK(store->get("none")->output.empty());
  CHECK(store->get("running")->status == Status::running);
  // A duplicate replays the moved output.
  ClaimRequest again = request("both");
  again.fingerprint = "fp";
  ClaimResult replay = store->claim(again, k_alive);
  REQUIRE(replay.verdict == Verdict::replay);
  CHECK(replay.existing->output == k_both_output);
  // The expired one is claimed afresh: its old output goes with the attempt it belonged to.
  ClaimRequest fresh = request("binary");
  fresh.fingerprint = "fp";
  REQUIRE(store->claim(fresh, k_alive).verdict == Verdict::claim);
  CHECK(store->get("binary")->output.empty());
  RawDb raw(path);
  CHECK(raw.text("SELECT group_concat(key, ',') FROM outputs") == "both");
}

TEST_CASE("store: a migration that fails leaves the version 5 store as it was", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_5));
    // An index on the column the step drops makes its DROP COLUMN fail, after its INSERT ran.
    raw.exec("CREATE INDEX by_output ON records (output);");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "5");
  CHECK(raw.text("SELECT count(*) FROM sqlite_master WHERE name = 'outputs'") == "0");
  CHECK(raw.text("SELECT hex(output) FROM records WHERE key = 'both'") ==
        "010103000000616263020200000065210102000000640A");
  CHECK(raw.text("SELECT count(*) FROM records") == "5");
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
}

TEST_CASE("store: a schema one newer than this binary's is refused, its outputs untouched",
          "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  const std::string newer = std::to_string(idem::store::sqlite_sql::k_schema_version + 1);
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_5));
    raw.exec(("PRAGMA user_version = " + newer + ";").c_str());
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  try {
    open_sqlite_store(path);
    FAIL("a version " + newer + " store was opened");
  } catch (const StoreError& e) {
    CHECK(std::string(e.what()).find("schema version " + newer +
                                     ", newer than this idem understands (" +
                                     std::to_string(idem::store::sqlite_sql::k_schema_version) +
                                     ")") != std::string::npos);
  }
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == newer);
  CHECK(raw.text("SELECT count(*) FROM sqlite_master WHERE name = 'outputs'") == "0");
}

namespace {

// The version 6 schema, frozen as it was published (version 5's table without its output,
// the outputs table and its triggers), with a failure, a success with output, and a running key.
constexpr const char* k_version_6 = "schema/sqlite-v6.sql";

}  // namespace

TEST_CASE("store: a version 6 store's records get the replay policy of a failure that runs again",
          "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_6));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  {
    // Made before idem set an application id.
    RawDb raw(path);
    CHECK(raw.text("PRAGMA application_id") == "0");
  }
  auto store = open_sqlite_store(path);
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA user_version") == current_version());
    CHECK(raw.text("PRAGMA application_id") == k_idem_application_id);
    CHECK(raw.text("SELECT group_concat(key || ' ' || replay_failures, ',') FROM "
                   "(SELECT * FROM records ORDER BY key)") == "done 0,failed 0,running 0");
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
  // Every record reads as it did; none holds the policy, so its failure runs again.
  auto failed = store->get("failed");
  REQUIRE(failed);
  CHECK_FALSE(failed->replay_failures);
  CHECK(failed->exit_code == 3);
  CHECK(failed->attempt == 2);
  auto done = store->get("done");
  REQUIRE(done);
  CHECK(done->output == std::string("\x01\x01\x03\0\0\0ok\n", 9));
  CHECK(store->get("running")->status == Status::running);
  ClaimRequest retry = request("failed");
  retry.fingerprint = "fp";
  retry.policy.replay_failures = true;
  retry.now_ms = 3000;
  // With the flag a later attempt still replays it; without, it runs again under its own policy.
  CHECK(store->claim(retry, k_alive).verdict == Verdict::replay);
  retry.policy.replay_failures = false;
  ClaimResult again = store->claim(retry, k_alive);
  REQUIRE(again.verdict == Verdict::claim);
  CHECK(again.attempt == 3);
}

TEST_CASE("store: a migration that fails leaves the version 6 store as it was", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_6));
    // A column of the step's name already there makes its ALTER TABLE fail.
    raw.exec("ALTER TABLE records ADD COLUMN replay_failures TEXT;");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "6");
  CHECK(raw.text("SELECT count(*) FROM records") == "3");
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
}

namespace {

// The version 7 schema, frozen as it was published (version 6 with the replay policy's
// column, no application id), with an abandoned record beside version 6's.
constexpr const char* k_version_7 = "schema/sqlite-v7.sql";

constexpr const char* k_unfinished_keys =
    "SELECT coalesce(group_concat(key, ','), '') FROM (SELECT key FROM records INDEXED BY "
    "records_unfinished WHERE status IN ('running', 'abandoned', 'queued') ORDER BY started_at "
    "DESC, key)";

}  // namespace

TEST_CASE("store: a version 7 store gets the index of its unfinished records", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_7));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA user_version") == current_version());
    CHECK(raw.text("PRAGMA application_id") == k_idem_application_id);
    CHECK(raw.text(k_unfinished_keys) == "crashed,running");
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
  // Every record reads as it did.
  CHECK(store->get("crashed")->status == Status::abandoned);
  CHECK(store->get("crashed")->replay_failures);
  CHECK(store->get("failed")->exit_code == 3);
  ListQuery q;
  q.now_ms = 3000;
  q.statuses = {Status::running, Status::abandoned};
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"crashed", "running"});
  // The index follows the records: a finish takes one out, a claim puts one in.
  REQUIRE(store->finish("running", 1, outcome(Status::succeeded, 0, 3000)));
  REQUIRE(store->claim(request("new", 2500), k_alive).verdict == Verdict::claim);
  RawDb raw(path);
  CHECK(raw.text(k_unfinished_keys) == "new,crashed");
}

TEST_CASE("store: a migration that fails leaves the version 7 store as it was", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_7));
    // An index of the step's name already there makes its CREATE INDEX fail.
    raw.exec("CREATE INDEX records_unfinished ON records (key);");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "7");
  CHECK(raw.text("PRAGMA application_id") == "0");
  CHECK(raw.text("SELECT sql FROM sqlite_master WHERE name = 'records_unfinished'") ==
        "CREATE INDEX records_unfinished ON records (key)");
  CHECK(raw.text("SELECT count(*) FROM records") == "4");
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
}

namespace {

// The version 8 schema, frozen as it was published (version 7 with the index of unfinished
// records, idem's application id): owners recorded by host name, boot id, pid and start alone.
constexpr const char* k_version_8 = "schema/sqlite-v8.sql";

}  // namespace

TEST_CASE("store: a version 8 store's owners get no machine id and no pid namespace",
          "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_8));
    CHECK(raw.text("PRAGMA application_id") == k_idem_application_id);
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA user_version") == current_version());
    CHECK(raw.text("SELECT group_concat(key || ' ' || quote(owner_machine_id) || ' ' || "
                   "owner_pid_ns, ',') FROM (SELECT * FROM records ORDER BY key)") ==
          "crashed '' 0,done '' 0,failed '' 0,running '' 0");
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
  // Every record reads as it did, its owner without the two: its pid is never judged
  // (proc::owner_gone), as nothing says which pid namespace it was a number of.
  auto running = store->get("running");
  REQUIRE(running);
  CHECK(running->status == Status::running);
  CHECK(running->owner.host == "h");
  CHECK(running->owner.boot_id == "b");
  CHECK(running->owner.machine_id.empty());
  CHECK(running->owner.pid_ns == 0);
  CHECK(store->get("crashed")->status == Status::abandoned);
  CHECK(store->get("failed")->exit_code == 3);
  ListQuery q;
  q.now_ms = 3000;
  q.statuses = {Status::running, Status::abandoned};
  CHECK(keys_of(listed(*store, q)) == std::vector<std::string>{"crashed", "running"});
  // A new attempt over one records its owner's machine id and namespace.
  ClaimRequest retry = request("failed", 3000);
  retry.fingerprint = "fp";
  ClaimResult again = store->claim(retry, k_alive);
  REQUIRE(again.verdict == Verdict::claim);
  CHECK(store->get("failed")->owner.machine_id == retry.owner.machine_id);
  CHECK(store->get("failed")->owner.pid_ns == retry.owner.pid_ns);
}

TEST_CASE("store: a migration that fails leaves the version 8 store as it was", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_8));
    // A column of the step's second name already there makes its second ALTER TABLE fail.
    raw.exec("ALTER TABLE records ADD COLUMN owner_pid_ns TEXT;");
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK_THROWS_AS(open_sqlite_store(path), StoreError);
  RawDb raw(path);
  CHECK(raw.text("PRAGMA user_version") == "8");
  CHECK(raw.text("SELECT count(*) FROM pragma_table_info('records') WHERE name = "
                 "'owner_machine_id'") == "0");
  CHECK(raw.text("SELECT count(*) FROM records") == "4");
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
}

TEST_CASE("store: an output lives as long as the attempt that wrote it", "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path);
  RawDb raw(path);
  auto outputs = [&] {
    return raw.text(
        "SELECT coalesce(group_concat(key || ' ' || attempt, ','), '') FROM "
        "(SELECT * FROM outputs ORDER BY key)");
  };
  auto finish_with = [&](const std::string& key, int64_t now, const std::string& bytes) {
    ClaimRequest req = request(key, now);
    ClaimResult c = store->claim(req, k_alive);
    REQUIRE(c.verdict == Verdict::claim);
    idem::core::CapturedOutput captured;
    captured.append(idem::core::Stream::out, bytes);
    Outcome o = outcome(Status::failed, 1, now + 1);
    o.output = captured.encode();
    o.output_bytes = captured.stored_bytes();
    REQUIRE(store->finish(key, c.attempt, o));
    CHECK(store->get(key)->output == o.output);
    return c.attempt;
  };
  finish_with("a", k_t0, "first");
  finish_with("b", k_t0, "b's");
  CHECK(outputs() == "a 1,b 1");
  CHECK(finish_with("a", k_t0 + 10, "second") == 2);  // the retry replaces attempt 1's
  CHECK(outputs() == "a 2,b 1");
  // A finish with no output writes no row; a stale one writes nothing.
  ClaimRequest retry = request("b", k_t0 + 20);
  ClaimResult c = store->claim(retry, k_alive);
  REQUIRE(c.verdict == Verdict::claim);
  CHECK(outputs() == "a 2");
  Outcome stale = outcome(Status::succeeded, 0, k_t0 + 21);
  stale.output = std::string("\x01\x01\x05\x00\x00\x00stale", 11);
  CHECK_FALSE(store->finish("b", c.attempt - 1, stale));
  REQUIRE(store->finish("b", c.attempt, outcome(Status::succeeded, 0, k_t0 + 22)));
  CHECK(outputs() == "a 2");
  CHECK(store->get("b")->output.empty());
  // rm and gc take a record's output with it.
  REQUIRE(store->remove("a", false, k_alive) == RemoveResult::removed);
  CHECK(outputs().empty());
  finish_with("g", k_t0, "collected");
  GcQuery q;
  q.now_ms = k_t0 + 2 * k_day;
  CHECK(store->gc(q).removed == 2);
  CHECK(outputs().empty());
  CHECK(raw.text("PRAGMA integrity_check") == "ok");
}

TEST_CASE("store: a stored response that does not decode reads as none", "[store][files]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    auto store = open_sqlite_store(path);
    put_finished(*store, "k", k_t0, Status::succeeded, k_t0 + 1);
  }
  {
    RawDb raw(path);
    raw.exec("UPDATE records SET response = '{\"status\": \"teapot\"' WHERE key = 'k'");
  }
  auto store = open_sqlite_store(path);
  auto r = store->get("k");
  REQUIRE(r);
  CHECK_FALSE(r->response);
  CHECK(r->status == Status::succeeded);
}

TEST_CASE("store: an unsynced claim and many threads' writers through one file", "[store]") {
  // ClaimRequest::sync = false only skips the claim's own fsync: the verdicts are the same, and
  // the connection's later commits are synced again. Writers of one file in this process queue
  // behind each other (no busy errors, whatever the busy timeout's polls would do).
  TempDir dir;
  const std::string path = dir / "idem.db";
  constexpr int k_threads = 8;
  constexpr int k_keys = 25;
  std::atomic<int> claimed{0}, unrecorded{0};
  auto writers = race(k_threads, [&](int t) {
    auto store = open_sqlite_store(path);
    for (int i = 0; i < k_keys; ++i) {
      ClaimRequest req;
      req.key = "k" + std::to_string(i);  // every thread claims every key
      req.fingerprint = std::string(64, 'a');
      req.owner = Owner{"host-a", "boot-1", 100 + t, 1};
      req.now_ms = 1'790'000'000'000;
      req.sync = (i % 2) == 0;
      ClaimResult r = store->claim(req, [](const Owner&) { return false; });
      if (r.verdict != Verdict::claim) continue;
      ++claimed;
      Outcome done;
      done.status = Status::succeeded;
      done.finished_ms = req.now_ms + 1;
      if (!store->finish(req.key, r.attempt, done)) ++unrecorded;
    }
  });
  CHECK(writers.errors == "");
  CHECK(unrecorded == 0);
  CHECK(claimed == k_keys);  // each key ran once
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM records WHERE status = 'succeeded'", -1, &stmt,
                     nullptr);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  CHECK(sqlite3_column_int(stmt, 0) == k_keys);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// The descriptors of this process whose target `pred` holds for (/proc/self/fd).
template <class Pred>
int open_files(Pred pred) {
  int n = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    if (pred(std::filesystem::read_symlink(fd.path(), error).string())) ++n;
  }
  return n;
}

// Temporary files SQLite holds open (removed from their folder as soon as made).
int sqlite_temp_files_open() {
  return open_files([](const std::string& t) { return t.find("etilqs_") != std::string::npos; });
}

// The descriptors this process holds on the file PATH itself (not its -wal or -shm): one a
// connection (SQLite keeps a closed connection's open while others hold locks on the file).
int connections_to(const std::string& path) {
  const std::string real = std::filesystem::canonical(path).string();
  return open_files([&](const std::string& t) { return t == real; });
}

// A long-lived process (the daemon) commits every batch of its stores on one connection of its
// own, opened with the first of them and closed with the last; its checkpoints follow that
// connection's commits, whichever store finished: the WAL stays bounded however the stores take
// turns (none of them commits on its own connection).
TEST_CASE("store: a long-lived process's stores commit on one writer, which checkpoints",
          "[store]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  const std::string output(200 * 1024, 'x');
  // Throws rather than asserts: threads run it too.
  auto finish_with_output = [&](Store& s, const std::string& key) {
    ClaimResult c = s.claim(request(key), k_alive);
    if (c.verdict != Verdict::claim) throw std::runtime_error(key + " not claimed");
    idem::core::CapturedOutput captured;
    captured.append(idem::core::Stream::out, output);
    Outcome o = outcome(Status::succeeded, 0, k_t0 + 1);
    o.output = captured.encode();
    o.output_bytes = captured.stored_bytes();
    if (!s.finish(key, c.attempt, o)) throw std::runtime_error(key + " not finished");
  };
  {
    auto a = open_sqlite_store(path, std::nullopt, std::nullopt, true);
    auto b = open_sqlite_store(path, std::nullopt, std::nullopt, true);
    CHECK(connections_to(path) == 3);  // a's, b's and their writer
    // 8 MiB of outputs by turns: the daemon's checkpoints (at 1 MiB) keep the WAL near that.
    for (int i = 0; i < 40; ++i) finish_with_output(i % 2 ? *b : *a, "seq-" + std::to_string(i));
    CHECK(wal_size(path) < 3 * 1024 * 1024);
    // Threads, each with a store of its own, at once: their writes share batches, each in a
    // savepoint whose journal (the pages earlier writes of the batch changed) stays in memory,
    // never a temporary file.
    std::atomic<bool> writing = true;
    std::atomic<int> temp_files_seen = 0;
    std::thread watcher([&] {
      while (writing) temp_files_seen = std::max(temp_files_seen.load(), sqlite_temp_files_open());
    });
    auto writers = race(16, [&](int t) {
      auto mine = open_sqlite_store(path, std::nullopt, std::nullopt, true);
      for (int i = 0; i < 40; ++i) {
        const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
        if (i % 8 == 0) {
          finish_with_output(*mine, key);
          continue;
        }
        ClaimResult c = mine->claim(request(key), k_alive);
        if (c.verdict != Verdict::claim ||
            !mine->finish(key, c.attempt, outcome(Status::succeeded, 0, k_t0 + 1)))
          throw std::runtime_error(key + " not claimed and finished");
      }
    });
    writing = false;
    watcher.join();
    CHECK(writers.errors == "");
    CHECK(temp_files_seen == 0);
    CHECK(wal_size(path) < 6 * 1024 * 1024);  // of 16 MiB written
  }
  CHECK(connections_to(path) == 0);  // the writer went with the last store
  auto reopened = open_sqlite_store(path, std::nullopt, std::nullopt, true);
  for (const std::string key : {"seq-0", "seq-39", "t0-0", "t15-39"}) {
    CAPTURE(key);
    auto r = reopened->get(key);
    REQUIRE(r.has_value());
    CHECK(r->status == Status::succeeded);
  }
  CHECK(reopened->health().damage.empty());
}

namespace {

// The version 9 schema, frozen as it was published (version 8 with the owner's machine id
// and pid namespace), with records of each kind of ending.
constexpr const char* k_version_9 = "schema/sqlite-v9.sql";

}  // namespace

TEST_CASE("store: a version 9 store's records get their current attempt as their history",
          "[store][files][history]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    RawDb raw(path);
    raw.exec(fixture(k_version_9));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  auto store = open_sqlite_store(path);
  {
    RawDb raw(path);
    CHECK(raw.text("PRAGMA user_version") == current_version());
    CHECK(raw.text("SELECT group_concat(key || ' ' || number || ' ' || started_by || ' ' || "
                   "outcome || ' ' || reason || ' ' || coalesce(http_status, '-') || ' ' || "
                   "coalesce(ended_at, '-'), ',') FROM (SELECT * FROM attempts ORDER BY key)") ==
          "crashed 1 run abandoned owner died - -,done 1 each succeeded exit - 2100,"
          "failed 2 run failed exit - 2000,hook 1 hook succeeded status 202 1700,"
          "killed 1 run failed signal - 1690,leased 1 ledger abandoned lease ran out - -,"
          "running 1 begin running  - -,slow 1 each failed timeout - 1670");
    CHECK(raw.text("SELECT sum(replays) FROM records") == "0");
    CHECK(raw.text("PRAGMA integrity_check") == "ok");
  }
  // The history goes on from there, and goes with its record.
  ClaimRequest retry = request("failed", 3000);
  retry.fingerprint = "fp";
  REQUIRE(store->claim(retry, k_alive).verdict == Verdict::claim);
  auto h = store->history("failed");
  REQUIRE(h.size() == 2);
  CHECK(h[0].number == 2);
  CHECK(h[1].number == 3);
  REQUIRE(store->remove("hook", false, k_alive) == RemoveResult::removed);
  CHECK(store->history("hook").empty());
}

// Each shape of the page's filters walks an index in the listing's order (no full scan, no
// sort): the newest-first one, or that of its condition; and where a scan is bounded, the entry
// it ends at and the counts that choose among conditions are read from that index alone.
TEST_CASE("store: every filter shape of the page reads an index, never scans or sorts",
          "[store][plan]") {
  namespace sql = idem::store::sqlite_sql;
  using idem::store::ListDrive;
  TempDir dir;
  const std::string path = dir / "idem.db";
  open_sqlite_store(path);
  struct Shape {
    const char* what;
    std::function<void(ListQuery&)> set;
    ListDrive drive;
    const char* index;
  };
  const Shape shapes[] = {
      {"none", [](ListQuery&) {}, ListDrive::recent, "records_by_recent"},
      {"status=failed", [](ListQuery& q) { q.statuses = {Status::failed}; }, ListDrive::status,
       "records_by_status"},
      {"status=succeeded", [](ListQuery& q) { q.statuses = {Status::succeeded}; },
       ListDrive::status, "records_by_status"},
      {"status=running", [](ListQuery& q) { q.statuses = {Status::running}; },
       ListDrive::unfinished, "records_unfinished"},
      {"front", [](ListQuery& q) { q.kind = "run"; }, ListDrive::kind, "records_by_kind"},
      {"result", [](ListQuery& q) { q.result = "5xx"; }, ListDrive::result, "records_by_result"},
      {"hook (a common prefix)", [](ListQuery& q) { q.prefix = "/hooks/x#"; }, ListDrive::recent,
       "records_by_recent"},
      {"since and until", [](ListQuery& q) { q.since_ms = 5, q.until_ms = 9; }, ListDrive::recent,
       "records_by_recent"},
      {"status and front, by status",
       [](ListQuery& q) { q.statuses = {Status::failed}, q.kind = "run"; }, ListDrive::status,
       "records_by_status"},
      {"status and front, by front",
       [](ListQuery& q) { q.statuses = {Status::failed}, q.kind = "run"; }, ListDrive::kind,
       "records_by_kind"},
      {"every condition, by result",
       [](ListQuery& q) {
         q.statuses = {Status::failed}, q.kind = "http", q.result = "5xx";
         q.prefix = "/h#", q.since_ms = 5, q.until_ms = 9;
       },
       ListDrive::result, "records_by_result"},
  };
  for (const Shape& shape : shapes)
    for (bool after : {false, true}) {
      ListQuery q;
      q.limit = 51;
      q.scan_limit = 5000;
      shape.set(q);
      if (after) q.after = std::pair<int64_t, std::string>{7, "k"};
      for (bool stop : {false, true}) {
        const std::string listing = sql::list(q, shape.drive, stop);
        auto plan = plan_of(path, listing);
        INFO(shape.what << (after ? ", after a cursor" : "") << ": " << listing << " => "
                        << joined(plan));
        CHECK(uses_only(plan, shape.index));
      }
      // The entry a scan ends at and the counts: from the index (its entries alone where it
      // holds every column asked; the partial and expression indexes look up their rows).
      for (const std::string& read :
           {sql::list_stop(q, shape.drive), sql::list_count(q, shape.drive)}) {
        auto plan = plan_of(path, read);
        INFO(shape.what << ": " << read << " => " << joined(plan));
        CHECK(joined(plan).find("TEMP B-TREE") == std::string::npos);
        int of_records = 0;
        for (const auto& line : plan)
          if (line.find(" records ") != std::string::npos) {
            ++of_records;
            CHECK(line.find("INDEX " + std::string(shape.index)) != std::string::npos);
          }
        CHECK(of_records == 1);
      }
    }
}

}  // namespace unit_sqlite_store
