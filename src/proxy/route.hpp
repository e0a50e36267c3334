#pragma once
// The Idempotency-Key proxy as a route (contract §7): the table's fallback, taking every path no
// other route takes. A keyed request (rules.hpp) is claimed through the attempt engine, forwarded
// once by its Effect, and its answer recorded, or the key released when the policy says so; a
// duplicate is replayed from the store. Other requests are passed through untouched.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/record.hpp"
#include "engine/attempt.hpp"
#include "front/route.hpp"
#include "proxy/rules.hpp"
#include "store/provider.hpp"

namespace idem::proxy {

struct ProxyServices {
  std::shared_ptr<store::StoreProvider> stores;  // the daemon's connections
  core::Owner owner;                             // the daemon
  engine::Front front;                           // the daemon's
  // Runs work that outlives the request on a thread of its own, which the daemon's drain waits
  // for: each keyed forward (it may go on after its client got a 504). Throws when it cannot;
  // logs what `fn` throws.
  std::function<void(std::function<void()>)> spawn;
  // Keyed forwards under way (ProxyConfig::max_forwards), kept across reloads: a forward of a
  // route a reload dropped still counts.
  std::shared_ptr<std::atomic<int64_t>> forwards = std::make_shared<std::atomic<int64_t>>(0);
  // The daemon's --max-connections: max_forwards when the config gives none.
  int64_t max_connections = 64;
};

// Its answers count in /metrics as idem_proxy_requests_total{outcome}: forwarded, replayed,
// conflict, in_flight, abandoned, missing_key, bad_key, bad_request, too_large, released,
// upstream_error (nothing was sent), upstream_timeout (504: the answer is still awaited),
// outcome_unknown (502: cut off after the request was sent), answer_too_large (streamed, not
// stored), refused_unknown and refused_too_large (409s to duplicates of those two),
// passed_through, store_error, busy, and the transport's refusals (bad_request,
// request_timeout, too_large, error).
std::shared_ptr<const front::Route> make_proxy_route(const ProxyConfig& config,
                                                     ProxyServices services);

}  // namespace idem::proxy
