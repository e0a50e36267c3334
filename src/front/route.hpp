#pragma once
// The Route every front implements, and the daemon's route table: the routes in the order they are
// tried, the first that takes a request's path answers it. The daemon builds it from the config
// (serve/state.cpp): the built-ins /healthz and /metrics, then with --ledger the ledger API's paths
// (a hook at one of them is refused), then one route per hook, then one per hook of the --hooks
// files, and last the proxy's fallback, which takes every path (without one, webhook's router's own
// answers: "/", bad escapes, unclean paths, the 404 under the files' prefix; webhook/route.hpp). A
// path no route takes is answered 404. A Unix socket (--socket) has a table of its own: the
// built-ins and the ledger.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/server.hpp"

namespace idem::front {

// A request the transport refused (a head that did not parse, a body too large or too slow, a
// handler that failed) as the route at its path answers it.
struct Refusal {
  int status = 400;
  std::string title;
  std::string detail;   // sent
  std::string outcome;  // for the log and metrics: too_large, request_timeout, error, bad_request
  std::string error;    // for the log only: why a handler failed (500)
};

// One entry of the table. Every member is called on worker threads, several at once.
class Route {
 public:
  static inline const std::string k_not_a_hook;
  virtual ~Route() = default;
  // Whether this route answers requests for `path`, whatever their method: a route answers a
  // method it does not serve itself (405 with Allow).
  virtual bool matches(std::string_view path) const = 0;
  // Once the head is in, before the body is read: a refusal to answer at once, or the body limit.
  virtual net::Admission admit(const net::RequestHead& head) const = 0;
  // The request, admitted by this route or by its predecessor at the same path before a reload.
  virtual net::Response handle(net::Request& request) const = 0;
  // The hook the route's answers and refusals count for in the access log and the metrics;
  // empty (the default) for the routes that are not hooks.
  virtual const std::string& hook() const { return k_not_a_hook; }
  // The answer to a request at the route's paths that the transport refused: by default a
  // problem document, counted for hook() when it is one. A front whose clients read another
  // form overrides it (the proxy's, contract §7).
  virtual net::Response refused(const Refusal& refusal) const;
};

class RouteTable {
 public:
  void add(std::shared_ptr<const Route> route) { routes_.push_back(std::move(route)); }
  // The first route that takes `path`, or nullptr.
  const Route* find(std::string_view path) const {
    for (const auto& route : routes_)
      if (route->matches(path)) return route.get();
    return nullptr;
  }
  size_t size() const { return routes_.size(); }

 private:
  std::vector<std::shared_ptr<const Route>> routes_;
};

}  // namespace idem::front
