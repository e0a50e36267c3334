#pragma once
// How every HTTP front (hooks, webhook hooks, the ledger, the proxy, /healthz) answers a store
// that failed, each in its own body format. The reason names the store's path, so it goes to the
// log only, never to the client. A store that will not work without someone acting (not a store,
// a newer schema, no permission) is a 500: a client retrying it would only pile up. Anything else
// (busy, unreachable, an error of unknown kind) is a 503 with Retry-After.
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"

namespace idem::front {

struct StoreFailureAnswer {
  int status = 503;
  std::string title;
  std::string detail;
  std::vector<std::pair<std::string, std::string>> headers;  // Retry-After on a 503
};

// The answer to a store that cannot be used now (a transient failure, or /healthz's look).
inline StoreFailureAnswer store_unavailable_answer() {
  return {503,
          "Store unavailable",
          "the store cannot be used now; retry later",
          {{"Retry-After", "5"}}};
}

// The answer to `e`, thrown by a store call.
inline StoreFailureAnswer store_failure_answer(const std::exception& e) {
  const auto* store_error = dynamic_cast<const StoreError*>(&e);
  if (store_error != nullptr && !store_error->transient())
    return {500, "Store unusable", "the store cannot be used; the log says why", {}};
  return store_unavailable_answer();
}

}  // namespace idem::front
