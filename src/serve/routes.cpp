#include "serve/routes.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "engine/notify.hpp"
#include "front/store_failure.hpp"
#include "net/ip_range.hpp"
#include "serve/log.hpp"

namespace idem::http {

namespace {

// /healthz and /metrics: GET or HEAD only; a body is read and ignored. On a loopback listener
// the Host must name a loopback host, as the page's does: a page of another site whose name
// resolves to 127.0.0.1 (DNS rebinding) cannot read the hooks' paths and counts.
class BuiltinRoute : public Route {
 public:
  BuiltinRoute(std::string path, bool loopback) : path_(std::move(path)), loopback_(loopback) {}
  bool matches(std::string_view path) const override { return path == path_; }
  Admission admit(const RequestHead& head) const override {
    // A request without Host (HTTP/1.0: a monitor's probe) is no browser's, so no rebinding.
    if (loopback_ && head.headers.count("Host") != 0) {
      auto host = head.headers.get("Host");
      if (!host || head.headers.count("Host") != 1 || !is_loopback_host(*host))
        return Admission{
            to_response(problem(403, "Forbidden", "this address answers only to a loopback Host")),
            0};
    }
    if (head.method == "GET" || head.method == "HEAD") return Admission{std::nullopt, k_max_body};
    Response r = to_response(
        problem(405, "Method not allowed", head.method + " is not allowed on " + head.path));
    r.headers.emplace_back("Allow", "GET, HEAD");
    return Admission{std::move(r), 0};
  }

 private:
  static constexpr uint64_t k_max_body = 64 * 1024;
  std::string path_;
  bool loopback_;
};

class HealthRoute final : public BuiltinRoute {
 public:
  HealthRoute(StoreHealth& health, bool loopback)
      : BuiltinRoute("/healthz", loopback), health_(health) {}
  Response handle(Request&) const override {
    Response r;
    if (auto why = health_.problem()) {
      StoreFailureAnswer s = store_unavailable_answer();
      Answer a = problem(s.status, s.title, s.detail);
      a.headers = std::move(s.headers);
      a.error = *why;
      r = to_response(a);
    } else {
      r.content_type = "text/plain";
      r.body = "ok\n";
    }
    r.log_fields.emplace_back("outcome", "health");
    return r;
  }

 private:
  StoreHealth& health_;
};

class MetricsRoute final : public BuiltinRoute {
 public:
  MetricsRoute(Services& services, bool loopback)
      : BuiltinRoute("/metrics", loopback), services_(services) {}
  Response handle(Request&) const override {
    Response r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = services_.metrics.render(services_.shed_count ? services_.shed_count() : 0);
    r.body +=
        "# HELP idem_store_connections_opened_total Store connections opened for deliveries, "
        "each reused by later ones.\n"
        "# TYPE idem_store_connections_opened_total counter\n"
        "idem_store_connections_opened_total " +
        std::to_string(services_.stores->opened()) + "\n";
    if (services_.front.notifier) {
      const engine::Notifier::Stats n = services_.front.notifier->stats();
      r.body += notify_metrics(n.running, n.queued, n.dropped);
    }
    r.log_fields.emplace_back("outcome", "metrics");
    return r;
  }

 private:
  Services& services_;
};

// One configured hook: its methods and body limit, then deliver() (contract §6's table).
class HookRoute final : public Route {
 public:
  HookRoute(Hook hook, std::shared_ptr<HookSlots> slots, Services& services)
      : hook_(std::move(hook)), slots_(std::move(slots)), services_(services) {}

  bool matches(std::string_view path) const override { return path == hook_.path; }

  Admission admit(const RequestHead& head) const override {
    if (!allows(hook_.allow, head.remote)) {
      Answer a = problem(403, "Forbidden", "hook " + hook_.path + " does not serve " + head.remote);
      a.outcome = "forbidden";
      return Admission{to_response(a, hook_.path), 0};
    }
    const auto& methods = hook_.methods;
    if (std::find(methods.begin(), methods.end(), head.method) == methods.end()) {
      std::string allow;
      for (const auto& m : methods) allow += (allow.empty() ? "" : ", ") + m;
      Answer a =
          problem(405, "Method not allowed", head.method + " is not allowed on " + head.path);
      a.outcome = "bad_method";
      Response r = to_response(a, hook_.path);
      r.headers.emplace_back("Allow", allow);
      return Admission{std::move(r), 0};
    }
    // An announced oversize body is refused before it is read.
    if (!head.chunked && head.content_length > uint64_t(hook_.max_body))
      return Admission{too_large(std::to_string(head.content_length)), 0};
    return Admission{std::nullopt, uint64_t(hook_.max_body)};
  }

  Response handle(Request& req) const override {
    if (int64_t(req.body.size()) > hook_.max_body)  // a reload lowered the limit meanwhile
      return too_large(std::to_string(req.body.size()));
    Delivery d;
    d.method = req.head.method;
    d.path = req.head.path;
    d.headers = req.head.headers.fields();
    d.body = std::move(req.body);
    services_.metrics.in_flight(hook_.path, 1);
    Answer a =
        deliver(hook_, *slots_, d, delivery_services(services_, hook_.path, slots_, hook_.notify));
    services_.metrics.in_flight(hook_.path, -1);
    return to_response(std::move(a), hook_.path);
  }

  const std::string& hook() const override { return hook_.path; }

 private:
  Response too_large(const std::string& size) const {
    Answer a = problem(413, "Body too large",
                       "the body is " + size + " bytes; hook " + hook_.path + " accepts at most " +
                           std::to_string(hook_.max_body));
    a.outcome = "too_large";
    return to_response(a, hook_.path);
  }

  const Hook hook_;
  const std::shared_ptr<HookSlots> slots_;
  Services& services_;
};

}  // namespace

std::shared_ptr<const Route> health_route(StoreHealth& health, bool loopback) {
  return std::make_shared<HealthRoute>(health, loopback);
}

std::shared_ptr<const Route> metrics_route(Services& services, bool loopback) {
  return std::make_shared<MetricsRoute>(services, loopback);
}

std::shared_ptr<const Route> native_hook_route(Hook hook, std::shared_ptr<HookSlots> slots,
                                               Services& services) {
  return std::make_shared<HookRoute>(std::move(hook), std::move(slots), services);
}

}  // namespace idem::http
