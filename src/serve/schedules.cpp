#include "serve/schedules.hpp"

#include <algorithm>
#include <chrono>

#include "core/errors.hpp"
#include "engine/notify.hpp"
#include "engine/schedule.hpp"
#include "serve/log.hpp"
#include "util/clock.hpp"

namespace idem::serve {

Schedules::Schedules(std::function<std::shared_ptr<const State>()> current, Services& services)
    : current_(std::move(current)), services_(services) {}

void Schedules::start() {
  thread_ = std::thread([this] { loop(); });
}

void Schedules::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Schedules::loop() {
  const util::Clock& clock = util::process_clock();
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const int64_t now = clock.now_ms();
    int64_t next = now + k_interval_ms;
    if (std::shared_ptr<const State> state = current_()) next = look(*state, now);
    next = std::clamp(next, now + k_min_pause_ms, now + k_interval_ms);
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(next - clock.now_ms()),
                   [this] { return stopping_; });
  }
}

int64_t Schedules::look(const State& state, int64_t now_ms) {
  engine::ScheduleCheck check;
  try {
    check = engine::check_expectations(*services_.stores->lease(), now_ms);
  } catch (const Error& e) {
    log_line({{"time", now_iso()}, {"event", "schedule_check_failed"}, {"message", e.what()}});
    return now_ms + k_interval_ms;
  }
  for (const std::string& problem : check.problems)
    log_line({{"time", now_iso()}, {"event", "schedule_check_failed"}, {"message", problem}});
  for (const core::ScheduleFinding& f : check.found) {
    const std::string kind(core::to_string(f.kind));
    services_.metrics.finding(kind);
    nlohmann::json line = {{"time", now_iso()},
                           {"event", "schedule_finding"},
                           {"kind", kind},
                           {"pattern", f.pattern},
                           {"message", core::schedule_finding_line(f)}};
    if (!f.key.empty()) line["key"] = f.key;
    log_line(line);
    const std::shared_ptr<const core::NotifySpec>& notify = state.config.schedule_notify;
    if (!notify || !services_.front.notifier) continue;
    auto of = std::find_if(check.expectations.begin(), check.expectations.end(),
                           [&](const auto& x) { return x.expectation.pattern == f.pattern; });
    if (of == check.expectations.end()) continue;
    services_.front.notifier->fire(notify, core::notify_event_of(f.kind),
                                   core::finding_notify_key(f),
                                   core::finding_document(f, of->expectation, now_ms));
  }
  return check.wake_ms;
}

}  // namespace idem::serve
