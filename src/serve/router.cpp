#include "serve/router.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "front/answer.hpp"
#include "front/route.hpp"
#include "serve/log.hpp"

namespace idem::serve {

namespace {

// The title of the answer to a request the transport refused (see Handler::refused).
std::string refusal_title(int status) {
  // clang-format off
  switch (status) {
    case 408: return "Request timeout";
    case 413: return "Body too large";
    case 414: return "Request line too long";
    case 431: return "Header fields too large";
    case 417: return "Expectation not supported";
    case 501: return "Transfer coding not supported";
    case 505: return "HTTP version not supported";
    case 500: return "Internal error";
    default: return "Bad request";
  }
  // clang-format on
}

// What a refusal says: the parser's reason; when the handler failed (500), its reason goes to
// the log only.
std::string refusal_detail(const net::ParseError& error) {
  return error.status == 500 ? "the daemon failed to handle the request" : error.reason;
}

std::string refusal_outcome(int status) {
  return status == 413   ? "too_large"
         : status == 408 ? "request_timeout"
         : status == 500 ? "error"
                         : "bad_request";
}

// How a route (or the router, at a path none takes) answers a request the transport refused.
front::Refusal refusal(const net::ParseError& error) {
  front::Refusal r{error.status, refusal_title(error.status), refusal_detail(error),
                   refusal_outcome(error.status), ""};
  if (error.status == 500) r.error = error.reason;
  return r;
}

// The Handler: each call takes the table in force, looks the route up once and delegates to it;
// then logs and counts every answer.
class Router final : public net::Handler {
 public:
  Router(std::function<std::shared_ptr<const State>()> current, Metrics& metrics, Listener listener)
      : current_(std::move(current)), metrics_(metrics), listener_(listener) {}

  net::Admission admit(const net::RequestHead& head) override {
    auto state = current_();
    if (const front::Route* route = routes(*state).find(head.path)) return route->admit(head);
    front::Answer a = front::problem(404, "No such hook", "no hook is configured at " + head.path);
    a.outcome = "not_found";
    return net::Admission{front::to_response(a), 0};
  }

  net::Response refused(const net::RequestHead& head, const net::ParseError& error) override {
    auto state = current_();
    // The route at the head's path answers in its own form and counts it for its hook; a
    // route may take every path, "" too (a head that did not parse: the proxy's).
    const front::Refusal r = refusal(error);
    if (const front::Route* route = routes(*state).find(head.path)) return route->refused(r);
    front::Answer a = front::problem(r.status, r.title, r.detail);
    a.error = r.error;
    return front::to_response(a);
  }

  net::Response handle(net::Request& req) override {
    auto state = current_();  // kept alive while its route answers
    if (const front::Route* route = routes(*state).find(req.head.path)) return route->handle(req);
    // Reloaded away between admission and now.
    return front::to_response(
        front::problem(404, "No such hook", "no hook is configured at " + req.head.path));
  }

  void answered(const net::RequestHead& head, const std::string& remote,
                const net::Response& response, int64_t duration_ms) override {
    nlohmann::json line{{"time", now_iso()},         {"remote", remote},
                        {"method", head.method},     {"path", head.path},
                        {"status", response.status}, {"duration_ms", duration_ms}};
    std::string hook, outcome, family;
    for (const auto& [name, value] : response.log_fields) {
      line[name] = value;
      if (name == "hook") hook = value;
      if (name == "outcome") outcome = value;
      if (name == "family") family = value;
    }
    log_line(line);
    if (outcome.empty()) outcome = "other";
    if (!hook.empty())
      metrics_.delivery(hook, outcome, duration_ms);
    else if (!family.empty())
      metrics_.count(family, outcome);
  }

 private:
  const front::RouteTable& routes(const State& state) const {
    switch (listener_) {
      case Listener::socket:
        return state.socket_routes;
      case Listener::ui:
        return state.ui_routes;
      case Listener::tcp:
        break;
    }
    return state.routes;
  }
  std::function<std::shared_ptr<const State>()> current_;
  Metrics& metrics_;
  const Listener listener_;
};

}  // namespace

std::unique_ptr<net::Handler> make_router(std::function<std::shared_ptr<const State>()> current,
                                          Metrics& metrics, Listener listener) {
  return std::make_unique<Router>(std::move(current), metrics, listener);
}

}  // namespace idem::serve
