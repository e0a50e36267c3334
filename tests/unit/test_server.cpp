// The HTTP server (net/server.hpp) over real sockets on 127.0.0.1 with a small handler: answers
// in order on one connection, the connection cap, and a stop that lets a request being handled
// finish. Also what the ThreadSanitizer run checks the server's threads with.
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "net/response_parser.hpp"
#include "net/server.hpp"
#include "serving.hpp"
#include "util/fd.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_server {

using namespace idem::net;
using idem::test::read_until_closed;
using idem::util::Fd;

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
    if (req.head.path.rfind("/stream", 0) == 0) return streamed(req.head.path);
    r.body = req.head.method + " " + req.head.path + " " + req.body;
    return r;
  }
  // /stream writes "one two three" in pieces (an empty one among them); /stream-fail fails
  // after them; /stream-204 is an answer without a body.
  Response streamed(const std::string& path) {
    Response r;
    r.content_type = "text/plain";
    r.status = path == "/stream-204" ? 204 : 200;
    if (path == "/stream-long") {
      r.stream = [this](const std::function<bool(std::string_view)>& write) {
        const std::string piece(64 * 1024, 'p');
        for (int i = 0; i < 100000; ++i)
          if (!write(piece)) {
            std::lock_guard lock(mutex_);
            writer_refused_ = true;
            changed_.notify_all();
            return false;
          }
        return true;
      };
      return r;
    }
    const bool fail = path == "/stream-fail";
    r.stream = [this, fail](const std::function<bool(std::string_view)>& write) {
      ++streams_;
      for (const char* piece : {"one ", "", "two ", "three"})
        if (!write(piece)) return false;
      stream_ended_ = true;
      return !fail;
    };
    return r;
  }
  Response refused(const RequestHead&, const ParseError& error) override {
    Response r;
    r.status = error.status;
    r.body = error.reason;
    return r;
  }
  void answered(const RequestHead&, const std::string&, const Response& response,
                int64_t) override {
    if (response.stream) answered_after_stream_ = stream_ended_.load();
    ++answered_;
  }
  void wait_blocked() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return blocked_; });
  }
  void wait_writer_refused() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return writer_refused_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  std::atomic<int> answered_{0};
  std::atomic<int> streams_{0};
  std::atomic<bool> stream_ended_{false};
  std::atomic<bool> answered_after_stream_{false};

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool blocked_ = false;
  bool released_ = false;
  bool writer_refused_ = false;
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

using Running = idem::test::Serving<EchoHandler>;

}  // namespace

TEST_CASE("server: pipelined requests are answered in order", "[server]") {
  Running r;
  const std::string out = r.exchange(
      "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\none"
      "GET /b HTTP/1.1\r\nHost: t\r\n\r\n"
      "POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
      "Connection: close\r\n\r\ntwo");
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
  const std::string out = r.exchange(
      "POST /nope HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
      "GET /b HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(out.rfind("HTTP/1.1 404 Not Found\r\n", 0) == 0);
  CHECK(count(out, "HTTP/1.1 ") == 1);
  CHECK(count(out, "Connection: close\r\n") == 1);
}

TEST_CASE("server: connections over twice the cap are answered 503 and closed", "[server]") {
  ServerOptions options;
  options.max_connections = 1;
  Running r(options);
  Fd served = r.connect();
  Fd waiting = r.connect();
  Fd shed = r.connect();
  // Its request sent first: the answer must still arrive whole, not be lost to a reset.
  REQUIRE(idem::util::write_all(shed.get(),
                                "POST /s HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"));
  const std::string out = read_until_closed(shed.get());
  CHECK(out.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0) == 0);
  CHECK(out.find("\r\nRetry-After: 1\r\n") != std::string::npos);
  CHECK(out.find("\r\nConnection: close\r\n") != std::string::npos);
  const size_t body_at = out.find("\r\n\r\n");
  REQUIRE(body_at != std::string::npos);
  CHECK(out.find("Content-Length: " + std::to_string(out.size() - body_at - 4) + "\r\n") !=
        std::string::npos);
  CHECK(r.server.shed_count() == 1);
  // The waiting one is served once the first goes away.
  served.reset();
  REQUIRE(idem::util::write_all(waiting.get(),
                                "GET /w HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  CHECK(read_until_closed(waiting.get()).find("GET /w ") != std::string::npos);
}

TEST_CASE("server: stop lets a request being handled finish, then run returns", "[server]") {
  auto r = std::make_unique<Running>();
  Fd busy = r->connect();
  Fd idle = r->connect();
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

namespace {

// The body of the one answer in `out`, read as a client would; nullopt when it is not whole.
std::optional<std::string> client_body(const std::string& out, bool head_request = false) {
  ResponseParser parser(head_request);
  parser.feed(out);
  parser.end_of_input();
  if (parser.state() != ResponseParser::State::complete) return std::nullopt;
  return parser.take_body();
}

}  // namespace

TEST_CASE("server: a streamed answer goes out chunked to an HTTP/1.1 client", "[server]") {
  Running r;
  const std::string out = r.exchange(
      "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  size_t second = out.find("HTTP/1.1 200 OK\r\n", 1);
  REQUIRE(second != std::string::npos);
  std::string first = out.substr(0, second);
  CHECK(first.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
  CHECK(first.find("Content-Length") == std::string::npos);
  CHECK(first.find("\r\n\r\n4\r\none \r\n4\r\ntwo \r\n5\r\nthree\r\n0\r\n\r\n") !=
        std::string::npos);
  CHECK(client_body(first) == "one two three");
  CHECK(out.find("GET /b ") != std::string::npos);  // the connection was kept for the next one
  CHECK(r.handler.answered_after_stream_);
}

TEST_CASE("server: a streamed answer to HEAD is its head alone", "[server]") {
  Running r;
  const std::string out = r.exchange(
      "HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  CHECK(out.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  size_t end = out.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  CHECK(out.compare(end + 4, 17, "HTTP/1.1 200 OK\r\n") == 0);
  CHECK(r.handler.streams_ == 0);
}

TEST_CASE("server: a streamed answer to HTTP/1.0 runs to the close", "[server]") {
  Running r;
  const std::string out = r.exchange("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  CHECK(out.find("Transfer-Encoding") == std::string::npos);
  CHECK(out.find("Content-Length") == std::string::npos);
  CHECK(out.find("Connection: close\r\n") != std::string::npos);
  CHECK(out.substr(out.find("\r\n\r\n") + 4) == "one two three");
}

TEST_CASE("server: a stream that fails cuts the answer off", "[server]") {
  Running r;
  const std::string out = r.exchange(
      "GET /stream-fail HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /b HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(out.find("5\r\nthree\r\n") != std::string::npos);
  CHECK(out.find("0\r\n\r\n") == std::string::npos);
  CHECK(out.find("GET /b") == std::string::npos);  // closed after it
  CHECK_FALSE(client_body(out).has_value());
}

TEST_CASE("server: a streamed answer without a body gets no framing", "[server]") {
  Running r;
  const std::string out = r.exchange(
      "GET /stream-204 HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  CHECK(out.rfind("HTTP/1.1 204 No Content\r\n", 0) == 0);
  CHECK(out.find("Transfer-Encoding") == std::string::npos);
  CHECK(out.find("one") == std::string::npos);
  CHECK(out.find("GET /b ") != std::string::npos);
  CHECK(r.handler.streams_ == 1);
}

TEST_CASE("server: a client gone in the middle of a stream stops it", "[server]") {
  Running r;
  {
    Fd c = r.connect();
    REQUIRE(idem::util::write_all(c.get(), "GET /stream-long HTTP/1.1\r\nHost: t\r\n\r\n"));
    char buf[4096];
    pollfd p{c.get(), POLLIN, 0};
    REQUIRE(::poll(&p, 1, 10000) == 1);
    REQUIRE(::recv(c.get(), buf, sizeof buf, 0) > 0);
  }  // closed with the answer unread: the server's next writes fail
  r.handler.wait_writer_refused();
  // The server goes on serving others.
  CHECK(r.exchange("GET /b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").find("GET /b ") !=
        std::string::npos);
}

}  // namespace unit_server
