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
  return out.str();
}

std::string notify_metrics(int running, int queued, int64_t dropped) {
  return "# HELP idem_notify_running Notify commands running now.\n"
         "# TYPE idem_notify_running gauge\n"
         "idem_notify_running " +
         std::to_string(running) +
         "\n# HELP idem_notify_queued Notify commands waiting for their turn.\n"
         "# TYPE idem_notify_queued gauge\n"
         "idem_notify_queued " +
         std::to_string(queued) +
         "\n# HELP idem_notify_dropped_total Notify commands dropped: the queue was full, or "
         "two waited for their key already, or the drain left no time.\n"
         "# TYPE idem_notify_dropped_total counter\n"
         "idem_notify_dropped_total " +
         std::to_string(dropped) + "\n";
}

std::string trace_metrics(int64_t exported, int64_t dropped, int64_t failed_requests) {
  return "# HELP idem_trace_spans_exported_total Spans the OTLP receiver accepted.\n"
         "# TYPE idem_trace_spans_exported_total counter\n"
         "idem_trace_spans_exported_total " +
         std::to_string(exported) +
         "\n# HELP idem_trace_spans_dropped_total Spans dropped: the export queue was full, their "
         "export request failed, or the drain left no time.\n"
         "# TYPE idem_trace_spans_dropped_total counter\n"
         "idem_trace_spans_dropped_total " +
         std::to_string(dropped) +
         "\n# HELP idem_trace_export_failures_total Export requests the receiver did not accept "
         "(down, slow, or an error status).\n"
         "# TYPE idem_trace_export_failures_total counter\n"
         "idem_trace_export_failures_total " +
         std::to_string(failed_requests) + "\n";
}

}  // namespace idem::serve
