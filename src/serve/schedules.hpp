#pragma once
// The daemon's schedules (contract §11): evaluates the store's expectations every minute, and
// sooner when a due time's window closes, logging each finding it keeps and telling it through
// the "schedules" section's notify command. Each finding is kept, so told, once store-wide
// (engine/schedule.hpp), whichever daemon or `idem check` found it.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "serve/services.hpp"
#include "serve/state.hpp"

namespace idem::serve {

class Schedules {
 public:
  Schedules(std::function<std::shared_ptr<const State>()> current, Services& services);
  ~Schedules() { stop(); }
  Schedules(const Schedules&) = delete;
  Schedules& operator=(const Schedules&) = delete;

  void start();
  // No evaluation starts once this returns (the drain).
  void stop();

 private:
  static constexpr int64_t k_interval_ms = 60 * 1000;
  // A window closing sooner wakes the loop then, but never sooner than this after a look.
  static constexpr int64_t k_min_pause_ms = 200;

  void loop();
  // One evaluation of every expectation; when the next one is due (Unix ms).
  int64_t look(const State& state, int64_t now_ms);

  const std::function<std::shared_ptr<const State>()> current_;
  Services& services_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace idem::serve
