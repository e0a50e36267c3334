#pragma once
// A strict, incremental HTTP/1.1 request parser (RFC 9112) with no I/O: bytes in, a request head,
// a body and the number of bytes used out. The caller reads the socket, routes on the head and
// says how large a body it accepts before the body is read. Anything ambiguous about where a
// message ends is refused (a request smuggled past a proxy, or a body other than the one the
// stored headers show): the error carries the HTTP status to answer and a one-line reason.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/message.hpp"

namespace idem::net {

struct RequestHead {
  std::string method;     // case-sensitive token, e.g. "POST"
  std::string target;     // as sent: "/hooks/x?y=1"
  std::string path;       // the target up to '?' ("/hooks/x"); "*" for "OPTIONS *"
  int minor_version = 1;  // HTTP/1.<minor_version>: 0 or 1
  Headers headers;
  bool keep_alive = true;        // the client wants the connection kept after the answer
  bool expect_continue = false;  // "Expect: 100-continue" on HTTP/1.1
  bool chunked = false;          // the body comes chunked
  uint64_t content_length = 0;   // the announced length when not chunked (0: no body)
  // The peer's address (as Request::remote, e.g. "127.0.0.1"; "unix" on a Unix socket), from
  // the parser's constructor: known before the body is read, so an allow-list refuses early.
  std::string remote;
};

struct ParseError {
  int status = 400;    // 400, 413, 414, 417, 431, 501 or 505
  std::string reason;  // one line, for the problem answer and the log
};

struct ParserLimits {
  size_t max_head_bytes = 64 * 1024;  // request line and header fields, CRLFs included
  size_t max_fields = 100;
  size_t max_trailer_bytes = 16 * 1024;
};

class RequestParser {
 public:
  enum class State {
    head,      // reading the request line and header fields
    routing,   // the head is in: the caller must call accept_body() (or drop the request)
    body,      // reading the body
    complete,  // head and body are in; reset() starts the next request
    failed,    // error() says why; the connection cannot be reused
  };

  // `remote`: the peer's address every head parsed gets (RequestHead::remote).
  explicit RequestParser(ParserLimits limits = {}, std::string remote = "")
      : limits_(limits), remote_(std::move(remote)) {
    head_.remote = remote_;
  }

  // Consumes a prefix of `in` and returns how many bytes it used. It stops where the head ends
  // (state routing) and where the message ends (state complete), so bytes of a pipelined next
  // request are never consumed with this one. In state routing, complete or failed it uses none.
  size_t feed(std::string_view in);

  // In state routing: the body may have up to `max_body` bytes. An announced length above that
  // fails at once with 413, without reading the body; a chunked body fails when it grows past it.
  void accept_body(uint64_t max_body);

  // Back to state head for the next request on the connection (after complete).
  void reset();

  State state() const { return state_; }
  bool started() const { return started_; }  // a byte of this request (not a blank line) came
  const RequestHead& head() const { return head_; }
  const ParseError& error() const { return error_; }
  const std::string& body() const { return body_; }
  // In state complete: hand the request over (the parser then needs reset()).
  RequestHead take_head() { return std::move(head_); }
  std::string take_body() { return std::move(body_); }

 private:
  size_t feed_head(std::string_view in);
  size_t feed_chunked(std::string_view in);
  void head_line(std::string_view line);
  void finish_head();
  void parse_request_line(std::string_view line);
  void fail(int status, std::string reason);

  ParserLimits limits_;
  std::string remote_;
  State state_ = State::head;
  ParseError error_;
  RequestHead head_;
  std::string body_;
  syntax::LineReader line_;  // a head line being assembled
  size_t head_bytes_ = 0;
  bool started_ = false;
  bool request_line_done_ = false;
  syntax::ChunkedDecoder chunked_;
};

}  // namespace idem::net
