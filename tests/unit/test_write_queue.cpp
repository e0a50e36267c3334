// The write queue's batching (store/sqlite/write_queue.hpp), driven through a connection that
// records what a transaction did: which writes ran in which transaction, what each commit kept.
#include <algorithm>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "store/sqlite/write_queue.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_write_queue {

namespace {

// A transaction of named writes: begin, savepoints and rollbacks keep a pending list; commit
// moves it to `committed`. A write named "lose" breaks the transaction (rolling back to its
// savepoint fails, like SQLite after an error that rolled everything back).
struct Journal {
  std::mutex mutex;
  std::vector<std::string> committed;
  std::vector<int> batch_sizes;  // writes kept by each commit
  std::vector<bool> batch_synced;
  bool fail_commit = false;
  int in_transaction = 0;  // connections inside a transaction at once (must stay <= 1)
  int most_at_once = 0;
};

class TestConnection {
 public:
  explicit TestConnection(Journal& journal) : journal_(journal) {}

  void begin(bool sync) {
    std::lock_guard lock(journal_.mutex);
    sync_ = sync;
    open_ = true;
    pending_.clear();
    journal_.most_at_once = std::max(journal_.most_at_once, ++journal_.in_transaction);
  }
  void savepoint() { mark_ = pending_.size(); }
  void release_savepoint() {}
  void rollback_to_savepoint() {
    if (lost_) throw std::runtime_error("transaction lost");
    pending_.resize(mark_);
  }
  void commit() {
    std::lock_guard lock(journal_.mutex);
    --journal_.in_transaction;
    open_ = false;
    if (journal_.fail_commit) throw std::runtime_error("disk full");
    journal_.committed.insert(journal_.committed.end(), pending_.begin(), pending_.end());
    journal_.batch_sizes.push_back(int(pending_.size()));
    journal_.batch_synced.push_back(sync_);
  }
  void rollback() noexcept {
    std::lock_guard lock(journal_.mutex);
    if (open_) --journal_.in_transaction;
    open_ = false;
    pending_.clear();
    lost_ = false;
  }

  void write(const std::string& name) {
    pending_.push_back(name);
    if (name == "lose") {
      lost_ = true;
      throw std::runtime_error("lost it");
    }
    if (name.rfind("fail", 0) == 0) throw std::runtime_error("refused " + name);
  }

 private:
  Journal& journal_;
  std::vector<std::string> pending_;
  size_t mark_ = 0;
  bool sync_ = false;
  bool lost_ = false;
  bool open_ = false;
};

using Queue = idem::store::WriteQueue<TestConnection>;

// Holds a batch's leader inside its write until released, so that the writes of other threads
// queue up behind it and form the next batch together.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool entered = false;
  bool open = false;

  void wait_inside() {
    std::unique_lock lock(mutex);
    entered = true;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
  }
  void wait_entered() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

// Starts `names.size()` writers while a first write holds the queue, waits until all of them
// are queued, then lets the first batch end: the others make the next batch together. Returns
// each writer's error message ("" when it succeeded).
std::vector<std::string> run_batch_of(Queue& queue, Journal& journal,
                                      const std::vector<std::string>& names) {
  Gate gate;
  std::thread first([&] {
    TestConnection mine(journal);
    queue.run(mine, false, [&](TestConnection& c) {
      c.write("first");
      gate.wait_inside();
    });
  });
  gate.wait_entered();
  std::vector<std::string> errors(names.size());
  std::vector<std::thread> writers;
  for (size_t i = 0; i < names.size(); ++i)
    writers.emplace_back([&, i] {
      TestConnection mine(journal);
      try {
        queue.run(mine, names[i] == "synced", [&](TestConnection& c) { c.write(names[i]); });
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  while (queue.queued() < names.size()) std::this_thread::yield();
  gate.release();
  first.join();
  for (auto& w : writers) w.join();
  return errors;
}

}  // namespace

TEST_CASE("write queue: a lone write is its own transaction, without a savepoint",
          "[store][queue]") {
  Journal journal;
  Queue queue;
  TestConnection mine(journal);
  queue.run(mine, true, [](TestConnection& c) { c.write("a"); });
  CHECK(journal.committed == std::vector<std::string>{"a"});
  CHECK(journal.batch_synced == std::vector<bool>{true});
  CHECK_THROWS_WITH(queue.run(mine, false, [](TestConnection& c) { c.write("fail"); }),
                    "refused fail");
  CHECK(journal.committed == std::vector<std::string>{"a"});
  CHECK(queue.grouped_writes() == 0);
}

TEST_CASE("write queue: writes that queue while a batch commits share the next commit",
          "[store][queue]") {
  Journal journal;
  Queue queue;
  const std::vector<std::string> names{"w1", "w2", "w3", "w4", "w5", "w6"};
  std::vector<std::string> errors = run_batch_of(queue, journal, names);
  for (const auto& e : errors) CHECK(e.empty());
  CHECK(journal.committed.size() == 7);
  CHECK(journal.most_at_once == 1);  // one transaction at a time
  // The first write alone, then the six together.
  CHECK(journal.batch_sizes == std::vector<int>{1, 6});
  CHECK(queue.grouped_writes() == 6);
}

TEST_CASE("write queue: a failing write in a batch touches only its caller", "[store][queue]") {
  Journal journal;
  Queue queue;
  const std::vector<std::string> names{"w1", "fail-2", "w3", "fail-4", "w5"};
  std::vector<std::string> errors = run_batch_of(queue, journal, names);
  CHECK(errors == std::vector<std::string>{"", "refused fail-2", "", "refused fail-4", ""});
  std::vector<std::string> kept = journal.committed;
  std::sort(kept.begin(), kept.end());
  CHECK(kept == std::vector<std::string>{"first", "w1", "w3", "w5"});
}

TEST_CASE("write queue: a write that loses the transaction fails alone; the others run again",
          "[store][queue]") {
  Journal journal;
  Queue queue;
  const std::vector<std::string> names{"w1", "w2", "lose", "w4"};
  std::vector<std::string> errors = run_batch_of(queue, journal, names);
  CHECK(errors == std::vector<std::string>{"", "", "lost it", ""});
  std::vector<std::string> kept = journal.committed;
  std::sort(kept.begin(), kept.end());
  CHECK(kept == std::vector<std::string>{"first", "w1", "w2", "w4"});
}

TEST_CASE("write queue: a commit that fails fails every write of its batch", "[store][queue]") {
  Journal journal;
  Queue queue;
  TestConnection mine(journal);
  journal.fail_commit = true;
  CHECK_THROWS_WITH(queue.run(mine, true, [](TestConnection& c) { c.write("a"); }), "disk full");
  journal.fail_commit = false;
  queue.run(mine, true, [](TestConnection& c) { c.write("b"); });
  CHECK(journal.committed == std::vector<std::string>{"b"});
}

TEST_CASE("write queue: a batch is synced when any of its writes asks", "[store][queue]") {
  Journal journal;
  Queue queue;
  run_batch_of(queue, journal, {"w1", "synced", "w3"});
  REQUIRE(journal.batch_synced.size() >= 2);
  CHECK_FALSE(journal.batch_synced[0]);  // "first" alone, unsynced
  CHECK(journal.batch_synced.size() == 2);
  CHECK(journal.batch_synced[1]);
}

TEST_CASE("write queue: many threads, every write committed once", "[store][queue]") {
  Journal journal;
  Queue queue;
  constexpr int k_threads = 8;
  constexpr int k_writes = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t)
    threads.emplace_back([&, t] {
      TestConnection mine(journal);
      for (int i = 0; i < k_writes; ++i) {
        const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        queue.run(mine, i % 3 == 0, [&](TestConnection& c) { c.write(name); });
      }
    });
  for (auto& th : threads) th.join();
  CHECK(journal.committed.size() == size_t(k_threads * k_writes));
  std::vector<std::string> kept = journal.committed;
  std::sort(kept.begin(), kept.end());
  CHECK(std::adjacent_find(kept.begin(), kept.end()) == kept.end());
  CHECK(journal.most_at_once == 1);
}

}  // namespace unit_write_queue
