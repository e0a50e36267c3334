#pragma once
// The daemon's counters, served at /metrics in Prometheus' text format.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace idem::serve {

// Answers by hook and outcome, the non-hook fronts' answers by family, handlers in flight.
class Metrics {
 public:
  void delivery(const std::string& hook, const std::string& outcome, int64_t ms) {
    std::lock_guard lock(mutex_);
    ++deliveries_[{hook, outcome}];
    auto& d = durations_[hook];
    d.first += ms;
    ++d.second;
  }
  // An answer of a route that is not a hook (the proxy, the ledger): counted in
  // idem_<family>_requests_total by outcome.
  void count(const std::string& family, const std::string& outcome) {
    std::lock_guard lock(mutex_);
    ++families_[{family, outcome}];
  }
  void in_flight(const std::string& hook, int delta) {
    std::lock_guard lock(mutex_);
    in_flight_[hook] += delta;
  }
  // A hook's serial groups as the last look found them: deliveries queued, and when the oldest
  // was queued (0: none).
  void queued(const std::string& hook, int64_t count, int64_t oldest_ms) {
    std::lock_guard lock(mutex_);
    queued_[hook] = {count, oldest_ms};
  }
  // A schedule's finding (SPEC §11) kept by this daemon, by kind.
  void finding(const std::string& kind) {
    std::lock_guard lock(mutex_);
    ++findings_[kind];
  }
  // The metrics in Prometheus' text format; `shed`: the connections closed over the cap.
  std::string render(int64_t shed);

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int64_t> deliveries_;
  std::map<std::string, int64_t> in_flight_;
  std::map<std::string, std::pair<int64_t, int64_t>> queued_;  // (count, oldest_ms)
  std::map<std::string, std::pair<int64_t, int64_t>> durations_;
  std::map<std::pair<std::string, std::string>, int64_t> families_;  // (family, outcome)
  std::map<std::string, int64_t> findings_;                          // by kind
};

// The notify commands' gauges and drops (engine::Notifier::stats), in the same format.
std::string notify_metrics(int running, int queued, int64_t dropped);

// The span exporter's counters (otel::Exporter::Stats, SPEC §12), in the same format.
std::string trace_metrics(int64_t exported, int64_t dropped, int64_t failed_requests);

}  // namespace idem::serve
