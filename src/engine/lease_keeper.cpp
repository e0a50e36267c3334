#include "engine/lease_keeper.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "core/errors.hpp"
#include "util/clock.hpp"

namespace idem::engine {

namespace {

// After a renewal the store could not answer, the next try comes this much sooner than a
// regular one: a tenth of the lease, within these bounds.
constexpr int64_t k_min_retry_ms = 50;
constexpr int64_t k_max_retry_ms = 1000;

}  // namespace

LeaseKeeper::LeaseKeeper(const util::Clock& clock, Renew renew, int64_t lease_ms, int64_t until_ms)
    : clock_(clock), renew_(std::move(renew)), lease_ms_(lease_ms), until_ms_(until_ms) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw os_error("pipe", errno);
  lost_read_.reset(fds[0]);
  lost_write_.reset(fds[1]);
  thread_ = std::thread([this] { loop(); });
}

LeaseKeeper::~LeaseKeeper() { stop(); }

void LeaseKeeper::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool LeaseKeeper::lost() const {
  std::lock_guard lock(mutex_);
  return lost_;
}

std::string LeaseKeeper::why_lost() const {
  std::lock_guard lock(mutex_);
  return why_;
}

int64_t LeaseKeeper::until_ms() const {
  std::lock_guard lock(mutex_);
  return until_ms_;
}

void LeaseKeeper::lose(std::unique_lock<std::mutex>&, std::string why) {
  lost_ = true;
  why_ = std::move(why);
  (void)!::write(lost_write_.get(), "x", 1);
}

void LeaseKeeper::loop() {
  const int64_t every_ms = std::max<int64_t>(1, lease_ms_ / 3);
  const int64_t retry_ms = std::clamp(lease_ms_ / 10, k_min_retry_ms, k_max_retry_ms);
  int64_t next_ms = clock_.monotonic_ms() + every_ms;
  std::unique_lock lock(mutex_);
  while (!stopping_ && !lost_) {
    const int64_t sent_ms = clock_.monotonic_ms();
    if (sent_ms >= until_ms_) {
      lose(lock, "it ran out before a renewal got through");
      break;
    }
    if (sent_ms < next_ms) {
      // Woken early only by stop(); a spurious wake-up just looks again.
      clock_.wait_until(wake_, lock, std::min(next_ms, until_ms_));
      continue;
    }
    lock.unlock();
    std::optional<bool> renewed;
    std::string error;
    try {
      renewed = renew_();
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    if (renewed == true) {
      until_ms_ = sent_ms + lease_ms_;
      next_ms = sent_ms + every_ms;
    } else if (renewed == false) {
      lose(lock, "the key's current attempt is another one now");
    } else if (clock_.monotonic_ms() >= until_ms_) {
      lose(lock, "it ran out before a renewal got through: " + error);
    } else {
      next_ms = clock_.monotonic_ms() + retry_ms;
    }
  }
}

}  // namespace idem::engine
