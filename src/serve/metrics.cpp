#include "serve/metrics.hpp"

#include <algorithm>
#include <sstream>

#include "util/clock.hpp"

namespace idem::serve {

std::string Metrics::render(int64_t shed) {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  out << "# HELP idem_deliveries_total Deliveries by hook and outcome.\n"
         "# TYPE idem_deliveries_total counter\n";
  for (const auto& [k, n] : deliveries_)
    out << "idem_deliveries_total{hook=\"" << k.first << "\",outcome=\"" << k.second << "\"} " << n
        << "\n";
  out << "# HELP idem_replays_total Duplicate deliveries answered from the store.\n"
         "# TYPE idem_replays_total counter\n";
  for (const auto& [k, n] : deliveries_)
    if (k.second == "replayed")
      out << "idem_replays_total{hook=\"" << k.first << "\"} " << n << "\n";
  out << "# HELP idem_connections_shed_total Connections over the cap (--max-connections): "
         "answered 503 and closed.\n"
         "# TYPE idem_connections_shed_total counter\n"
      << "idem_connections_shed_total " << shed << "\n";
  out << "# HELP idem_in_flight Deliveries being handled now.\n# TYPE idem_in_flight gauge\n";
  for (const auto& [hook, n] : in_flight_)
    out << "idem_in_flight{hook=\"" << hook << "\"} " << n << "\n";
  out << "# HELP idem_queued Deliveries waiting their turn in the hook's serial groups.\n"
         "# TYPE idem_queued gauge\n";
  for (const auto& [hook, q] : queued_)
    out << "idem_queued{hook=\"" << hook << "\"} " << q.first << "\n";
  out << "# HELP idem_queued_oldest_seconds How long the hook's longest-waiting queued delivery "
         "has waited.\n# TYPE idem_queued_oldest_seconds gauge\n";
  const int64_t now_ms = util::process_clock().now_ms();
  for (const auto& [hook, q] : queued_)
    out << "idem_queued_oldest_seconds{hook=\"" << hook << "\"} "
        << (q.second == 0 ? 0.0 : double(std::max<int64_t>(0, now_ms - q.second)) / 1000) << "\n";
  out << "# HELP idem_delivery_duration_seconds Time to answer a delivery.\n"
         "# TYPE idem_delivery_duration_seconds summary\n";
  for (const auto& [hook, d] : durations_) {
    out << "idem_delivery_duration_seconds_sum{hook=\"" << hook << "\"} " << double(d.first) / 1000
        << "\n";
    out << "idem_delivery_duration_seconds_count{hook=\"" << hook << "\"} " << d.second << "\n";
  }
  std::string family;
  for (const auto& [k, n] : families_) {
    if (k.first != family) {
      family = k.first;
      out << "# HELP idem_" << family << "_requests_total Requests to the " << family
          << " by outcome.\n# TYPE idem_" << family << "_requests_total counter\n";
    }
    out << "idem_" << family << "_requests_total{outcome=\"" << k.second << "\"} " << n << "\n";
  }
  if (!findings_.empty())
    out << "# HELP idem_schedule_findings_total Schedule findings this daemon found, by kind.\n"
           "# TYPE idem_schedule_findings_total counter\n";
  for (const auto& [kind, n] : findings_)
    out << "idem_schedule_findings_total{kind=\"" << kind << "\"} " << n << "\n";
  return out.str();
}

namespace {

// One metric without labels: its HELP and TYPE lines, then its value.
std::string single_metric(const char* name, const char* type, const char* help, int64_t value) {
  return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
         name + " " + std::to_string(value) + "\n";
}

}  // namespace

std::string notify_metrics(int running, int queued, int64_t dropped) {
  return single_metric("idem_notify_running", "gauge", "Notify commands running now.", running) +
         single_metric("idem_notify_queued", "gauge", "Notify commands waiting for their turn.",
                       queued) +
         single_metric("idem_notify_dropped_total", "counter",
                       "Notify commands dropped: the queue was full, or two waited for their key "
                       "already, or the drain left no time.",
                       dropped);
}

std::string trace_metrics(int64_t exported, int64_t dropped, int64_t failed_requests) {
  return single_metric("idem_trace_spans_exported_total", "counter",
                       "Spans the OTLP receiver accepted.", exported) +
         single_metric("idem_trace_spans_dropped_total", "counter",
                       "Spans dropped: the export queue was full, their export request failed, "
                       "or the drain left no time.",
                       dropped) +
         single_metric("idem_trace_export_failures_total", "counter",
                       "Export requests the receiver did not accept (down, slow, or an error "
                       "status).",
                       failed_requests);
}

}  // namespace idem::serve
