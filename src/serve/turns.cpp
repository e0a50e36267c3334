#include "serve/turns.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "serve/log.hpp"

namespace idem::serve {

Turns::Turns(std::function<std::shared_ptr<const State>()> current, Metrics& metrics)
    : current_(std::move(current)), metrics_(metrics) {}

void Turns::start() {
  thread_ = std::thread([this] { loop(); });
}

void Turns::turn_over(const std::string& group) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    ended_.insert(group);
  }
  wake_.notify_one();
}

void Turns::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void Turns::loop() {
  auto next_sweep = std::chrono::steady_clock::now();  // the first look at once: a restart's lines
  std::chrono::milliseconds retry = k_first_retry;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_until(lock, next_sweep, [&] { return stopping_ || !ended_.empty(); });
    if (stopping_) return;
    std::set<std::string> groups = std::move(ended_);
    ended_.clear();
    if (!groups.empty()) groups.merge(starved_);  // a turn that ended freed a slot
    starved_.clear();
    const bool sweeping = std::chrono::steady_clock::now() >= next_sweep;
    lock.unlock();
    const std::shared_ptr<const State> state = current_();
    for (const std::string& group : groups) start_group(*state, group);
    if (sweeping) {
      const bool blocked = sweep(*state);
      next_sweep = std::chrono::steady_clock::now() + (blocked ? retry : k_sweep_interval);
      retry = blocked ? std::min(retry * 2, k_sweep_interval) : k_first_retry;
    }
    lock.lock();
  }
}

bool Turns::start_group(const State& state, const std::string& group) {
  auto line = state.serial_lines.find(group.substr(0, group.find('#')));
  if (line == state.serial_lines.end()) return false;  // a hook a reload removed: its line waits
  try {
    if (hooks::start_turn(line->second, group)) return true;
  } catch (const std::exception& e) {
    // Looked at again by the next sweep.
    log_line(
        {{"time", now_iso()}, {"event", "turn_failed"}, {"group", group}, {"error", e.what()}});
    return false;
  }
  if (!line->second.slots->has_room()) {
    std::lock_guard lock(mutex_);
    starved_.insert(group);
  }
  return false;
}

bool Turns::sweep(const State& state) {
  bool blocked = false;
  for (const auto& [path, line] : state.serial_lines) {
    std::vector<store::QueuedGroup> groups;
    try {
      groups = line.services.stores->lease()->queued_groups(path + "#", k_groups_per_look);
    } catch (const std::exception& e) {
      log_line(
          {{"time", now_iso()}, {"event", "turn_failed"}, {"hook", path}, {"error", e.what()}});
      continue;
    }
    int64_t queued = 0;
    int64_t oldest_ms = 0;
    for (const store::QueuedGroup& g : groups) {
      queued += g.queued;
      if (oldest_ms == 0 || g.oldest_ms < oldest_ms) oldest_ms = g.oldest_ms;
    }
    metrics_.queued(path, queued, oldest_ms);
    for (const store::QueuedGroup& g : groups)
      if (!start_group(state, g.group)) blocked = true;
  }
  return blocked;
}

}  // namespace idem::serve
