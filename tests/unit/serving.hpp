#pragma once
// A net::Server on 127.0.0.1 (a free port) run by a thread of its own for the test's scope,
// with the handler it serves; stopped and joined at the end of the scope. And its clients:
// connections to it, and what it answers on one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "net/server.hpp"
#include "util/fd.hpp"

namespace idem::test {

// A new connection to 127.0.0.1:port.
inline util::Fd connect_to(int port) {
  util::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

// Everything the server sends on `fd` until it closes the connection (or 10 s pass).
inline std::string read_until_closed(int fd) {
  std::string out;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[4096];
  while (std::chrono::steady_clock::now() < give_up) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

template <class H>
struct Serving {
  H handler;
  net::Server server;
  int port;
  std::thread thread;
  explicit Serving(net::ServerOptions options = {})
      : server(options, handler), port(server.listen("127.0.0.1", 0, "127.0.0.1:0")) {
    thread = std::thread([this] { server.run(); });
  }
  ~Serving() {
    server.stop();
    thread.join();
  }
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;

  util::Fd connect() const { return connect_to(port); }
  // What the server sends back for `requests`, written at once on a new connection, until it
  // closes that connection (a request that asks it to, an HTTP/1.0 one, an error) or 10 s pass.
  std::string exchange(std::string_view requests) const {
    util::Fd c = connect();
    REQUIRE(util::write_all(c.get(), requests));
    return read_until_closed(c.get());
  }
};

}  // namespace idem::test
