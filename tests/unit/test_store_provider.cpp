// StoreProvider: connections opened lazily and reused, one per lease at a time, across threads;
// at most max_idle kept; a connection whose lease ended in an exception is closed, not reused.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "store/provider.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_store_provider {

using idem::store::StoreProvider;
using idem::test::TempDir;

namespace {

StoreProvider::Opener sqlite_opener(const std::string& path) {
  return [path] { return idem::store::open_sqlite_store(path); };
}

}  // namespace

TEST_CASE("provider: sequential leases reuse one connection", "[store][provider]") {
  TempDir dir;
  StoreProvider stores(sqlite_opener(dir / "idem.db"), 4);
  CHECK(stores.opened() == 0);  // lazily: nothing until the first lease
  const idem::store::Store* first = nullptr;
  for (int i = 0; i < 200; ++i) {
    auto lease = stores.lease();
    if (first == nullptr) first = &*lease;
    CHECK(&*lease == first);
    CHECK_FALSE(lease->get("k" + std::to_string(i)).has_value());
  }
  CHECK(stores.opened() == 1);
  CHECK(stores.idle() == 1);
}

TEST_CASE("provider: leases held at once get distinct connections", "[store][provider]") {
  TempDir dir;
  StoreProvider stores(sqlite_opener(dir / "idem.db"), 2);
  {
    auto a = stores.lease();
    auto b = stores.lease();
    auto c = stores.lease();
    CHECK(&*a != &*b);
    CHECK(&*b != &*c);
    CHECK(stores.opened() == 3);
  }
  CHECK(stores.idle() == 2);  // the third one was closed: at most max_idle are kept
  { auto again = stores.lease(); }
  CHECK(stores.opened() == 3);
}

TEST_CASE("provider: a lease ended by an exception closes its connection", "[store][provider]") {
  TempDir dir;
  StoreProvider stores(sqlite_opener(dir / "idem.db"), 4);
  try {
    auto lease = stores.lease();
    throw std::runtime_error("connection in doubt");
  } catch (const std::runtime_error&) {
  }
  CHECK(stores.idle() == 0);
  { auto lease = stores.lease(); }
  CHECK(stores.opened() == 2);
  CHECK(stores.idle() == 1);
}

TEST_CASE("provider: a failed open is the opener's error and counts nothing", "[store][provider]") {
  StoreProvider stores(
      []() -> std::unique_ptr<idem::store::Store> {
        throw idem::StoreError("store /x: unavailable", idem::StoreFailure::transient);
      },
      4);
  CHECK_THROWS_AS(stores.lease(), idem::StoreError);
  CHECK(stores.opened() == 0);
}

TEST_CASE("provider: threads share a bounded set of connections", "[store][provider]") {
  TempDir dir;
  constexpr int k_threads = 4;
  constexpr int k_rounds = 50;
  StoreProvider stores(sqlite_opener(dir / "idem.db"), k_threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < k_rounds; ++i) {
        auto lease = stores.lease();
        lease->get("t" + std::to_string(t) + "-" + std::to_string(i));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  // Never more connections than threads holding leases: no connection per use.
  CHECK(stores.opened() <= k_threads);
  CHECK(stores.idle() == size_t(stores.opened()));
}

}  // namespace unit_store_provider
