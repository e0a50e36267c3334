// The HTTP server (http/server.hpp) over real sockets on 127.0.0.1 with a small handler: answers
// in order on one connection, the connection cap, and a stop that lets a request being handled
// finish. Also what the ThreadSanitizer run checks the server's threads with.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "http/server.hpp"
#include "util/fd.hpp"

using namespace idem::http;

namespace {

// Answers "<method> <path> <body>"; a request to /block waits until release() is called.
class EchoHandler final : public Handler {
 public:
  Admission admit(const RequestHead& head) override {
    if (head.path == "/nope") {
      Response r;
      r.status = 404;
      return Admission{r, 0};
    }
    return Admission{std::nullopt, 1024};
  }
  Response handle(Request& req) override {
    if (req.head.path == "/block") {
      std::unique_lock lock(mutex_);
      blocked_ = true;
      changed_.notify_all();
      changed_.wait(lock, [&] { return released_; });
    }
    Response r;
    r.content_type = "text/plain";
    r.body = req.head.method + " " + req.head.path + " " + req.body;
    return r;
  }
  Response refused(const RequestHead&, const ParseError& error) override {
    Response r;
    r.status = error.status;
    r.body = error.reason;
    return r;
  }
  void answered(const RequestHead&, const std::string&, const Response&, int64_t) override {
    ++answered_;
  }
  void wait_blocked() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return blocked_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  std::atomic<int> answered_{0};

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool blocked_ = false;
  bool released_ = false;
};

idem::util::Fd connect_to(int port) {
  idem::util::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

// Everything the server sends until it closes the connection (or 10 s pass).
std::string read_until_closed(int fd) {
  std::string out;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[4096];
  while (std::chrono::steady_clock::now() < give_up) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

struct Running {
  EchoHandler handler;
  Server server;
  int port;
  std::thread thread;
  explicit Running(ServerOptions options = {})
      : server(options, handler), port(server.listen("127.0.0.1", 0, "127.0.0.1:0")) {
    thread = std::thread([this] { server.run(); });
  }
  ~Running() {
    server.stop();
    thread.join();
  }
};

}  // namespace

TEST_CASE("server: pipelined requests are answered in order", "[server]") {
  Running r;
  idem::util::Fd c = connect_to(r.port);
  REQUIRE(idem::util::write_all(c.get(),
                                "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\none"
                                "GET /b HTTP/1.1\r\nHost: t\r\n\r\n"
                                "POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
                                "Connection: close\r\n\r\ntwo"));
  std::string out = read_until_closed(c.get());
  CHECK(count(out, "HTTP/1.1 200 OK\r\n") == 3);
  size_t a = out.find("POST /a one"), b = out.find("GET /b "), cc = out.find("POST /c two");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  REQUIRE(cc != std::string::npos);
  CHECK(a < b);
  CHECK(b < cc);
  CHECK(count(out, "Connection: close\r\n") == 1);
}

TEST_CASE("server: a refused request with an unread body closes the connection", "[server]") {
  Running r;
  idem::util::Fd c = connect_to(r.port);
  REQUIRE(idem::util::write_all(c.get(),
                                "POST /nope HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
                                "GET /b HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::string out = read_until_closed(c.get());
  CHECK(out.rfind("HTTP/1.1 404 Not Found\r\n", 0) == 0);
  CHECK(count(out, "HTTP/1.1 ") == 1);
  CHECK(count(out, "Connection: close\r\n") == 1);
}

TEST_CASE("server: connections over twice the cap are closed at once", "[server]") {
  ServerOptions options;
  options.max_connections = 1;
  Running r(options);
  idem::util::Fd served = connect_to(r.port);
  idem::util::Fd waiting = connect_to(r.port);
  idem::util::Fd shed = connect_to(r.port);
  CHECK(read_until_closed(shed.get()).empty());
  CHECK(r.server.shed_count() == 1);
  // The waiting one is served once the first goes away.
  served.reset();
  REQUIRE(idem::util::write_all(waiting.get(),
                                "GET /w HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  CHECK(read_until_closed(waiting.get()).find("GET /w ") != std::string::npos);
}

TEST_CASE("server: stop lets a request being handled finish, then run returns", "[server]") {
  auto r = std::make_unique<Running>();
  idem::util::Fd busy = connect_to(r->port);
  idem::util::Fd idle = connect_to(r->port);
  REQUIRE(idem::util::write_all(busy.get(), "GET /block HTTP/1.1\r\nHost: t\r\n\r\n"));
  r->handler.wait_blocked();
  r->server.stop();
  // The idle connection is closed without an answer; new connections are refused soon.
  CHECK(read_until_closed(idle.get()).empty());
  r->handler.release();
  std::string out = read_until_closed(busy.get());
  CHECK(out.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(out.find("Connection: close\r\n") != std::string::npos);
  CHECK(out.find("GET /block ") != std::string::npos);
  r.reset();  // joins run()
}

TEST_CASE("server: a port in use is refused", "[server]") {
  Running r;
  EchoHandler other;
  Server second(ServerOptions{}, other);
  std::string shown = "127.0.0.1:" + std::to_string(r.port);
  try {
    second.listen("127.0.0.1", r.port, shown);
    FAIL("the second server listened on a port in use");
  } catch (const ListenError& e) {
    CHECK(std::string(e.what()) == "cannot listen on " + shown + ": address already in use");
    CHECK(e.code() == idem::k_exit_listen);
  }
}
