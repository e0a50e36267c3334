#pragma once
// The routes the daemon makes itself: /healthz, /metrics, and one per native hook of the config.
#include <memory>

#include "front/route.hpp"
#include "hooks/config.hpp"
#include "hooks/delivery.hpp"
#include "serve/health.hpp"
#include "serve/services.hpp"

namespace idem::http {

// /healthz: "ok", or 503 while the store cannot be used. `loopback`: the listener is, so the
// Host must be too (DNS rebinding).
std::shared_ptr<const Route> health_route(StoreHealth& health, bool loopback);
// /metrics: the counters, in Prometheus' text format; `loopback` as health_route's.
std::shared_ptr<const Route> metrics_route(Services& services, bool loopback);
// One configured hook: its methods and body limit, then deliver() (contract §6's table).
std::shared_ptr<const Route> native_hook_route(Hook hook, std::shared_ptr<HookSlots> slots,
                                               Services& services);

}  // namespace idem::http
