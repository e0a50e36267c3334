#pragma once
// A small, strict HTTP/1.1 server: one accept thread (the caller of run()), a bounded pool of
// worker threads each serving one connection at a time, keep-alive, pipelined requests answered
// in order, a whole-request deadline, a cap on connections, and a graceful stop. What a request
// means is the Handler's business; framing is request_parser's.
#include <poll.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "net/request_parser.hpp"
#include "util/fd.hpp"

namespace idem::net {

class TlsContext;

struct Request {
  RequestHead head;
  std::string body;
  std::string remote;   // the peer's address, e.g. "127.0.0.1"
  int remote_port = 0;  // the peer's port; 0 on a Unix socket
};

struct Response {
  int status = 200;
  std::string content_type;  // empty: no Content-Type
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // close the connection after this answer
  // When set, the body is produced after the head is written: the server sends the head
  // (Transfer-Encoding: chunked to HTTP/1.1 clients; close-delimited to HTTP/1.0 ones) and
  // calls stream with a writer; each call of the writer sends one piece (false: the client is
  // gone, stop); an empty piece sends nothing and says whether the client has closed its end
  // (a stream that waits between writes looks with it). stream returns false when the body could
  // not be produced whole (the connection is then closed without the last chunk, so the client sees
  // it cut off). `body` is ignored when `stream` is set. HEAD requests: head only, stream not
  // called. An answer that has no body (1xx, 204, 304) gets no framing field; its stream is called
  // and what it writes is dropped. Each write is bounded by the request timeout; access logging
  // (Handler::answered) happens once the stream has ended.
  std::function<bool(const std::function<bool(std::string_view)>& write)> stream;
  // Members of the access-log line the handler wants there (never sent).
  std::vector<std::pair<std::string, std::string>> log_fields;
};

// What the application says once a request's head is in, before its body is read.
struct Admission {
  std::optional<Response> refusal;  // answer this at once; the body is not read
  uint64_t max_body = 0;            // else: the body may have up to this many bytes
};

// The application. Every member is called on worker threads, several at once.
class Handler {
 public:
  virtual ~Handler() = default;
  virtual Admission admit(const RequestHead& head) = 0;
  virtual Response handle(Request& request) = 0;
  // The answer to a request the transport refused: malformed (the parser's status and reason),
  // too large, or cut off by the deadline (408); or 500 when handle() threw (the reason is the
  // exception's). `head` holds what was parsed, maybe nothing.
  virtual Response refused(const RequestHead& head, const ParseError& error) = 0;
  // After each answer is written (or could not be): for the access log and metrics.
  virtual void answered(const RequestHead& head, const std::string& remote,
                        const Response& response, int64_t duration_ms) = 0;
};

struct ServerOptions {
  // Served at once; as many more may wait; beyond, answered 503 with Retry-After and closed
  // (a TLS connection is closed unanswered: an answer needs a handshake).
  int max_connections = 64;
  int64_t request_timeout_ms =
      10000;                       // whole request, from its first byte (or its connection's start)
  int64_t idle_timeout_ms = 5000;  // a kept-alive connection with no new request is closed
  ParserLimits limits;
};

// The address could not be bound or listened on: "cannot listen on HOST:PORT: <why>".
class ListenError : public Error {
 public:
  explicit ListenError(const std::string& message) : Error(k_exit_listen, message) {}
};

class Server {
 public:
  Server(ServerOptions options, Handler& handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds HOST:PORT (port 0: any free one) with SO_REUSEADDR and never SO_REUSEPORT, so a port
  // another process listens on is refused. Returns the bound port; throws ListenError.
  int listen(const std::string& host, int port, const std::string& shown_as);
  // Also listens on a Unix socket at `path`, created 0600, whose connections `handler` answers
  // (the TCP listener's are the constructor's handler's). A socket file nobody listens on (a
  // stale one) is replaced; any other file there, or a live socket, is refused (ListenError).
  // The socket file is removed when run() returns. Call before run().
  void listen_unix(const std::string& path, Handler& handler);
  // Listeners made by someone else (systemd's socket activation), in place of listen() and
  // listen_unix(): a listening TCP socket, whose address (host, port) is returned, and a
  // listening Unix socket, whose file is its maker's (never removed here). Call before run().
  std::pair<std::string, int> adopt(util::Fd listener);
  void adopt_unix(util::Fd listener, Handler& handler);
  // Accepts and serves until stop(); returns once every connection being served has finished.
  void run();
  // From any thread: stop accepting, close idle and waiting connections, let requests being
  // received or handled finish (their answers say Connection: close).
  void stop();

  int64_t shed_count() const { return shed_.load(); }

  // From any thread: the TCP listener's connections accepted from now on speak TLS with
  // `context` (a reload's new certificate); those being served keep theirs. Unix socket
  // connections are always plain.
  void use_tls(std::shared_ptr<const TlsContext> context);

 private:
  struct Waiting {
    util::Fd fd;
    std::string remote;
    int remote_port = 0;
    Handler* handler = nullptr;             // the listener's
    std::shared_ptr<const TlsContext> tls;  // the TCP listener's when it speaks TLS
  };
  void accept_one(int listener, Handler& handler);
  // A connection over the cap: answered 503 at once, then read to its end (a close with unread
  // bytes would send a reset, which can destroy the answer before the client reads it).
  struct Shed {
    util::Fd fd;
    int64_t until_ms = 0;
  };
  void shed(util::Fd connection, bool tls);
  void drain_shed(const pollfd* polled, size_t count);
  int shed_poll_timeout_ms() const;
  void remove_unix_socket();
  void work();
  void serve(Waiting& connection);

  ServerOptions options_;
  Handler& handler_;
  util::Fd listener_;
  util::Fd unix_listener_;  // with listen_unix
  Handler* unix_handler_ = nullptr;
  std::shared_ptr<const TlsContext> tls_;  // guarded by mutex_
  std::string unix_path_;
  uint64_t unix_dev_ = 0, unix_ino_ = 0;  // the socket file made, so stop removes only it
  util::Fd wake_read_, wake_write_;       // readable once stop() is called: wakes every poll()
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> shed_{0};
  std::vector<Shed> shedding_;  // the accepting thread's alone; at most k_max_shedding

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Waiting> waiting_;
  std::vector<std::thread> workers_;
  int idle_workers_ = 0;
  int connections_ = 0;  // being served or waiting
  bool accepting_done_ = false;
};

}  // namespace idem::net
