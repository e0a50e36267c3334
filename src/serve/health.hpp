#pragma once
// Whether the store can be used now, for /healthz.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>

#include "store/provider.hpp"
#include "util/clock.hpp"

namespace idem::serve {

// Whether deliveries could use the store now. Checked at most once a second, so /healthz stays
// cheap at any request rate and is at most that stale; while one check waits on a locked store,
// other probes get the previous result at once.
class StoreHealth {
 public:
  // Its own connection, reused from check to check: a probe waits at most a second for a locked
  // store, less than a delivery's --busy-timeout may allow, and a connection's busy timeout is
  // fixed when it is opened.
  StoreHealth(const store::StoreLocation& where, int64_t busy_timeout_ms)
      : stores_(where, store::StoreOptions{std::min<int64_t>(busy_timeout_ms, 1000), std::nullopt},
                1) {}

  // Why the store cannot be used (for the log; it names the file), or nothing when it can.
  std::optional<std::string> problem() {
    {
      std::unique_lock checking(check_mutex_, std::try_to_lock);
      if (checking.owns_lock() && util::monotonic_ms() - checked_at() >= k_recheck_ms) {
        std::optional<std::string> why;
        try {
          stores_.lease()->check_writable();
        } catch (const std::exception& e) {
          why = e.what();
        }
        std::lock_guard lock(mutex_);
        problem_ = why;
        checked_ms_ = util::monotonic_ms();
      }
    }
    std::lock_guard lock(mutex_);
    return problem_;
  }

 private:
  static constexpr int64_t k_recheck_ms = 1000;
  int64_t checked_at() {
    std::lock_guard lock(mutex_);
    return checked_ms_;
  }
  store::StoreProvider stores_;
  std::mutex check_mutex_;  // held by the one check in progress
  std::mutex mutex_;
  int64_t checked_ms_ = INT64_MIN / 2;
  std::optional<std::string> problem_;
};

}  // namespace idem::serve
