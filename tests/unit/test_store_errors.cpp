// StoreError says whether a retry may help: a lock held by another connection past the busy
// timeout is transient; a file that is not a database, or a newer schema, is permanent.
#include <sqlite3.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_store_errors {

using idem::StoreError;
using idem::StoreFailure;
using idem::store::open_sqlite_store;
using idem::test::TempDir;

namespace {

// A second connection, outside idem, that can hold the writer lock.
struct Holder {
  explicit Holder(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  }
  ~Holder() { sqlite3_close(db); }
  void exec(const char* sql) { REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == 0); }
  sqlite3* db = nullptr;
};

template <class Fn>
StoreFailure failure_of(Fn&& fn) {
  try {
    fn();
  } catch (const StoreError& e) {
    CHECK(e.code() == idem::k_exit_store);
    return e.failure();
  }
  FAIL("no StoreError");
  return StoreFailure::permanent;
}

idem::store::ClaimRequest claim_of(const std::string& key) {
  idem::store::ClaimRequest r;
  r.key = key;
  r.fingerprint = std::string(64, 'a');
  r.owner = idem::core::Owner{"host", "boot", 1, 1};
  r.now_ms = 1'790'000'000'000;
  return r;
}

}  // namespace

TEST_CASE("store errors: a lock held by another connection is transient", "[store][errors]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  auto store = open_sqlite_store(path, 50);
  Holder holder(path);
  holder.exec("BEGIN IMMEDIATE; UPDATE records SET note = note;");
  auto alive = [](const idem::core::Owner&) { return false; };
  CHECK(failure_of([&] { store->claim(claim_of("k"), alive); }) == StoreFailure::transient);
  CHECK(failure_of([&] { store->check_writable(); }) == StoreFailure::transient);
  holder.exec("COMMIT;");
  CHECK(store->claim(claim_of("k"), alive).verdict == idem::core::Verdict::claim);
}

TEST_CASE("store errors: a file that is not a database is permanent", "[store][errors]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    std::ofstream garbage(path, std::ios::binary);
    for (int i = 0; i < 4096; ++i) garbage.put(char(i * 31 + 7));
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK(failure_of([&] { open_sqlite_store(path); }) == StoreFailure::permanent);
}

TEST_CASE("store errors: a newer schema is permanent", "[store][errors]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    // A newer idem's store: idem's application id, tables this idem does not know.
    REQUIRE(sqlite3_exec(db,
                         "CREATE TABLE future (x); PRAGMA application_id = 1229210957;"
                         "PRAGMA user_version = 999;",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK(failure_of([&] { open_sqlite_store(path); }) == StoreFailure::permanent);
}

TEST_CASE("store errors: a folder in place of the database is permanent", "[store][errors]") {
  TempDir dir;
  const std::string path = dir / "idem.db";
  REQUIRE(::mkdir(path.c_str(), 0700) == 0);
  CHECK(failure_of([&] { open_sqlite_store(path); }) == StoreFailure::permanent);
}

TEST_CASE("store errors: a folder at the WAL's path is refused, and no database file is left",
          "[store][errors]") {
  for (const char* companion : {"-wal", "-shm"}) {
    TempDir dir;
    const std::string path = dir / "idem.db";
    REQUIRE(::mkdir((path + companion).c_str(), 0700) == 0);
    try {
      open_sqlite_store(path);
      FAIL("opened beside a folder at " << companion);
    } catch (const StoreError& e) {
      CHECK(e.failure() == StoreFailure::permanent);
      CHECK(std::string(e.what()) ==
            "store " + path + companion + " is not a regular file; move it away");
    }
    struct stat st {};
    CHECK(::lstat(path.c_str(), &st) != 0);
  }
}

}  // namespace unit_store_errors
