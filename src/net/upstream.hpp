#pragma once
// The proxy's side towards its upstream: an HTTP/1.1 client over plain TCP with a pool of
// kept-alive connections, every wait a poll() against the caller's deadline. What a request
// means is the proxy's business (proxy/rules.hpp); framing of the answer is response_parser's.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/fd.hpp"

namespace idem::net {

// Where the upstream is: parsed from `http://HOST[:PORT][/PREFIX]` (HOST a name, an IPv4
// address or a bracketed IPv6 one; PORT 80 when absent; a PREFIX, without a trailing '/', is put
// before every forwarded path). Only http: the upstream is expected on loopback or a private net.
struct UpstreamTarget {
  std::string host;  // as given, brackets removed
  int port = 80;
  std::string authority;  // HOST[:PORT] as given: the forwarded Host header
  std::string prefix;     // "" or "/api"
};

// Throws UsageError naming `source` ("--upstream", "proxy.upstream") and what is wrong.
UpstreamTarget parse_upstream_url(const std::string& source, const std::string& url);

struct UpstreamRequest {
  std::string method;
  std::string
      target;  // origin-form as received: path and query ("/orders?x=1"); the prefix is added
  // Sent in this order, as given: the caller has removed hop-by-hop fields and set Host and any
  // X-Forwarded-*; the client adds Content-Length (and nothing else) from `body`.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;
};

// The upstream's answer head: status, and its headers as received, in order, without the
// framing ones (Content-Length, Transfer-Encoding) and hop-by-hop ones (Connection and the names
// it lists, Keep-Alive, Proxy-Connection, TE, Trailer, Upgrade). 1xx interim answers are skipped.
struct UpstreamHead {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
};

// The upstream could not be used: what happened, for the answer (502/504) and the log line.
class UpstreamError : public std::runtime_error {
 public:
  enum Kind {
    connect,  // no connection (refused, unreachable, name not found): nothing was sent
    timeout,  // the deadline passed before the answer was in (the request may have arrived)
    broken,   // the connection failed or the answer was malformed after the request was sent
  };
  // `sent`: whether any byte of the request may have left for the upstream (by default, for
  // every kind but connect).
  UpstreamError(Kind kind, const std::string& what) : UpstreamError(kind, what, kind != connect) {}
  UpstreamError(Kind kind, const std::string& what, bool sent)
      : std::runtime_error(what), kind_(kind), sent_(sent) {}
  Kind kind() const { return kind_; }
  // False only when the request provably never left: no connection was made (refused,
  // unreachable, a name not found, a connect that outlasted the deadline) or the request was
  // refused before it was sent. Otherwise the upstream may have acted on it.
  bool sent() const { return sent_; }

 private:
  Kind kind_;
  bool sent_;
};

// One request in progress: its head is in; the body is read through read_body. An exchange
// belongs to one thread and must not outlive the pool that made it.
class UpstreamExchange {
 public:
  virtual ~UpstreamExchange() = default;  // a connection whose answer was read whole goes back to
                                          // the pool, any other is closed
  virtual const UpstreamHead& head() const = 0;
  // Reads the body to its end, handing each piece to `sink` as it arrives (false from `sink`:
  // stop, the connection is closed). Throws UpstreamError (timeout or broken) past the deadline
  // given to UpstreamPool::send, or on a malformed or cut-off body.
  virtual void read_body(const std::function<bool(std::string_view piece)>& sink) = 0;
};

// Connections to one upstream, shared by every worker thread. A request goes out on an idle
// kept-alive connection when there is one, else on a new one; at most `max_idle` are kept. An
// idle connection is looked at before reuse (one the upstream closed, that has unasked-for
// bytes, or that was idle over 2 s, when servers start closing theirs, is dropped). A request
// that fails on a reused connection before any byte of its answer arrived is sent once more on
// a new connection only when its method is idempotent (RFC 9110 §9.2.2): a POST that may have
// arrived is never sent twice.
class UpstreamPool {
 public:
  UpstreamPool(UpstreamTarget target, size_t max_idle);
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Sends `request` and reads the answer's head; `deadline_ms` (util::monotonic_ms) bounds the
  // whole exchange, body included, and `connect_deadline_ms` (at most deadline_ms; 0: the same)
  // the making of a connection, before anything is sent. Throws UpstreamError.
  std::unique_ptr<UpstreamExchange> send(const UpstreamRequest& request, int64_t deadline_ms,
                                         int64_t connect_deadline_ms = 0);
  // Sends `request` on a connection of its own and hands that connection back without reading
  // the answer, for a sender that would not act on the answer and is about to exit (the CLI's
  // spans). `deadline_ms` bounds the connection and the writing. Returns the connection once the
  // request is written, else an invalid Fd and `failure` saying why (a refused connection, a
  // deadline): not thrown, as a replay whose receiver is down paid for its first exception, the
  // unwinder's pages (198 page faults instead of 189). Throws UpstreamError only for a request
  // that cannot be framed (a header value with a line break).
  util::Fd send_unanswered(const UpstreamRequest& request, int64_t deadline_ms,
                           std::string& failure);

  const UpstreamTarget& target() const { return target_; }
  int64_t opened() const;  // connections opened so far (for /metrics and tests)

 private:
  struct Pool;
  UpstreamTarget target_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace idem::net
