#pragma once
// The daemon's background threads (async handlers, keyed forwards), joined by the drain.
#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/log.hpp"

namespace idem::http {

// Work that outlives the request that started it (async handlers); the drain waits for it. Its
// threads are joined, never detached: a thread's own exit (the thread-local state libraries such
// as libcrypto clean up then) must be over before the process exits and runs their global
// clean-up, or the two race.
class Background {
 public:
  void spawn(std::function<void()> fn) {
    std::lock_guard lock(mutex_);
    join_finished();
    ++running_;
    threads_.emplace_back([this, fn = std::move(fn)] {
      // Nobody waits for background work's answer: what it throws is logged, never lost.
      try {
        fn();
      } catch (const std::exception& e) {
        log_line({{"time", now_iso()}, {"event", "background_failed"}, {"error", e.what()}});
      }
      std::lock_guard done(mutex_);
      --running_;
      finished_.push_back(std::this_thread::get_id());
      done_.notify_all();
    });
  }
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
    std::list<std::thread> all = std::move(threads_);
    threads_.clear();
    finished_.clear();
    lock.unlock();
    for (auto& t : all) t.join();
  }

 private:
  // Joins the threads whose work is done (they hold no lock any more: each ends within moments).
  void join_finished() {
    for (auto id : finished_) {
      auto it = std::find_if(threads_.begin(), threads_.end(),
                             [&](const std::thread& t) { return t.get_id() == id; });
      if (it == threads_.end()) continue;
      it->join();
      threads_.erase(it);
    }
    finished_.clear();
  }

  std::mutex mutex_;
  std::condition_variable done_;
  int running_ = 0;
  std::list<std::thread> threads_;
  std::vector<std::thread::id> finished_;  // of threads_, whose work is done
};

}  // namespace idem::http
