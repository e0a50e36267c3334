#include "net/upstream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/errors.hpp"
#include "net/message.hpp"
#include "net/resolve.hpp"
#include "net/response_parser.hpp"
#include "net/socket_io.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::net {

namespace {

constexpr size_t k_upstream_read_chunk = 64 * 1024;
// An idle connection older than this is closed rather than reused. Servers close idle
// keep-alive connections after a few seconds (Node's default is 5 s); a request sent on one
// just as the server closes it fails, and a POST is then never sent again: better a new
// connection than a 502 to the client.
constexpr int64_t k_max_idle_ms = 2000;

bool idempotent(std::string_view method) {  // RFC 9110 §9.2.2
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS" || method == "TRACE";
}

bool hop_by_hop(std::string_view name, const Headers& headers) {
  static constexpr std::string_view k_names[] = {
      "Connection", "Keep-Alive", "Proxy-Connection", "TE",
      "Trailer",    "Upgrade",    "Content-Length",   "Transfer-Encoding"};
  for (std::string_view n : k_names)
    if (equals_ignore_case(n, name)) return true;
  for (const auto& [field, value] : headers.fields())
    if (equals_ignore_case(field, "Connection"))
      for (std::string_view e : syntax::list_elements(value))
        if (equals_ignore_case(e, name)) return true;
  return false;
}

UpstreamHead upstream_head(const ResponseHead& parsed) {
  UpstreamHead head;
  head.status = parsed.status;
  for (const auto& [name, value] : parsed.headers.fields())
    if (!hop_by_hop(name, parsed.headers)) head.headers.emplace_back(name, value);
  return head;
}

[[noreturn]] void bad_url(const std::string& source, const std::string& url, const char* what) {
  throw UsageError(source + ": '" + url + "' " + what);
}

bool valid_port(std::string_view digits, int& port) {
  if (digits.empty() || digits.size() > 5 ||
      !std::all_of(digits.begin(), digits.end(), syntax::is_digit))
    return false;
  port = std::stoi(std::string(digits));
  return port >= 1 && port <= 65535;
}

// Splits HOST[:PORT] into `target`; false when malformed.
bool parse_authority(std::string_view authority, UpstreamTarget& target) {
  std::string_view host = authority, rest;
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    rest = authority.substr(close + 1);
    in6_addr a6{};
    if (::inet_pton(AF_INET6, std::string(host).c_str(), &a6) != 1) return false;
  } else {
    size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    rest = colon == std::string_view::npos ? "" : authority.substr(colon);
    auto host_char = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
    };
    if (host.empty() || !std::all_of(host.begin(), host.end(), host_char)) return false;
  }
  if (!rest.empty() && (rest.front() != ':' || !valid_port(rest.substr(1), target.port)))
    return false;
  target.host = std::string(host);
  target.authority = std::string(authority);
  return true;
}

}  // namespace

UpstreamTarget parse_upstream_url(const std::string& source, const std::string& url) {
  constexpr std::string_view k_scheme = "http://";
  if (url.size() < k_scheme.size() || !equals_ignore_case(url.substr(0, 7), k_scheme))
    bad_url(source, url, "is not an http:// URL (https to an upstream is not supported)");
  std::string_view rest = std::string_view(url).substr(k_scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos)
    bad_url(source, url, "has a query or fragment; give a path prefix at most");
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos)
    bad_url(source, url, "has user information, which is not supported");
  UpstreamTarget target;
  if (authority.empty() || !parse_authority(authority, target))
    bad_url(source, url, "has no valid HOST[:PORT]");
  if (!std::all_of(path.begin(), path.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
    bad_url(source, url, "has a path with spaces or control characters");
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  target.prefix = std::string(path);
  return target;
}

// The pool's shared state. Exchanges hold a reference to it: a pool outlives its exchanges. Not
// in the anonymous namespace: UpstreamPool::Pool (declared in the header) holds one.
namespace upstream_pool {
struct Connections {
  struct Idle {
    util::Fd fd;
    int64_t since_ms;
  };
  const UpstreamTarget& target;
  size_t max_idle;
  std::mutex mutex;
  std::vector<Idle> idle;  // most recently used last
  std::atomic<int64_t> opened{0};

  Connections(const UpstreamTarget& t, size_t m) : target(t), max_idle(m) {}

  // An idle connection that looks usable, else an invalid Fd.
  util::Fd take() {
    for (;;) {
      Idle c;
      {
        std::lock_guard lock(mutex);
        if (idle.empty()) return {};
        c = std::move(idle.back());
        idle.pop_back();
      }
      if (util::monotonic_ms() - c.since_ms > k_max_idle_ms) continue;
      // Readable means closed by the upstream (0) or bytes nobody asked for: either way unusable.
      char byte;
      ssize_t n = ::recv(c.fd.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::move(c.fd);
    }
  }

  void give(util::Fd fd) {
    Idle c{std::move(fd), util::monotonic_ms()};
    std::lock_guard lock(mutex);
    if (idle.size() < max_idle) idle.push_back(std::move(c));
  }

  // A new connection; throws UpstreamError (connect, or timeout).
  util::Fd open(int64_t deadline_ms);
  // The same without throwing: an invalid Fd and `failure` saying why.
  util::Fd try_open(int64_t deadline_ms, std::string& failure);
};
}  // namespace upstream_pool
using upstream_pool::Connections;

util::Fd Connections::open(int64_t deadline_ms) {
  std::string failure;
  util::Fd fd = try_open(deadline_ms, failure);
  if (fd.valid()) return fd;
  const bool timed_out = util::monotonic_ms() >= deadline_ms;
  throw UpstreamError(timed_out ? UpstreamError::timeout : UpstreamError::connect, failure, false);
}

util::Fd Connections::try_open(int64_t deadline_ms, std::string& failure) {
  Resolved found = resolve_host(target.host, target.port);
  if (found.addresses.empty()) {
    failure = "cannot resolve " + target.host + ": " + found.error;
    return {};
  }
  int err = EADDRNOTAVAIL;
  for (const SocketAddress& a : found.addresses) {
    util::Fd fd(::socket(a.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      err = errno;
      continue;
    }
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a.storage), a.length) != 0) {
      if (errno != EINPROGRESS) {
        err = errno;
        continue;
      }
      Ready r = wait_for(fd.get(), POLLOUT, deadline_ms);
      if (r == Ready::timeout) {
        failure = "connecting to " + target.authority + " outlasted the deadline";
        return {};
      }
      socklen_t len = sizeof err;
      if (r != Ready::ready || ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
      if (err != 0) continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ++opened;
    return fd;
  }
  failure = "cannot connect to " + target.authority + ": " + why(err);
  return {};
}

namespace {

// The request's head as sent: the values come from a strict parser, but a line break in one
// would be a second request, so each is checked again here.
std::string request_head(const UpstreamTarget& target, const UpstreamRequest& request) {
  auto refuse = [](const std::string& what) {
    throw UpstreamError(UpstreamError::connect, "cannot forward " + what);
  };
  if (!syntax::is_token(request.method)) refuse("the method '" + request.method + "'");
  if (request.target.empty() || request.target.front() != '/' ||
      !std::all_of(request.target.begin(), request.target.end(),
                   [](char c) { return c > 0x20 && c < 0x7f; }))
    refuse("the request target '" + syntax::excerpt(request.target) + "'");
  std::string out = request.method + ' ' + target.prefix + request.target + " HTTP/1.1\r\n";
  for (const auto& [name, value] : request.headers) {
    if (!syntax::is_token(name) || syntax::has_control(value))
      refuse("the header '" + syntax::excerpt(name) + "'");
    out += name + ": " + value + "\r\n";
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH")
    out += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  out += "\r\n";
  return out;
}

class Exchange final : public UpstreamExchange {
 public:
  Exchange(Connections& pool, util::Fd fd, bool head_request, int64_t deadline_ms)
      : pool_(pool), fd_(std::move(fd)), parser_(head_request), deadline_ms_(deadline_ms) {}

  ~Exchange() override {
    if (fd_.valid() && parser_.state() == ResponseParser::State::complete && !extra_ &&
        parser_.head().keep_alive)
      pool_.give(std::move(fd_));
  }

  const UpstreamHead& head() const override { return head_; }
  bool answer_started() const { return parser_.started(); }

  void send_request(const std::string& head, std::string_view body) {
    bool sent = body.size() <= 16 * 1024
                    ? send_all(fd_.get(), head + std::string(body), deadline_ms_)
                    : send_all(fd_.get(), head, deadline_ms_, MSG_MORE) &&
                          send_all(fd_.get(), body, deadline_ms_);
    if (!sent) fail_io("sending the request", errno);
  }

  void read_head() {
    while (parser_.state() == ResponseParser::State::head) receive();
    head_ = upstream_head(parser_.head());
  }

  void read_body(const std::function<bool(std::string_view piece)>& sink) override {
    if (!fd_.valid()) return;  // stopped by the sink or failed before: nothing more comes
    for (;;) {
      std::string piece = parser_.take_body();
      if (!piece.empty() && !sink(piece)) {
        fd_.reset();  // the rest is not read: the connection cannot carry another request
        return;
      }
      if (parser_.state() != ResponseParser::State::body) return;
      receive();
    }
  }

 private:
  [[noreturn]] void fail_io(const char* doing, int err) {
    fd_.reset();
    if (err == ETIMEDOUT || util::monotonic_ms() >= deadline_ms_)
      throw UpstreamError(UpstreamError::timeout,
                          "the upstream " + pool_.target.authority + " did not answer in time");
    throw UpstreamError(UpstreamError::broken,
                        "the upstream " + pool_.target.authority + ": " + doing + ": " + why(err));
  }

  // Reads what has arrived and parses it; throws when the answer cannot be completed.
  void receive() {
    for (;;) {
      Ready r = wait_for(fd_.get(), POLLIN, deadline_ms_);
      if (r == Ready::timeout) fail_io("reading the answer", ETIMEDOUT);
      if (r != Ready::ready) fail_io("reading the answer", errno);
      ssize_t n = ::recv(fd_.get(), buffer_, sizeof buffer_, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n < 0) fail_io("reading the answer", errno);
      if (n == 0)
        parser_.end_of_input();
      else if (parser_.feed(std::string_view(buffer_, size_t(n))) < size_t(n))
        extra_ = true;  // bytes after the answer: nothing asked for them
      break;
    }
    if (parser_.state() == ResponseParser::State::failed) {
      fd_.reset();
      throw UpstreamError(UpstreamError::broken, "the upstream " + pool_.target.authority +
                                                     " answered badly: " + parser_.error());
    }
  }

  Connections& pool_;
  util::Fd fd_;
  ResponseParser parser_;
  const int64_t deadline_ms_;
  UpstreamHead head_;
  bool extra_ = false;
  char buffer_[k_upstream_read_chunk];
};

}  // namespace

struct UpstreamPool::Pool {
  Connections connections;
};

UpstreamPool::UpstreamPool(UpstreamTarget target, size_t max_idle)
    : target_(std::move(target)), pool_(new Pool{Connections(target_, max_idle)}) {}

UpstreamPool::~UpstreamPool() = default;

int64_t UpstreamPool::opened() const { return pool_->connections.opened.load(); }

std::unique_ptr<UpstreamExchange> UpstreamPool::send(const UpstreamRequest& request,
                                                     int64_t deadline_ms,
                                                     int64_t connect_deadline_ms) {
  const std::string head = request_head(target_, request);
  if (connect_deadline_ms == 0 || connect_deadline_ms > deadline_ms)
    connect_deadline_ms = deadline_ms;
  for (int attempt = 0;; ++attempt) {
    // The one resend goes on a new connection: the reused one just failed.
    util::Fd fd = attempt == 0 ? pool_->connections.take() : util::Fd();
    const bool reused = fd.valid();
    if (!reused) fd = pool_->connections.open(connect_deadline_ms);
    auto exchange = std::make_unique<Exchange>(pool_->connections, std::move(fd),
                                               request.method == "HEAD", deadline_ms);
    try {
      exchange->send_request(head, request.body);
      exchange->read_head();
      return exchange;
    } catch (const UpstreamError& e) {
      // The upstream closed a kept-alive connection as the request went out: nothing of an
      // answer came, so a request that may be repeated is; any other may have arrived.
      if (!reused || e.kind() == UpstreamError::timeout || exchange->answer_started() ||
          !idempotent(request.method))
        throw;
    }
  }
}

util::Fd UpstreamPool::send_unanswered(const UpstreamRequest& request, int64_t deadline_ms,
                                       std::string& failure) {
  const std::string bytes = request_head(target_, request).append(request.body);
  util::Fd fd = pool_->connections.try_open(deadline_ms, failure);
  if (!fd.valid() || send_all(fd.get(), bytes, deadline_ms)) return fd;
  failure = errno == ETIMEDOUT || util::monotonic_ms() >= deadline_ms
                ? "sending to " + target_.authority + " outlasted the deadline"
                : "sending to " + target_.authority + ": " + why(errno);
  return {};
}

}  // namespace idem::net
