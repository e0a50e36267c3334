#include "net/server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <system_error>

#include "net/resolve.hpp"
#include "net/socket_io.hpp"
#include "net/stream.hpp"
#include "net/tls.hpp"
#include "util/clock.hpp"

namespace idem::net {

namespace {

constexpr size_t k_read_chunk = 64 * 1024;
// After an answer that closes the connection, input the client may still be sending (a body
// that was refused unread) is read and dropped for this long, so that closing with unread data
// does not reset the connection before the client has read the answer.
constexpr int64_t k_linger_ms = 1000;
constexpr size_t k_linger_bytes = 4 << 20;

// Connections over the cap being answered 503 and read to their end, at most; beyond, closed at
// once. Each is read for at most k_shed_linger_ms: its request, then the client's close.
constexpr size_t k_max_shedding = 256;
constexpr int64_t k_shed_linger_ms = 1000;
constexpr std::string_view k_shed_body =
    "{\"type\":\"about:blank\",\"title\":\"Too many connections\",\"status\":503,"
    "\"detail\":\"the server is serving and queueing all it may (--max-connections)\"}\n";
const std::string& shed_answer() {
  static const std::string answer =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(k_shed_body.size()) + "\r\n\r\n" + std::string(k_shed_body);
  return answer;
}

const char* reason_phrase(int status) {
  // RFC 9110 §15's registry: a proxied answer may carry any of them.
  // clang-format off
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 103: return "Early Hints";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 407: return "Proxy Authentication Required";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 425: return "Too Early";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 451: return "Unavailable For Legal Reasons";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return status < 200   ? "Informational"
                    : status < 300 ? "Success"
                    : status < 400 ? "Redirection"
                    : status < 500 ? "Client Error"
                                   : "Server Error";
  }
  // clang-format on
}

// An IMF-fixdate for the Date header, computed once a second per thread.
const std::string& http_date() {
  thread_local std::time_t last = 0;
  thread_local std::string text;
  std::time_t now = std::time(nullptr);
  if (now != last) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    text = buf;
    last = now;
  }
  return text;
}

int port_of(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);
  return 0;
}

std::string peer_address(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
  }
  return buf;
}

// One connection, from accept to close: requests read, answered and logged in order.
class Session {
 public:
  Session(const ServerOptions& options, Handler& handler, Stream& stream, int wake_fd,
          const std::atomic<bool>& stopping, std::string remote, int remote_port, int64_t start_ms)
      : options_(options),
        handler_(handler),
        stream_(stream),
        wake_fd_(wake_fd),
        stopping_(stopping),
        remote_(std::move(remote)),
        remote_port_(remote_port),
        parser_(options.limits, remote_),
        idle_since_(start_ms),
        request_start_(start_ms) {}

  void run() {
    // A TLS handshake is part of the first request: it has that request's deadline.
    if (!stream_.open(request_start_ + options_.request_timeout_ms)) return;
    bool first = true;
    for (;;) {
      parser_.reset();
      if (!read_head(first)) return;
      first = false;
      if (!answer_request()) return;
    }
  }

 private:
  using Read = Stream::Read;

  bool buffered() const { return pos_ < in_.size(); }

  Read read_more(int64_t deadline_ms, bool watch_stop) {
    size_t n = 0;
    Read r = stream_.read(chunk_, sizeof chunk_, n, deadline_ms, watch_stop ? wake_fd_ : -1);
    if (r != Read::data) return r;
    if (pos_ == in_.size()) {
      in_.clear();
      pos_ = 0;
    } else if (pos_ > k_read_chunk) {
      in_.erase(0, pos_);
      pos_ = 0;
    }
    in_.append(chunk_, n);
    return Read::data;
  }

  void feed() { pos_ += parser_.feed(std::string_view(in_).substr(pos_)); }

  // Reads up to the end of a request head. False when the connection is done with: closed by
  // the client, idle past its time, stopped while idle, or refused (the answer is written).
  bool read_head(bool first) {
    const int64_t idle_limit = std::min(options_.idle_timeout_ms, options_.request_timeout_ms);
    while (parser_.state() == RequestParser::State::head) {
      if (buffered()) {
        // The first byte of a later request starts its deadline (on a new connection the
        // deadline runs from the moment a worker took it).
        if (!parser_.started() && !first) request_start_ = util::monotonic_ms();
        feed();
        continue;
      }
      const bool idle = !parser_.started();
      const int64_t deadline =
          idle ? idle_since_ + idle_limit : request_start_ + options_.request_timeout_ms;
      Read r = read_more(deadline, idle);
      if (r == Read::timeout && !idle)
        return refuse_and_close(408, "the request did not arrive within " +
                                         std::to_string(options_.request_timeout_ms) + " ms");
      if (r != Read::data) return false;
    }
    if (parser_.state() == RequestParser::State::failed) {
      Response response = handler_.refused(parser_.head(), parser_.error());
      return finish(parser_.head(), response, util::monotonic_ms(), true);
    }
    return true;
  }

  bool refuse_and_close(int status, std::string reason) {
    ParseError error{status, std::move(reason)};
    Response response = handler_.refused(parser_.head(), error);
    finish(parser_.head(), response, util::monotonic_ms(), true);
    return false;
  }

  // The head is in: route it, read the body, handle, answer. False when the connection closes.
  bool answer_request() {
    const int64_t head_ms = util::monotonic_ms();
    Admission admission = handler_.admit(parser_.head());
    if (admission.refusal) {
      const RequestHead& head = parser_.head();
      // The body is not read, so the connection cannot carry another request after it.
      bool body_follows = head.chunked || head.content_length > 0;
      return finish(head, *admission.refusal, head_ms, body_follows);
    }
    parser_.accept_body(admission.max_body);
    if (parser_.state() == RequestParser::State::body && parser_.head().expect_continue &&
        !buffered()) {
      // RFC 9110 §10.1.1: the client waits for this before it sends the body.
      if (!stream_.write("HTTP/1.1 100 Continue\r\n\r\n",
                         util::monotonic_ms() + options_.request_timeout_ms))
        return false;
    }
    while (parser_.state() == RequestParser::State::body) {
      if (buffered()) {
        feed();
        continue;
      }
      Read r = read_more(request_start_ + options_.request_timeout_ms, false);
      if (r == Read::timeout)
        return refuse_and_close(408, "the body did not arrive within " +
                                         std::to_string(options_.request_timeout_ms) + " ms");
      if (r != Read::data) return false;
    }
    if (parser_.state() == RequestParser::State::failed) {
      Response response = handler_.refused(parser_.head(), parser_.error());
      return finish(parser_.head(), response, head_ms, true);
    }
    Request request{parser_.take_head(), parser_.take_body(), remote_, remote_port_};
    Response response;
    try {
      response = handler_.handle(request);
    } catch (const std::exception& e) {
      // A bug or an exhausted resource: the client gets an answer, the worker lives on.
      response = handler_.refused(request.head, ParseError{500, e.what()});
      response.close = true;
    }
    return finish(request.head, response, head_ms, false);
  }

  // Writes the answer and logs it. False when the connection is closed after it.
  bool finish(const RequestHead& head, Response& response, int64_t start_ms, bool must_close) {
    const bool send_body = head.method != "HEAD";
    const bool streamed = static_cast<bool>(response.stream);
    // An HTTP/1.0 client knows no chunked coding: a streamed body ends with the connection.
    if (streamed && head.minor_version == 0) response.close = true;
    if (must_close || !head.keep_alive || stopping_.load()) response.close = true;
    std::string out = head_text(head, response);
    bool sent;
    if (!streamed) {
      if (send_body) out += response.body;
      sent = stream_.write(out, util::monotonic_ms() + options_.request_timeout_ms);
    } else {
      sent = stream_.write(out, util::monotonic_ms() + options_.request_timeout_ms) &&
             (!send_body || write_stream(head, response));
    }
    const int64_t now = util::monotonic_ms();
    handler_.answered(head, remote_, response, now - start_ms);
    if (!sent) return false;
    if (response.close) {
      linger();
      return false;
    }
    idle_since_ = now;
    request_start_ = now;
    return true;
  }

  // The status line and header fields, up to the blank line. The body's framing: its length,
  // or for a streamed one chunked (HTTP/1.1) or the connection's end (HTTP/1.0).
  static std::string head_text(const RequestHead& head, const Response& response) {
    std::string out;
    out.reserve(256 + (response.stream || head.method == "HEAD" ? 0 : response.body.size()));
    out += "HTTP/1.1 ";
    out += std::to_string(response.status);
    out += ' ';
    out += reason_phrase(response.status);
    out += "\r\nDate: ";
    out += http_date();
    out += "\r\n";
    if (!response.content_type.empty()) {
      out += "Content-Type: ";
      out += response.content_type;
      out += "\r\n";
    }
    if (!response.stream) {
      out += "Content-Length: ";
      out += std::to_string(response.body.size());
      out += "\r\n";
    } else if (head.minor_version == 1 && !bodiless(response.status)) {
      out += "Transfer-Encoding: chunked\r\n";
    }
    for (const auto& [name, value] : response.headers) {
      out += name;
      out += ": ";
      out += value;
      out += "\r\n";
    }
    if (response.close)
      out += "Connection: close\r\n";
    else if (head.minor_version == 0)
      out += "Connection: keep-alive\r\n";
    out += "\r\n";
    return out;
  }

  // Answers that never have a body (RFC 9110 §6.4.1): a stream for one is run with its pieces
  // dropped, so that whatever it reads from is read to its end.
  static bool bodiless(int status) { return status < 200 || status == 204 || status == 304; }

  // Runs the answer's stream, each piece one chunk (or, to HTTP/1.0, the bytes as they are),
  // each write bounded by the request timeout. False when the body did not go out whole: the
  // connection is then closed without the last chunk, or, when the body runs to the close
  // (HTTP/1.0), reset, so that such a client too sees it cut off rather than ended.
  bool write_stream(const RequestHead& head, Response& response) {
    const bool chunked = head.minor_version == 1 && !bodiless(response.status);
    const bool drop = bodiless(response.status);
    bool gone = false;
    std::string out;
    auto write = [&](std::string_view piece) {
      if (gone) return false;
      if (piece.empty()) {
        // Sends nothing (an empty chunk would end the body): a look at whether the client has
        // closed its end, for a stream that waits between writes.
        pollfd p{stream_.fd(), POLLRDHUP, 0};
        gone = ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
        return !gone;
      }
      if (drop) return true;
      out.clear();
      if (chunked) {
        char size[24];
        out.append(size, size_t(std::snprintf(size, sizeof size, "%zx\r\n", piece.size())));
      }
      out += piece;
      if (chunked) out += "\r\n";
      gone = !stream_.write(out, util::monotonic_ms() + options_.request_timeout_ms);
      return !gone;
    };
    bool whole = false;
    try {
      whole = response.stream(write);
    } catch (const std::exception&) {
      // The head is out: the only way left to say the answer failed is to cut it off.
    }
    if (whole && !gone &&
        (!chunked ||
         stream_.write("0\r\n\r\n", util::monotonic_ms() + options_.request_timeout_ms)))
      return true;
    if (!chunked) {
      ::linger reset{1, 0};
      ::setsockopt(stream_.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    response.close = true;
    return false;
  }

  void linger() {
    const int64_t deadline = util::monotonic_ms() + k_linger_ms;
    stream_.close_write(deadline);
    size_t dropped = 0;
    while (dropped < k_linger_bytes) {
      size_t n = 0;
      if (stream_.read(chunk_, sizeof chunk_, n, deadline, -1) != Read::data) return;
      dropped += n;
    }
  }

  const ServerOptions& options_;
  Handler& handler_;
  Stream& stream_;
  const int wake_fd_;
  const std::atomic<bool>& stopping_;
  const std::string remote_;
  const int remote_port_;
  RequestParser parser_;
  std::string in_;  // received bytes; those before pos_ are parsed
  size_t pos_ = 0;
  int64_t idle_since_;     // the connection's last answer (or when a worker took it)
  int64_t request_start_;  // the current request's deadline runs from here
  char chunk_[k_read_chunk];
};

}  // namespace

Server::Server(ServerOptions options, Handler& handler) : options_(options), handler_(handler) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
    throw Error(k_exit_internal, "cannot create a pipe: " + why(errno));
  wake_read_.reset(fds[0]);
  wake_write_.reset(fds[1]);
}

Server::~Server() {
  stop();
  remove_unix_socket();  // run() was never called
}

int Server::listen(const std::string& host, int port, const std::string& shown_as) {
  Resolved found = resolve_host(host, port);
  if (found.addresses.empty())
    throw ListenError("cannot listen on " + shown_as + ": " + found.error);
  int err = EADDRNOTAVAIL;
  // IPv4 first: "localhost" then means 127.0.0.1, where clients (and a port file's readers) look.
  std::stable_partition(found.addresses.begin(), found.addresses.end(),
                        [](const SocketAddress& a) { return a.storage.ss_family == AF_INET; });
  for (const SocketAddress& a : found.addresses) {
    util::Fd fd(::socket(a.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) {
      err = errno;
      continue;
    }
    // SO_REUSEADDR lets a restarted daemon bind over its predecessor's TIME_WAIT connections;
    // SO_REUSEPORT is never set: it would let a second daemon share the port and its traffic.
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a.storage), a.length) != 0 ||
        ::listen(fd.get(), SOMAXCONN) != 0) {
      err = errno;
      continue;
    }
    listener_ = std::move(fd);
    break;
  }
  if (!listener_.valid()) throw ListenError("cannot listen on " + shown_as + ": " + why(err));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  return port_of(ss);
}

namespace {

// A socket file at `path` that no server accepts on any more (its daemon died). The probe does
// not block: a live server with a full backlog answers EAGAIN, which counts as alive.
bool stale_socket(const std::string& path) {
  util::Fd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return probe.valid() &&
         ::connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
         errno == ECONNREFUSED;
}

}  // namespace

void Server::listen_unix(const std::string& path, Handler& handler) {
  const std::string shown = "cannot listen on " + path + ": ";
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    throw ListenError(shown + "a socket path must have 1 to " +
                      std::to_string(sizeof addr.sun_path - 1) + " bytes");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw ListenError(shown + "a file that is not a socket is there");
    if (!stale_socket(path)) throw ListenError(shown + "another process listens there");
    ::unlink(path.c_str());
  }
  util::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw ListenError(shown + why(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // The socket file is made with the umask's mode: 0600 from the start, never wider even briefly
  // (this runs before the server's threads start, so the umask is nobody else's meanwhile).
  const mode_t old_mask = ::umask(0177);
  const int bound = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(old_mask);
  if (bound != 0) throw ListenError(shown + why(bind_errno));
  if (::chmod(path.c_str(), 0600) != 0 || ::listen(fd.get(), SOMAXCONN) != 0 ||
      ::lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    throw ListenError(shown + why(err));
  }
  unix_listener_ = std::move(fd);
  unix_handler_ = &handler;
  unix_path_ = path;
  unix_dev_ = uint64_t(st.st_dev);
  unix_ino_ = uint64_t(st.st_ino);
}

std::pair<std::string, int> Server::adopt(util::Fd listener) {
  const int flags = ::fcntl(listener.get(), F_GETFL);
  if (flags < 0 || ::fcntl(listener.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    throw ListenError("cannot use the passed socket: " + why(errno));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  listener_ = std::move(listener);
  return {peer_address(ss), port_of(ss)};
}

void Server::adopt_unix(util::Fd listener, Handler& handler) {
  const int flags = ::fcntl(listener.get(), F_GETFL);
  if (flags < 0 || ::fcntl(listener.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    throw ListenError("cannot use the passed socket: " + why(errno));
  unix_listener_ = std::move(listener);
  unix_handler_ = &handler;
}

void Server::remove_unix_socket() {
  if (unix_path_.empty()) return;
  struct stat st {};
  // Only the file this server made: a successor may have replaced it already.
  if (::lstat(unix_path_.c_str(), &st) == 0 && uint64_t(st.st_dev) == unix_dev_ &&
      uint64_t(st.st_ino) == unix_ino_)
    ::unlink(unix_path_.c_str());
  unix_path_.clear();
}

void Server::run() {
  std::vector<pollfd> p;
  while (!stopping_.load()) {
    // poll() skips a negative fd: without listen_unix only the TCP listener is watched.
    p.assign({{wake_read_.get(), POLLIN, 0},
              {listener_.get(), POLLIN, 0},
              {unix_listener_.valid() ? unix_listener_.get() : -1, POLLIN, 0}});
    for (const Shed& s : shedding_) p.push_back({s.fd.get(), POLLIN, 0});
    int n = ::poll(p.data(), nfds_t(p.size()), shed_poll_timeout_ms());
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if ((p[0].revents & POLLIN) != 0) break;
    // A broken listener stops the server.
    if (((p[1].revents | p[2].revents) & (POLLERR | POLLNVAL)) != 0) break;
    drain_shed(p.data() + 3, p.size() - 3);  // before accepting, which may add to shedding_
    if ((p[1].revents & POLLIN) != 0) accept_one(listener_.get(), handler_);
    if ((p[2].revents & POLLIN) != 0) accept_one(unix_listener_.get(), *unix_handler_);
  }
  shedding_.clear();
  listener_.reset();  // from here on, new connections are refused
  unix_listener_.reset();
  remove_unix_socket();
  {
    std::lock_guard lock(mutex_);
    accepting_done_ = true;
  }
  ready_.notify_all();
  // Workers serve what was accepted before the stop (idle connections close at once), then end.
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void Server::accept_one(int listener, Handler& handler) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int fd =
      ::accept4(listener, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    // Out of descriptors: the pending connection stays in the backlog; do not spin on it.
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) ::usleep(10000);
    return;
  }
  util::Fd connection(fd);
  std::unique_lock lock(mutex_);
  if (connections_ >= 2 * options_.max_connections) {
    const bool tls = listener == listener_.get() && tls_ != nullptr;
    lock.unlock();
    shed(std::move(connection), tls);
    return;
  }
  int one = 1;
  if (ss.ss_family != AF_UNIX) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ++connections_;
  waiting_.push_back(Waiting{std::move(connection),
                             ss.ss_family == AF_UNIX ? std::string("unix") : peer_address(ss),
                             port_of(ss), &handler, listener == listener_.get() ? tls_ : nullptr});
  if (int(waiting_.size()) > idle_workers_ && int(workers_.size()) < options_.max_connections) {
    try {
      workers_.emplace_back([this] { work(); });
    } catch (const std::system_error&) {
      // No thread to be had now: the connection waits for a worker already running, if any.
      if (workers_.empty()) {
        waiting_.pop_back();
        --connections_;
        ++shed_;
        return;
      }
    }
  }
  lock.unlock();
  ready_.notify_one();
}

void Server::shed(util::Fd connection, bool tls) {
  ++shed_;
  if (tls || shedding_.size() >= k_max_shedding) return;  // closed at once, unanswered
  // A new connection's send buffer takes the whole answer: one non-blocking send.
  const std::string& answer = shed_answer();
  const ssize_t sent =
      ::send(connection.get(), answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (sent != ssize_t(answer.size())) return;
  ::shutdown(connection.get(), SHUT_WR);
  shedding_.push_back(Shed{std::move(connection), util::monotonic_ms() + k_shed_linger_ms});
}

void Server::drain_shed(const pollfd* polled, size_t count) {
  const int64_t now = util::monotonic_ms();
  char scratch[4096];
  size_t kept = 0;
  for (size_t i = 0; i < shedding_.size(); ++i) {
    bool done = now >= shedding_[i].until_ms;
    if (!done && i < count && polled[i].revents != 0) {
      // Whatever the client sent is dropped; its close (or an error) ends the connection.
      for (;;) {
        const ssize_t n = ::recv(shedding_[i].fd.get(), scratch, sizeof scratch, MSG_DONTWAIT);
        if (n > 0) continue;
        done = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        break;
      }
    }
    if (!done) {
      if (kept != i) shedding_[kept] = std::move(shedding_[i]);
      ++kept;
    }
  }
  shedding_.resize(kept);
}

int Server::shed_poll_timeout_ms() const {
  if (shedding_.empty()) return -1;
  int64_t first = shedding_.front().until_ms;
  for (const Shed& s : shedding_) first = std::min(first, s.until_ms);
  return int(std::clamp<int64_t>(first - util::monotonic_ms(), 0, k_shed_linger_ms));
}

void Server::work() {
  for (;;) {
    Waiting connection;
    {
      std::unique_lock lock(mutex_);
      ++idle_workers_;
      ready_.wait(lock, [&] { return !waiting_.empty() || accepting_done_; });
      --idle_workers_;
      if (waiting_.empty()) return;
      connection = std::move(waiting_.front());
      waiting_.pop_front();
    }
    // The deadline of the first request runs from now: a connection that waited for a worker
    // (within the cap) is not cut off for time it could not use.
    try {
      std::unique_ptr<Stream> stream = connection.tls
                                           ? connection.tls->accept(connection.fd.get())
                                           : std::make_unique<PlainStream>(connection.fd.get());
      Session(options_, *connection.handler, *stream, wake_read_.get(), stopping_,
              std::move(connection.remote), connection.remote_port, util::monotonic_ms())
          .run();
    } catch (const std::exception&) {
      // Only the connection is lost (its answer could not even be built).
    }
    {
      // Counted out before the close, so a client that reconnects at once is not shed.
      std::lock_guard lock(mutex_);
      --connections_;
    }
    connection.fd.reset();
  }
}

void Server::use_tls(std::shared_ptr<const TlsContext> context) {
  std::lock_guard lock(mutex_);
  tls_ = std::move(context);
}

void Server::stop() {
  if (stopping_.exchange(true)) return;
  char byte = 0;
  // The pipe is never read: once written, it stays readable and wakes every poll().
  [[maybe_unused]] ssize_t n = ::write(wake_write_.get(), &byte, 1);
}

}  // namespace idem::net
