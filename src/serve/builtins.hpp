#pragma once
// The daemon's built-in routes: /healthz and /metrics.
#include <memory>

#include "front/route.hpp"
#include "serve/health.hpp"
#include "serve/services.hpp"

namespace idem::serve {

// /healthz: "ok", or 503 while the store cannot be used. `loopback`: the listener is, so the
// Host must be too (DNS rebinding).
std::shared_ptr<const front::Route> health_route(StoreHealth& health, bool loopback);
// /metrics: the counters, in Prometheus' text format; `loopback` as health_route's.
std::shared_ptr<const front::Route> metrics_route(Services& services, bool loopback);

}  // namespace idem::serve
