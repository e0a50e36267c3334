// engine::LiveFeed on a real SQLite store and the fake clock: a first piece is written at once,
// later ones together once the interval has passed (on the injected clock), a full segment at
// once; what waits unwritten at stop() is dropped; a store that stays busy past the stall time
// ends the publishing without a gap. (That the store takes no segment of an attempt that no
// longer runs is the store contract's: store_contract_live.cpp.)
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "core/live.hpp"
#include "engine/live_feed.hpp"
#include "fakes.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

namespace unit_live_feed {

using idem::core::Stream;
using idem::engine::k_live_interval_ms;
using idem::engine::k_live_max_pending;
using idem::engine::k_live_stall_ms;
using idem::engine::LiveFeed;
using idem::test::FakeClock;
using idem::test::TempDir;

struct Fixture {
  TempDir dir;
  std::unique_ptr<idem::store::Store> store = idem::store::open_sqlite_store(dir.path() + "/s.db");
  FakeClock clock;
  std::mutex store_mutex;
  Fixture() {
    idem::store::ClaimRequest r;
    r.key = "k";
    r.fingerprint = std::string(64, 'a');
    r.owner = idem::core::Owner{"host-a", "boot-a", 1, 101};
    r.ttl_ms = 1000;
    r.now_ms = clock.now_ms();
    REQUIRE(store->claim(r, [](const idem::core::Owner&) { return false; }).attempt == 1);
  }
  // The bytes written so far, both streams in order.
  std::string written() {
    std::lock_guard lock(store_mutex);
    std::string all;
    for (const auto& s : store->read_live("k", 1, 0, INT64_MAX))
      idem::core::emit_segment(s, 0, [&](Stream, std::string_view b, int64_t) {
        all += b;
        return true;
      });
    return all;
  }
  // Waits until the feed's thread waits on the clock past now: it has done what it does now.
  void settle() { clock.await_waiter(clock.monotonic_ms()); }
};

// Waits (a real 10 s at most) until `done` holds: what the feed's thread does on its own, once
// woken by a push, while it may still be registered as waiting from before.
template <typename Done>
void eventually(Done done) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    REQUIRE(std::chrono::steady_clock::now() < limit);
    std::this_thread::yield();
  }
}

TEST_CASE("live feed: the first piece at once, the next ones together after the interval",
          "[live]") {
  Fixture f;
  LiveFeed feed(*f.store, f.store_mutex, f.clock, "k", 1);
  feed.push(Stream::out, "one ");
  f.settle();
  CHECK(f.written() == "one ");
  CHECK(feed.published() == 4);
  feed.push(Stream::err, "two ");
  feed.push(Stream::out, "three");
  // Within the interval they wait; once the clock has moved past it, they go together.
  f.clock.advance(k_live_interval_ms);
  eventually([&] { return feed.published() == 13; });
  CHECK(f.written() == "one two three");
  CHECK(f.store->read_live("k", 1, 0, INT64_MAX).size() <= 3);
  // A full segment goes at once, whatever the interval.
  feed.push(Stream::out, std::string(size_t(k_live_max_pending), 'x'));
  eventually([&] { return feed.published() == 13 + k_live_max_pending; });
  // What waits at stop() is dropped: the outcome holds it.
  feed.push(Stream::out, "unwritten");
  feed.stop();
  CHECK(feed.published() == 13 + k_live_max_pending);
  CHECK(f.written().size() == size_t(13 + k_live_max_pending));
}

TEST_CASE("live feed: a store busy past the stall time ends the publishing, with no gap",
          "[live]") {
  Fixture f;
  LiveFeed feed(*f.store, f.store_mutex, f.clock, "k", 1);
  const std::string block(size_t(k_live_max_pending), 'b');
  std::unique_lock busy(f.store_mutex);  // the store is held elsewhere
  std::atomic<bool> pushed{false};
  std::thread pusher([&] {
    feed.push(Stream::out, block);  // taken by the feed's thread, which waits for the store
    feed.push(Stream::out, block);  // waits as the pending segment
    feed.push(Stream::out, "c");    // no room: waits, then gives up the publishing
    feed.push(Stream::out, "d");    // dropped at once
    pushed = true;
    f.clock.advance(0);  // wakes the look below
  });
  // Each wait for room gives up once the stall time has passed on the clock since it began.
  while (!pushed) {
    const int64_t now = f.clock.monotonic_ms();
    f.clock.await_waiter_or(now + k_live_stall_ms - 1, [&] { return pushed.load(); });
    if (!pushed) f.clock.advance(k_live_stall_ms);
  }
  pusher.join();
  busy.unlock();
  feed.stop();
  // What was written is a prefix of what was pushed: the blocks, never "c" or "d" after a gap.
  const std::string got = f.written();
  CHECK(got.size() <= 2 * block.size());
  CHECK(got == std::string(got.size(), 'b'));
}

}  // namespace unit_live_feed
