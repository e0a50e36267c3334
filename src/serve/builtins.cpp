#include "serve/builtins.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "engine/notify.hpp"
#include "front/answer.hpp"
#include "front/store_failure.hpp"
#include "net/ip_range.hpp"
#include "otel/exporter.hpp"
#include "serve/log.hpp"

namespace idem::serve {

namespace {

// /healthz and /metrics: GET or HEAD only; a body is read and ignored. On a loopback listener
// the Host must name a loopback host, as the page's does: a page of another site whose name
// resolves to 127.0.0.1 (DNS rebinding) cannot read the hooks' paths and counts.
class BuiltinRoute : public front::Route {
 public:
  BuiltinRoute(std::string path, bool loopback) : path_(std::move(path)), loopback_(loopback) {}
  bool matches(std::string_view path) const override { return path == path_; }
  net::Admission admit(const net::RequestHead& head) const override {
    // A request without Host (HTTP/1.0: a monitor's probe) is no browser's, so no rebinding.
    if (loopback_ && head.headers.count("Host") != 0) {
      auto host = head.headers.get("Host");
      if (!host || head.headers.count("Host") != 1 || !net::is_loopback_host(*host))
        return net::Admission{
            front::to_response(
                front::problem(403, "Forbidden", "this address answers only to a loopback Host")),
            0};
    }
    if (head.method == "GET" || head.method == "HEAD")
      return net::Admission{std::nullopt, k_max_body};
    net::Response r = front::to_response(
        front::problem(405, "Method not allowed", head.method + " is not allowed on " + head.path));
    r.headers.emplace_back("Allow", "GET, HEAD");
    return net::Admission{std::move(r), 0};
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
  net::Response handle(net::Request&) const override {
    net::Response r;
    if (auto why = health_.problem()) {
      front::StoreFailureAnswer s = front::store_unavailable_answer();
      front::Answer a = front::problem(s.status, s.title, s.detail);
      a.headers = std::move(s.headers);
      a.error = *why;
      r = front::to_response(a);
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
  net::Response handle(net::Request&) const override {
    net::Response r;
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
    if (services_.traces) {
      const otel::Exporter::Stats t = services_.traces->stats();
      r.body += trace_metrics(t.exported, t.dropped, t.failed_requests);
    }
    r.log_fields.emplace_back("outcome", "metrics");
    return r;
  }

 private:
  Services& services_;
};

}  // namespace

std::shared_ptr<const front::Route> health_route(StoreHealth& health, bool loopback) {
  return std::make_shared<HealthRoute>(health, loopback);
}

std::shared_ptr<const front::Route> metrics_route(Services& services, bool loopback) {
  return std::make_shared<MetricsRoute>(services, loopback);
}

}  // namespace idem::serve
