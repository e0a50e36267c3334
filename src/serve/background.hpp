#pragma once
// The daemon's background threads (async handlers, keyed forwards), joined by the drain.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/log.hpp"

namespace idem::serve {

// Work that outlives the request that started it (async handlers, the proxy's forwards); the
// drain waits for it. A thread that finished a job waits a while for the next one instead of
// exiting: at a thousand forwards a second, a thread made and torn down for each (its stack, its
// thread-local state, the clone) was a good part of what a new key cost. Its threads are joined,
// never detached: a thread's own exit (the thread-local state libraries such as libcrypto clean
// up then) must be over before the process exits and runs their global clean-up, or the two
// race.
class Background {
 public:
  Background() = default;
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() { wait(); }

  void spawn(std::function<void()> fn) {
    std::lock_guard lock(mutex_);
    join_exited();
    jobs_.push_back(std::move(fn));
    ++running_;
    if (idle_ > 0) {
      work_.notify_one();
      return;
    }
    threads_.emplace_back();
    threads_.back() = std::thread([this, me = std::prev(threads_.end())] { serve(me); });
  }

  // Threads waiting for a job (for tests).
  int idle_threads() {
    std::lock_guard lock(mutex_);
    return idle_;
  }

  // Waits for every job, then ends and joins every thread.
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
    stopping_ = true;
    work_.notify_all();
    std::list<std::thread> all = std::move(threads_);
    threads_.clear();
    exited_.clear();
    lock.unlock();
    for (auto& t : all) t.join();
    lock.lock();
    stopping_ = false;
  }

 private:
  using Threads = std::list<std::thread>;
  // How long a thread without a job waits for one before it exits.
  static constexpr std::chrono::seconds k_linger{10};

  void serve(Threads::iterator me) {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (!jobs_.empty()) {
        std::function<void()> fn = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        run(fn);
        fn = nullptr;  // what the job holds goes before the drain hears it is done
        lock.lock();
        if (--running_ == 0) done_.notify_all();
        continue;
      }
      if (stopping_) return;
      ++idle_;
      const bool woken =
          work_.wait_for(lock, k_linger, [&] { return !jobs_.empty() || stopping_; });
      --idle_;
      if (!woken) {
        // Joined by the next spawn or the drain (wait() joins every thread it still lists).
        exited_.push_back(me);
        return;
      }
    }
  }

  // Nobody waits for background work's answer: what it throws is logged, never lost.
  static void run(const std::function<void()>& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      log_line({{"time", now_iso()}, {"event", "background_failed"}, {"error", e.what()}});
    }
  }

  // Joins the threads that exited after lingering (they hold no lock any more: each ends within
  // moments of saying so).
  void join_exited() {
    for (Threads::iterator it : exited_) {
      it->join();
      threads_.erase(it);
    }
    exited_.clear();
  }

  std::mutex mutex_;
  std::condition_variable work_;  // a job, or the drain's stop
  std::condition_variable done_;  // running_ reached 0
  std::deque<std::function<void()>> jobs_;
  int running_ = 0;  // jobs queued or running
  int idle_ = 0;     // threads waiting for a job
  bool stopping_ = false;
  Threads threads_;
  std::vector<Threads::iterator> exited_;  // of threads_, lingered out
};

}  // namespace idem::serve
