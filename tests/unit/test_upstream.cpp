// The upstream client (net/upstream.hpp) against real servers on 127.0.0.1: the project's own
// net::Server with a small handler for well-behaved answers, and a raw socket server whose
// connections follow a script for the misbehaviours (a close mid-body, a bad status line, no
// answer before the deadline, a kept-alive connection closed under a request).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "net/request_parser.hpp"
#include "net/server.hpp"
#include "net/socket_io.hpp"
#include "net/upstream.hpp"
#include "serving.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_upstream {

using namespace idem::net;
using idem::util::Fd;

namespace {

// Answers with what it received: "METHOD TARGET BODY", and the request's headers echoed as
// X-Got-<name>. /big answers 1 MiB.
class EchoHandler final : public Handler {
 public:
  Admission admit(const RequestHead&) override { return Admission{std::nullopt, 1 << 20}; }
  Response handle(Request& req) override {
    Response r;
    const std::string& path = req.head.path;
    r.status = path.size() >= 8 && path.compare(path.size() - 8, 8, "/created") == 0 ? 201 : 200;
    r.content_type = "text/plain";
    if (req.head.path == "/big") {
      r.body.assign(1 << 20, 'x');
      return r;
    }
    r.body = req.head.method + " " + req.head.target + " " + req.body;
    for (const auto& [name, value] : req.head.headers.fields())
      r.headers.emplace_back("X-Got-" + name, value);
    return r;
  }
  Response refused(const RequestHead&, const ParseError& error) override {
    Response r;
    r.status = error.status;
    return r;
  }
  void answered(const RequestHead&, const std::string&, const Response&, int64_t) override {}
};

using Running = idem::test::Serving<EchoHandler>;

// A listener whose connections are served one after another by `script(fd, index)` on its own
// thread; `stop_fd` becomes readable when the server is destroyed, for scripts that wait.
class RawServer {
 public:
  explicit RawServer(std::function<void(int fd, int index, int stop_fd)> script)
      : script_(std::move(script)) {
    listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener_.get(), 16) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    stop_read_.reset(fds[0]);
    stop_write_.reset(fds[1]);
    thread_ = std::thread([this] { serve(); });
  }
  ~RawServer() {
    [[maybe_unused]] ssize_t n = ::write(stop_write_.get(), "x", 1);
    thread_.join();
  }
  int port = 0;
  std::atomic<int> accepted{0};

 private:
  void serve() {
    for (int index = 0;; ++index) {
      pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 || (p[1].revents & POLLIN) != 0) return;
      Fd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      ++accepted;
      script_(c.get(), index, stop_read_.get());
    }
  }
  std::function<void(int, int, int)> script_;
  Fd listener_, stop_read_, stop_write_;
  std::thread thread_;
};

// Reads one request from `fd`; false when the connection closed first.
bool read_request(int fd, RequestHead* head = nullptr) {
  RequestParser parser;
  char buf[4096];
  std::string pending;
  while (parser.state() != RequestParser::State::complete) {
    if (parser.state() == RequestParser::State::routing) {
      parser.accept_body(1 << 20);
      continue;
    }
    if (parser.state() == RequestParser::State::failed) return false;
    if (pending.empty()) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      pending.assign(buf, size_t(n));
    }
    pending.erase(0, parser.feed(pending));
  }
  if (head != nullptr) *head = parser.head();
  return true;
}

int64_t in_ms(int64_t ms) { return idem::util::monotonic_ms() + ms; }

// Runs on the raw server's thread, where Catch's assertions may not be used: a failed write
// shows as the client's failure.
void send_text(int fd, const std::string& text) { (void)send_all(fd, text, in_ms(10000)); }

UpstreamPool pool_for(int port, size_t max_idle = 4) {
  return UpstreamPool(parse_upstream_url("test", "http://127.0.0.1:" + std::to_string(port)),
                      max_idle);
}

std::string read_all_body(UpstreamExchange& exchange, size_t* pieces = nullptr) {
  std::string out;
  exchange.read_body([&](std::string_view piece) {
    out += piece;
    if (pieces != nullptr) ++*pieces;
    return true;
  });
  return out;
}

UpstreamRequest request(std::string method, std::string target, std::string_view body = {}) {
  UpstreamRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.headers = {{"Host", "upstream.test"}, {"X-Trace", "t1"}};
  r.body = body;
  return r;
}

std::optional<std::string> header(const UpstreamHead& head, std::string_view name) {
  for (const auto& [n, v] : head.headers)
    if (equals_ignore_case(n, name)) return v;
  return std::nullopt;
}

UpstreamError::Kind failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UpstreamError& e) {
    return e.kind();
  }
  FAIL("no UpstreamError");
  return UpstreamError::connect;
}

}  // namespace

TEST_CASE("upstream: URLs", "[upstream]") {
  UpstreamTarget t = parse_upstream_url("--upstream", "http://127.0.0.1:3000");
  CHECK(t.host == "127.0.0.1");
  CHECK(t.port == 3000);
  CHECK(t.authority == "127.0.0.1:3000");
  CHECK(t.prefix.empty());
  t = parse_upstream_url("--upstream", "HTTP://app.internal/api/v1/");
  CHECK(t.host == "app.internal");
  CHECK(t.port == 80);
  CHECK(t.authority == "app.internal");
  CHECK(t.prefix == "/api/v1");
  t = parse_upstream_url("--upstream", "http://[::1]:8080/");
  CHECK(t.host == "::1");
  CHECK(t.port == 8080);
  CHECK(t.authority == "[::1]:8080");
  CHECK(t.prefix.empty());
  for (const char* bad :
       {"https://x", "x:80", "http://", "http://:80", "http://h:0", "http://h:65536", "http://h:8x",
        "http://u@h", "http://h/?q", "http://[::1", "http://[zz]:1", "http://h/a b", "http://h:"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_upstream_url("proxy.upstream", bad), idem::UsageError);
  }
  CHECK_THROWS_WITH(parse_upstream_url("proxy.upstream", "ftp://x"),
                    Catch::StartsWith("proxy.upstream: 'ftp://x' "));
}

TEST_CASE("upstream: a request and its answer; kept-alive connections are reused", "[upstream]") {
  Running r;
  UpstreamPool pool(
      parse_upstream_url("test", "http://127.0.0.1:" + std::to_string(r.port) + "/base"), 4);
  auto ex = pool.send(request("POST", "/created?x=1", "payload"), in_ms(5000));
  CHECK(ex->head().status == 201);
  CHECK(header(ex->head(), "Content-Type") == "text/plain");
  CHECK(header(ex->head(), "X-Got-Host") == "upstream.test");
  CHECK(header(ex->head(), "X-Got-X-Trace") == "t1");
  CHECK(header(ex->head(), "X-Got-Content-Length") == "7");
  CHECK_FALSE(header(ex->head(), "Content-Length"));  // framing is not the caller's
  CHECK(read_all_body(*ex) == "POST /base/created?x=1 payload");
  ex.reset();
  // An empty POST still says its length; a GET without a body does not.
  ex = pool.send(request("POST", "/p"), in_ms(5000));
  CHECK(header(ex->head(), "X-Got-Content-Length") == "0");
  CHECK(read_all_body(*ex) == "POST /base/p ");
  ex.reset();
  ex = pool.send(request("GET", "/g"), in_ms(5000));
  CHECK_FALSE(header(ex->head(), "X-Got-Content-Length"));
  CHECK(read_all_body(*ex) == "GET /base/g ");
  ex.reset();
  CHECK(pool.opened() == 1);
}

TEST_CASE("upstream: a large body comes in pieces; a sink that stops closes the connection",
          "[upstream]") {
  Running r;
  UpstreamPool pool = pool_for(r.port);
  auto ex = pool.send(request("GET", "/big"), in_ms(5000));
  size_t pieces = 0;
  CHECK(read_all_body(*ex, &pieces) == std::string(1 << 20, 'x'));
  CHECK(pieces > 1);
  ex.reset();
  ex = pool.send(request("GET", "/big"), in_ms(5000));
  CHECK(pool.opened() == 1);
  ex->read_body([](std::string_view) { return false; });
  bool called = false;
  ex->read_body([&](std::string_view) { return called = true; });  // nothing more comes
  CHECK_FALSE(called);
  ex.reset();
  ex = pool.send(request("GET", "/g"), in_ms(5000));
  CHECK(read_all_body(*ex) == "GET /g ");
  CHECK(pool.opened() == 2);
}

TEST_CASE("upstream: HEAD has no body; an unread answer closes the connection", "[upstream]") {
  Running r;
  UpstreamPool pool = pool_for(r.port);
  auto ex = pool.send(request("HEAD", "/h"), in_ms(5000));
  CHECK(ex->head().status == 200);
  CHECK(read_all_body(*ex).empty());
  ex.reset();
  ex = pool.send(request("GET", "/big"), in_ms(5000));  // reused: the HEAD answer was whole
  ex.reset();                                           // not read: closed
  CHECK(pool.opened() == 1);
  ex = pool.send(request("GET", "/g"), in_ms(5000));
  CHECK(read_all_body(*ex) == "GET /g ");
  CHECK(pool.opened() == 2);
}

TEST_CASE("upstream: a refused connection is 'connect'", "[upstream]") {
  Fd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(probe.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  UpstreamPool pool = pool_for(ntohs(addr.sin_port));  // bound, not listening: refused
  CHECK(failure_of([&] { pool.send(request("GET", "/"), in_ms(5000)); }) == UpstreamError::connect);
  CHECK_THROWS_WITH(pool.send(request("GET", "/"), in_ms(5000)),
                    Catch::Contains("connection refused"));
  UpstreamPool unknown(parse_upstream_url("test", "http://no-such-host.invalid:1"), 1);
  CHECK(failure_of([&] { unknown.send(request("GET", "/"), in_ms(5000)); }) ==
        UpstreamError::connect);
}

TEST_CASE("upstream: hop-by-hop fields are dropped; a chunked answer is decoded", "[upstream]") {
  RawServer raw([](int fd, int, int) {
    if (!read_request(fd)) return;
    send_text(fd,
              "HTTP/1.1 100 Continue\r\n\r\n"
              "HTTP/1.1 200 OK\r\nConnection: X-Private, keep-alive\r\nX-Private: p\r\n"
              "Keep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n"
              "Upgrade: h2c\r\nETag: \"v1\"\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n");
  });
  UpstreamPool pool = pool_for(raw.port);
  auto ex = pool.send(request("GET", "/"), in_ms(5000));
  CHECK(ex->head().status == 200);
  REQUIRE(ex->head().headers.size() == 1);
  CHECK(ex->head().headers[0] == std::pair<std::string, std::string>("ETag", "\"v1\""));
  CHECK(read_all_body(*ex) == "abcde");
}

TEST_CASE("upstream: an answer cut off mid-body or malformed is 'broken'", "[upstream]") {
  RawServer raw([](int fd, int index, int) {
    if (!read_request(fd)) return;
    if (index == 0) send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    if (index == 1) send_text(fd, "HTTP/1.1 OK\r\n\r\n");
    if (index == 2)
      send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
  });
  UpstreamPool pool = pool_for(raw.port);
  auto ex = pool.send(request("GET", "/"), in_ms(5000));
  std::string got;
  CHECK(failure_of([&] { got = read_all_body(*ex); }) == UpstreamError::broken);
  ex.reset();
  CHECK(failure_of([&] { pool.send(request("GET", "/"), in_ms(5000)); }) == UpstreamError::broken);
  CHECK_THROWS_WITH(pool.send(request("GET", "/"), in_ms(5000)),
                    Catch::Contains("two different Content-Length"));
  CHECK(pool.opened() == 3);
}

TEST_CASE("upstream: an answer slower than the deadline is 'timeout'", "[upstream]") {
  RawServer raw([](int fd, int index, int stop_fd) {
    if (!read_request(fd)) return;
    if (index == 1) send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    // The rest never comes: wait until the client gives up and closes (or the test ends).
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    ::poll(p, 2, -1);
  });
  UpstreamPool pool = pool_for(raw.port);
  int64_t start = idem::util::monotonic_ms();
  CHECK(failure_of([&] { pool.send(request("GET", "/"), start + 300); }) == UpstreamError::timeout);
  CHECK(idem::util::monotonic_ms() - start >= 300);
  start = idem::util::monotonic_ms();
  auto ex = pool.send(request("GET", "/"), start + 300);  // the head comes, the body stalls
  CHECK(failure_of([&] { read_all_body(*ex); }) == UpstreamError::timeout);
  CHECK(idem::util::monotonic_ms() - start >= 300);
}

TEST_CASE("upstream: an idle connection the upstream closed is not reused", "[upstream]") {
  std::promise<void> closed;
  RawServer raw([&](int fd, int index, int) {
    if (!read_request(fd)) return;
    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    if (index == 0) {
      ::shutdown(fd, SHUT_RDWR);
      closed.set_value();
    }
  });
  UpstreamPool pool = pool_for(raw.port);
  auto ex = pool.send(request("POST", "/1"), in_ms(5000));
  CHECK(read_all_body(*ex) == "ok");
  ex.reset();
  closed.get_future().wait();
  // A POST is never sent twice, so it went out on a new connection at once.
  ex = pool.send(request("POST", "/2"), in_ms(5000));
  CHECK(read_all_body(*ex) == "ok");
  CHECK(pool.opened() == 2);
}

// The first connection answers one request, then reads the next and closes without answering:
// the upstream closing a kept-alive connection as a request arrives.
void answer_once_then_drop(int fd, int index, int) {
  if (!read_request(fd)) return;
  send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  if (index == 0) read_request(fd);
}

TEST_CASE("upstream: a POST that failed on a reused connection is not sent again", "[upstream]") {
  RawServer raw(answer_once_then_drop);
  UpstreamPool pool = pool_for(raw.port);
  auto ex = pool.send(request("POST", "/1", "a"), in_ms(5000));
  CHECK(read_all_body(*ex) == "ok");
  ex.reset();
  CHECK(failure_of([&] { pool.send(request("POST", "/2", "b"), in_ms(5000)); }) ==
        UpstreamError::broken);
  CHECK(pool.opened() == 1);
  CHECK(raw.accepted == 1);
}

TEST_CASE("upstream: a GET that failed on a reused connection is sent once more on a new one",
          "[upstream]") {
  RawServer raw(answer_once_then_drop);
  UpstreamPool pool = pool_for(raw.port);
  auto ex = pool.send(request("GET", "/1"), in_ms(5000));
  CHECK(read_all_body(*ex) == "ok");
  ex.reset();
  ex = pool.send(request("GET", "/2"), in_ms(5000));
  CHECK(read_all_body(*ex) == "ok");
  CHECK(pool.opened() == 2);
}

TEST_CASE("upstream: at most max_idle connections are kept", "[upstream]") {
  Running r;
  UpstreamPool pool = pool_for(r.port, 1);
  auto a = pool.send(request("GET", "/a"), in_ms(5000));
  auto b = pool.send(request("GET", "/b"), in_ms(5000));
  read_all_body(*a);
  read_all_body(*b);
  a.reset();
  b.reset();  // the pool is full: closed
  auto c = pool.send(request("GET", "/c"), in_ms(5000));
  auto d = pool.send(request("GET", "/d"), in_ms(5000));
  CHECK(read_all_body(*c) == "GET /c ");
  CHECK(read_all_body(*d) == "GET /d ");
  CHECK(pool.opened() == 3);
}

TEST_CASE("upstream: pooled connections shared by threads", "[upstream]") {
  Running r;
  UpstreamPool pool = pool_for(r.port, 8);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::string target = "/t" + std::to_string(t) + "/" + std::to_string(i);
        auto ex = pool.send(request("GET", target), in_ms(5000));
        if (read_all_body(*ex) == "GET " + target + " ") ++ok;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(ok == 80);
  CHECK(pool.opened() <= 8);
}

}  // namespace unit_upstream
