#pragma once
// The Idempotency-Key proxy as a route (SPEC §7): the table's fallback, taking every path no
// other route takes. A keyed request (proxy.hpp) is claimed through the attempt engine, forwarded
// once by its Effect, and its answer recorded, or the key released when the policy says so; a
// duplicate is replayed from the store. Other requests are passed through untouched.
#include <cstdint>
#include <memory>

#include "core/record.hpp"
#include "http/proxy.hpp"
#include "http/routes.hpp"
#include "store/provider.hpp"

namespace idem::http {

struct ProxyServices {
  std::shared_ptr<store::StoreProvider> stores;  // the daemon's connections
  core::Owner owner;                             // the daemon
  int64_t lease_ms = 0;  // of every claim (0: none, a store of one host)
};

// Its answers count in /metrics as idem_proxy_requests_total{outcome}: forwarded, replayed,
// conflict, in_flight, abandoned, missing_key, bad_key, too_large, released, upstream_error,
// upstream_timeout, passed_through, store_error.
std::shared_ptr<const Route> make_proxy_route(const ProxyConfig& config, ProxyServices services);

}  // namespace idem::http
