#pragma once
// Replays counted in memory and written to the store in one unsynced transaction now and then
// (Store::count_replays), so that a replay stays a read on its own path: the daemon flushes its
// tally every second and when it stops, `idem each` when it ends.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace idem::store {

class ReplayTally {
 public:
  void add(const std::string& key, int64_t now_ms) {
    std::lock_guard lock(mutex_);
    ReplayCount& c = counts_[key];
    c.count += 1;
    c.last_ms = std::max(c.last_ms, now_ms);
  }

  // Writes what was counted since the last flush, in one transaction. On a store error the
  // counts are kept for the next flush, and the error is rethrown.
  void flush(Store& store) {
    std::vector<ReplayCount> batch;
    {
      std::lock_guard lock(mutex_);
      batch.reserve(counts_.size());
      for (auto& [key, c] : counts_) batch.push_back(ReplayCount{key, c.count, c.last_ms});
      counts_.clear();
    }
    if (batch.empty()) return;
    try {
      store.count_replays(batch);
    } catch (...) {
      std::lock_guard lock(mutex_);
      for (const ReplayCount& c : batch) {
        ReplayCount& kept = counts_[c.key];
        kept.count += c.count;
        kept.last_ms = std::max(kept.last_ms, c.last_ms);
      }
      throw;
    }
  }

  bool empty() const {
    std::lock_guard lock(mutex_);
    return counts_.empty();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, ReplayCount> counts_;  // by key (ReplayCount::key unused here)
};

}  // namespace idem::store
