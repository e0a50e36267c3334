#pragma once
// The daemon's turns (contract §9): starts the deliveries that wait in the serial groups of its
// hooks, one group's at a time, as soon as the group's running attempt ends here, and every
// second for the lines this daemon did not see end (another daemon's, one cut by a crash, one
// queued before a restart).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "serve/metrics.hpp"
#include "serve/state.hpp"

namespace idem::serve {

class Turns {
 public:
  // `current`: the state in force (a reload's lines take over at the next look).
  Turns(std::function<std::shared_ptr<const State>()> current, Metrics& metrics);
  ~Turns() { stop(); }
  Turns(const Turns&) = delete;
  Turns& operator=(const Turns&) = delete;

  void start();
  // An attempt of serial group `group` (its stored name) ended: its next one may start.
  void turn_over(const std::string& group);
  // No turn starts once this returns (the drain); the runs it started are background work.
  void stop();

 private:
  // How often every line is looked at, and how many of a hook's groups one look starts at most.
  // A look that found a line it could not start (its running attempt another daemon's, or one
  // whose handler outlived a killed daemon) looks again sooner, from k_first_retry doubling up to
  // the interval.
  static constexpr std::chrono::milliseconds k_sweep_interval{1000};
  static constexpr std::chrono::milliseconds k_first_retry{50};
  static constexpr int64_t k_groups_per_look = 1000;

  void loop();
  // Starts `group`'s next delivery if it can (whether it did); a group left waiting for a handler
  // slot is kept in starved_ to be tried again when a turn ends.
  bool start_group(const State& state, const std::string& group);
  // Every serial hook's lines, and their sizes for /metrics. Whether a line with deliveries
  // waiting started none.
  bool sweep(const State& state);

  const std::function<std::shared_ptr<const State>()> current_;
  Metrics& metrics_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::set<std::string> ended_;    // groups whose turn ended since the last look
  std::set<std::string> starved_;  // groups with a waiting delivery and no free slot
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace idem::serve
