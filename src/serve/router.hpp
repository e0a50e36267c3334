#pragma once
// The daemon's Handler: each call takes the route table in force, looks the route up once and
// delegates to it; then logs and counts every answer.
#include <functional>
#include <memory>

#include "net/server.hpp"
#include "serve/metrics.hpp"
#include "serve/state.hpp"

namespace idem::serve {

// Which listener a router answers, and so which table of the State it routes through.
enum class Listener {
  tcp,     // State::routes: hooks, the proxy, the ledger, the built-ins
  socket,  // State::socket_routes: the Unix socket's
  ui,      // State::ui_routes: the delivery-log page's own listener
};

// `current`: the state in force.
std::unique_ptr<net::Handler> make_router(std::function<std::shared_ptr<const State>()> current,
                                          Metrics& metrics, Listener listener = Listener::tcp);

}  // namespace idem::serve
