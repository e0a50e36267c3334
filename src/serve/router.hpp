#pragma once
// The daemon's Handler: each call takes the route table in force, looks the route up once and
// delegates to it; then logs and counts every answer.
#include <functional>
#include <memory>

#include "net/server.hpp"
#include "serve/metrics.hpp"
#include "serve/state.hpp"

namespace idem::http {

// `current`: the state in force; `socket`: the Unix socket's router, which routes through
// State::socket_routes.
std::unique_ptr<Handler> make_router(std::function<std::shared_ptr<const State>()> current,
                                     Metrics& metrics, bool socket = false);

}  // namespace idem::http
