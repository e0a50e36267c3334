#pragma once
// Keeps a claimed attempt's lease while its effect runs: a thread of its own renews it every
// third of its length. The lease is lost when a renewal finds the attempt is no longer the key's
// current one (its owner was paused past the lease, another took over), or when the lease ran
// out, by this host's monotonic clock (the engine's injected one), before a renewal got through
// (the store unreachable): from then on the attempt counts as abandoned on every host, so its
// effect must stop.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::engine {

class LeaseKeeper {
 public:
  // What a renewal found: renewed, or the attempt is no longer current. StoreError thrown by
  // `renew` means the store could not be asked; it is tried again sooner.
  using Renew = std::function<bool()>;

  // `until_ms`: where the lease ends now on `clock`'s monotonic time, taken before the claim
  // was sent, so it ends no later than the store's own expiry. Every wait and every reading of
  // the time goes through `clock`.
  LeaseKeeper(const util::Clock& clock, Renew renew, int64_t lease_ms, int64_t until_ms);
  ~LeaseKeeper();  // stop()s
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Readable once the lease is lost: the effect polls it and stops.
  int lost_fd() const { return lost_read_.get(); }
  // Ends the renewals (joins the thread). Safe to call twice.
  void stop();

  // After stop(): whether the lease was lost, why, and where it ends on the monotonic clock.
  bool lost() const;
  std::string why_lost() const;
  int64_t until_ms() const;

 private:
  void loop();
  void lose(std::unique_lock<std::mutex>& lock, std::string why);

  const util::Clock& clock_;
  Renew renew_;
  const int64_t lease_ms_;
  util::Fd lost_read_, lost_write_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool stopping_ = false;
  bool lost_ = false;
  std::string why_;
  int64_t until_ms_;
  std::thread thread_;
};

}  // namespace idem::engine
