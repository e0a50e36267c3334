#pragma once
// The store contract: what every Store backend must do, whatever it keeps its records in. The
// behavioural cases (store_contract.cpp) are written against store::Store alone and run once per
// backend in IDEM_CONTRACT_BACKENDS, each a type whose objects are one fresh, empty store and
// whose open() connects to it (again: concurrency cases open one connection per thread). A new
// backend (PostgreSQL) adds its type to the list and is proven by the very same cases. What only
// one backend has (SQLite's files, modes, WAL, query plans, migrations) is tested beside it.
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/record.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

namespace idem::test {

// A SQLite store in a private temp dir.
class SqliteBackend {
 public:
  std::unique_ptr<store::Store> open(const store::StoreOptions& options = {}) {
    return store::open_sqlite_store(dir_ / "idem.db", options.busy_timeout_ms,
                                    options.keep_attempts);
  }

 private:
  TempDir dir_;
};

#ifdef IDEM_TEST_POSTGRES
// A fresh schema on the test cluster's server ($IDEM_TEST_PG_URL, started by
// scripts/pg_cluster.sh; scripts/test.sh exports it), dropped at the end of the case; open()
// connects with that schema as its search_path. Without the URL the case is skipped: the process
// exits 77, which CTest reports as skipped (run the binary by hand with "~*PostgresBackend").
class PostgresBackend {
 public:
  PostgresBackend();
  ~PostgresBackend();
  PostgresBackend(const PostgresBackend&) = delete;
  PostgresBackend& operator=(const PostgresBackend&) = delete;
  std::unique_ptr<store::Store> open(const store::StoreOptions& options = {});
  const std::string& url() const { return url_; }  // the schema's URL
  // Also the application_name of the connections made with url().
  const std::string& schema() const { return schema_; }

 private:
  std::string schema_;
  std::string url_;
};
#define IDEM_CONTRACT_BACKENDS idem::test::SqliteBackend, idem::test::PostgresBackend
#else
#define IDEM_CONTRACT_BACKENDS idem::test::SqliteBackend
#endif

inline constexpr int64_t k_t0 = 1'790'000'000'000;  // a fixed "now": the store never reads a clock
inline constexpr int64_t k_day = 24 * 3600 * 1000;
inline const std::string k_fp = std::string(64, 'a');
inline const std::string k_other_fp = std::string(64, 'b');

inline const store::OwnerGone k_alive = [](const core::Owner&) { return false; };
inline const store::OwnerGone k_gone = [](const core::Owner&) { return true; };

inline core::Owner owner(int64_t pid) {
  return core::Owner{"host-a", "boot-1", pid, 1000 + pid, std::string(32, 'a'), 4026532000};
}

inline store::ClaimRequest request(const std::string& key, int64_t now_ms = k_t0,
                                   int64_t pid = 100) {
  store::ClaimRequest r;
  r.key = key;
  r.fingerprint = k_fp;
  r.owner = owner(pid);
  r.ttl_ms = k_day;
  r.request = R"({"argv":["true"],"cwd":"/"})";
  r.now_ms = now_ms;
  return r;
}

inline core::Outcome outcome(core::Status status, std::optional<int> code, int64_t finished_ms) {
  core::Outcome o;
  o.status = status;
  o.exit_code = code;
  o.finished_ms = finished_ms;
  return o;
}

// Whether a claim's verdict is `v` (to count the claims of a race, race.hpp).
inline auto verdict_is(core::Verdict v) {
  return [v](const store::ClaimResult& c) { return c.verdict == v; };
}

inline std::vector<std::string> keys_of(const std::vector<core::Record>& records) {
  std::vector<std::string> keys;
  for (const auto& r : records) keys.push_back(r.key);
  return keys;
}

// Everything list() visits, in order.
inline std::vector<core::Record> listed(store::Store& store, const store::ListQuery& query) {
  std::vector<core::Record> records;
  store.list(query, [&](const core::Record& r) {
    records.push_back(r);
    return true;
  });
  return records;
}

// A claimed-and-finished record.
inline void put_finished(store::Store& store, const std::string& key, int64_t started_ms,
                         core::Status status, int64_t finished_ms, int64_t ttl_ms = k_day) {
  store::ClaimRequest req = request(key, started_ms);
  req.ttl_ms = ttl_ms;
  store::ClaimResult c = store.claim(req, k_alive);
  REQUIRE(c.verdict == core::Verdict::claim);
  REQUIRE(store.finish(key, c.attempt,
                       outcome(status, status == core::Status::succeeded ? 0 : 1, finished_ms)));
}

}  // namespace idem::test
