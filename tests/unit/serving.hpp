#pragma once
// An http::Server on 127.0.0.1 (a free port) run by a thread of its own for the test's scope,
// with the handler it serves; stopped and joined at the end of the scope.
#include <thread>

#include "net/server.hpp"

namespace idem::test {

template <class H>
struct Serving {
  H handler;
  http::Server server;
  int port;
  std::thread thread;
  explicit Serving(http::ServerOptions options = {})
      : server(options, handler), port(server.listen("127.0.0.1", 0, "127.0.0.1:0")) {
    thread = std::thread([this] { server.run(); });
  }
  ~Serving() {
    server.stop();
    thread.join();
  }
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;
};

}  // namespace idem::test
