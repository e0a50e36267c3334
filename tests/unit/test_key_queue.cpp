// The per-key FIFO queue `idem each --jobs N` dispatches through (engine/key_queue.hpp): several
// workers never run two items of one key at once, nor a later one before an earlier one.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/key_queue.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_key_queue {

namespace {

struct Line {
  std::string key;
  int number = 0;
};

// What the workers did: per key, the line numbers in the order they started, and whether two
// workers ever held one key at once.
struct Trace {
  std::mutex mutex;
  std::map<std::string, std::vector<int>> started;
  std::map<std::string, int> holding;
  bool overlapped = false;
};

// Feeds `lines` lines, each with a key drawn from `keys`, to `jobs` workers. A worker waits a
// random short while between taking an item and starting it (as `each` does before its claim),
// and again while holding it; then the trace is checked against the input.
void run_lines(int lines, int keys, int jobs, size_t max_held, std::mt19937& random) {
  std::atomic<int> stop{0};
  idem::engine::KeyQueue<Line> queue(max_held, stop);
  Trace trace;
  std::vector<unsigned> seeds;
  for (int j = 0; j < jobs; ++j) seeds.push_back(unsigned(random()));
  std::vector<std::thread> workers;
  for (int j = 0; j < jobs; ++j)
    workers.emplace_back([&, seed = seeds[size_t(j)]] {
      std::mt19937 mine(seed);
      auto pause = [&] { std::this_thread::sleep_for(std::chrono::microseconds(mine() % 200)); };
      while (std::optional<Line> popped = queue.pop()) {
        const Line& line = *popped;
        pause();
        {
          std::lock_guard lock(trace.mutex);
          trace.started[line.key].push_back(line.number);
          if (trace.holding[line.key]++ != 0) trace.overlapped = true;
        }
        pause();
        {
          std::lock_guard lock(trace.mutex);
          --trace.holding[line.key];
        }
        queue.finish(line.key);
      }
    });
  std::map<std::string, std::vector<int>> want;
  for (int n = 1; n <= lines; ++n) {
    Line line{"k" + std::to_string(random() % unsigned(keys)), n};
    want[line.key].push_back(n);
    REQUIRE(queue.push(line));
  }
  queue.close();
  for (auto& w : workers) w.join();

  CHECK_FALSE(trace.overlapped);
  CHECK(trace.started == want);
}

}  // namespace

TEST_CASE("key queue: 200 lines over 10 keys and 4 jobs keep each key's order, 50 times",
          "[key_queue]") {
  std::mt19937 random(20230);
  for (int round = 0; round < 50; ++round) {
    INFO("round " << round);
    run_lines(200, 10, 4, 16, random);
  }
}

TEST_CASE("key queue: one key, many jobs: strictly one at a time, in order", "[key_queue]") {
  std::mt19937 random(7);
  run_lines(100, 1, 8, 4, random);
}

TEST_CASE("key queue: a bound smaller than a key's backlog still drains", "[key_queue]") {
  std::mt19937 random(11);
  run_lines(300, 3, 4, 1, random);
}

TEST_CASE("key queue: a later item of a key waits for finish, other keys do not", "[key_queue]") {
  std::atomic<int> stop{0};
  idem::engine::KeyQueue<Line> queue(8, stop);
  REQUIRE(queue.push(Line{"a", 1}));
  REQUIRE(queue.push(Line{"a", 2}));
  REQUIRE(queue.push(Line{"b", 3}));
  queue.close();
  std::optional<Line> got = queue.pop();
  REQUIRE(got);
  CHECK(got->number == 1);
  got = queue.pop();
  REQUIRE(got);
  CHECK(got->number == 3);  // a's second line is held back while the first is out
  queue.finish("b");
  queue.finish("a");
  got = queue.pop();
  REQUIRE(got);
  CHECK(got->number == 2);
  queue.finish("a");
  CHECK_FALSE(queue.pop());  // closed, nothing out, nothing held
}

TEST_CASE("key queue: a stop ends push and pop", "[key_queue]") {
  std::atomic<int> stop{0};
  idem::engine::KeyQueue<Line> queue(1, stop);
  REQUIRE(queue.push(Line{"a", 1}));
  // Catch2 asserts on the main thread only: the reader's push is checked after the join.
  std::atomic<bool> pushed{true};
  std::thread reader([&] { pushed = queue.push(Line{"b", 2}); });  // waits for room
  stop = 15;
  CHECK_FALSE(queue.pop());  // wakes the reader too
  reader.join();
  CHECK_FALSE(pushed);
}

}  // namespace unit_key_queue
