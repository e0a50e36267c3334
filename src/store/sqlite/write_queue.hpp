#pragma once
// Group commit for the writers of one store file within one process (the daemon's threads).
//
// A writer hands its write to the queue and waits. The first waiting writer while no batch is
// being committed becomes the leader: it takes every write queued so far, runs them one after
// the other inside one transaction on its own connection, each in a savepoint of its own (a
// write that fails is rolled back alone and its error goes to its caller only), commits once,
// and only then wakes the writers of the batch. So a batch costs one commit and one sync however
// many writes it holds, and a write is reported done only once the commit that holds it
// returned: durable when the batch was synced, visible to no one before (SQLite makes a commit
// visible after its sync). Writes that arrive while a batch commits form the next batch.
//
// The connection is the backend's (the SQLite store's); the queue only drives it:
//     void begin(bool sync);           // the transaction; sync: its commit is synced
//     void savepoint();                // a savepoint inside it
//     void release_savepoint();        // keeps what was written since the savepoint
//     void rollback_to_savepoint();    // undoes it; throws if the transaction itself is lost
//     void commit();
//     void rollback() noexcept;
// A write is called with the leader's connection, never its own caller's, so it must reach the
// store only through that argument.
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace idem::store {

template <class Connection>
class WriteQueue {
 public:
  using Write = std::function<void(Connection&)>;

  // Runs `write` in a batch, led by this caller on `mine` or by another caller on theirs.
  // Returns once the batch committed; throws what the write threw (its savepoint rolled back),
  // or what beginning or committing the batch threw (nothing of it written). `sync`: this write
  // needs a synced commit (the batch is synced if any of its writes is).
  void run(Connection& mine, bool sync, const Write& write) {
    // Shared with the queue and the batch: the leader wakes the writers of its batch after it
    // let go of the lock (a writer woken while the leader still holds it would wake only to
    // wait for the lock), and a writer that saw `done` meanwhile (a spurious wake-up) may
    // already have returned by then.
    auto shared = std::make_shared<Pending>(&write, sync);
    Pending& pending = *shared;
    std::unique_lock lock(mutex_);
    queue_.push_back(shared);
    // Each writer sleeps on its own condition: woken when its batch committed, or when it is
    // first in the queue as a batch ends and so leads the next one. No thundering herd.
    pending.wakeup.wait(lock, [&] { return pending.done || !leading_; });
    if (!pending.done) lead(mine, lock);
    // Taken out (under the lock, for a writer the leader woke): the Pending may end in the
    // leader's thread, and the error must not end with it while this thread still uses it.
    std::exception_ptr error = std::exchange(pending.error, nullptr);
    if (error) std::rethrow_exception(error);
  }

  // Held by whoever runs a transaction on the file in this process: a batch's leader, or a
  // caller with a transaction of its own (a migration, gc's batches, a checkpoint), which so
  // never overlaps a batch.
  std::mutex& transactions() { return transactions_; }

  // Writes waiting for the next batch (for tests).
  size_t queued() const {
    std::lock_guard lock(mutex_);
    return queue_.size();
  }

  // Writes committed in batches of more than one so far (for tests and benchmarks).
  long grouped_writes() const {
    std::lock_guard lock(mutex_);
    return grouped_;
  }

 private:
  struct Pending {
    Pending(const Write* w, bool s) : write(w), sync(s) {}
    const Write* write;
    bool sync;
    std::exception_ptr error = nullptr;
    bool done = false;
    std::condition_variable wakeup;
  };

  // Commits every queued write (this caller's among them) as one batch, then hands the lead to
  // the first writer that queued meanwhile. Called with `lock` held; returns with it released.
  void lead(Connection& mine, std::unique_lock<std::mutex>& lock) {
    leading_ = true;
    std::vector<std::shared_ptr<Pending>> batch;
    batch.swap(queue_);
    lock.unlock();
    {
      std::vector<Pending*> writes;
      for (auto& p : batch) writes.push_back(p.get());
      std::lock_guard transaction(transactions_);
      commit_batch(mine, std::move(writes));
    }
    lock.lock();
    leading_ = false;
    for (auto& p : batch) p->done = true;
    std::shared_ptr<Pending> next = queue_.empty() ? nullptr : queue_.front();
    lock.unlock();
    for (auto& p : batch) p->wakeup.notify_one();
    if (next) next->wakeup.notify_one();
  }

  // Never throws: every error lands in the Pending of the writes it undid.
  void commit_batch(Connection& c, std::vector<Pending*> todo) {
    while (!todo.empty()) {
      bool sync = false;
      for (Pending* p : todo) sync = sync || p->sync;
      try {
        c.begin(sync);
      } catch (...) {
        for (Pending* p : todo) p->error = std::current_exception();
        return;
      }
      std::vector<Pending*> written;
      size_t lost_at = todo.size();  // the write whose failure lost the transaction, if any
      for (size_t i = 0; i < todo.size() && lost_at == todo.size(); ++i)
        if (!write_one(c, *todo[i], todo.size() > 1, written)) lost_at = i;
      if (lost_at != todo.size()) {
        // The transaction is gone, and with it what the writes before lost_at wrote: they run
        // again in a new one, with the writes not yet run. Each round drops one write, so this
        // ends.
        c.rollback();
        std::vector<Pending*> again = written;
        again.insert(again.end(), todo.begin() + long(lost_at) + 1, todo.end());
        todo.swap(again);
        continue;
      }
      try {
        c.commit();
        if (todo.size() > 1) count_grouped(long(written.size()));
      } catch (...) {
        c.rollback();
        for (Pending* p : written) p->error = std::current_exception();
      }
      return;
    }
  }

  // Runs one write (in a savepoint when the batch has others); false when its failure lost the
  // whole transaction. A lone write needs no savepoint: its failure rolls back the transaction,
  // which holds nothing else (a run of `idem run` costs what it did before batches).
  static bool write_one(Connection& c, Pending& p, bool savepoint, std::vector<Pending*>& written) {
    try {
      if (savepoint) c.savepoint();
      (*p.write)(c);
      if (savepoint) c.release_savepoint();
      written.push_back(&p);
      return true;
    } catch (...) {
      p.error = std::current_exception();
    }
    if (!savepoint) return false;
    try {
      c.rollback_to_savepoint();
      return true;
    } catch (...) {
      return false;
    }
  }

  void count_grouped(long n) {
    std::lock_guard lock(mutex_);
    grouped_ += n;
  }

  mutable std::mutex mutex_;  // guards queue_, leading_, every Pending's done, grouped_
  std::vector<std::shared_ptr<Pending>> queue_;
  bool leading_ = false;
  long grouped_ = 0;
  std::mutex transactions_;
};

}  // namespace idem::store
