#include "serve/services.hpp"

#include <nlohmann/json.hpp>
#include <utility>

#include "engine/notify.hpp"
#include "otel/setup.hpp"
#include "proc/runner.hpp"
#include "serve/log.hpp"

namespace idem::serve {

hooks::DeliveryServices delivery_services(Services& all, const std::string& path,
                                          std::shared_ptr<hooks::HookSlots> slots,
                                          std::shared_ptr<const core::NotifySpec> notify) {
  hooks::DeliveryServices services;
  services.stores = all.stores;
  services.owner = all.owner;
  services.front = all.front;
  if (notify) services.front.notify = std::move(notify);
  services.spawn = [&all, path, slots](std::function<void()> fn) {
    all.metrics.in_flight(path, 1);
    all.background.spawn([&all, path, slots, fn = std::move(fn)] {
      fn();
      all.metrics.in_flight(path, -1);
    });
  };
  services.turn_over = [&all](const std::string& group) {
    if (all.turn_over) all.turn_over(group);
  };
  return services;
}

hooks::RouteServices route_services(Services& all, const std::string& path,
                                    std::shared_ptr<hooks::HookSlots> slots,
                                    std::shared_ptr<const core::NotifySpec> notify) {
  return hooks::RouteServices{
      delivery_services(all, path, std::move(slots), std::move(notify)),
      [&metrics = all.metrics, path](int delta) { metrics.in_flight(path, delta); }};
}

std::shared_ptr<otel::Exporter> daemon_exporter() {
  otel::Exporter::Options options;
  options.report = [](const std::string& line) {
    log_line({{"time", now_iso()}, {"event", "warning"}, {"warning", line}});
  };
  return otel::exporter_from_environment(util::process_clock(), std::move(options));
}

std::shared_ptr<engine::Notifier> daemon_notifier(Background& background) {
  engine::Notifier::Options options;
  options.defer = [&background](std::function<void()> fn) { background.spawn(std::move(fn)); };
  options.runner = &proc::spawning_runner();
  options.report = [](const engine::NotifyReport& r) {
    using Result = engine::NotifyReport::Result;
    static constexpr size_t k_logged_output = 2048;
    nlohmann::json line{
        {"time", now_iso()},   {"event", r.result == Result::ran ? "notified" : "notify_failed"},
        {"key", r.key},        {"notify_event", std::string(core::to_string(r.event))},
        {"message", r.text()}, {"duration_ms", r.duration_ms}};
    if (r.result != Result::dropped) line["exit_code"] = r.exit_code;
    if (!r.output.empty()) {
      // Its first bytes: enough to say why, never a flood in the log.
      line["output"] = r.output.substr(0, k_logged_output);
      if (r.output.size() > k_logged_output || r.output_truncated) line["output_truncated"] = true;
    }
    log_line(line);
  };
  return std::make_shared<engine::Notifier>(std::move(options));
}

}  // namespace idem::serve
