#pragma once
// A strict, incremental HTTP/1.1 response parser (RFC 9112) with no I/O: bytes in, the answer's
// head and its body in pieces out, so a large body passes through without being held whole.
// The framing rules are the request parser's (net/message.hpp); an answer two parsers could
// frame differently is refused, since a proxy that stores or relays it would pass on a body the
// upstream did not mean.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/message.hpp"

namespace idem::net {

struct ResponseHead {
  int status = 0;         // 200..599 (1xx interim answers are skipped)
  int minor_version = 1;  // HTTP/1.<minor_version>
  std::string reason;     // the reason phrase, maybe empty (nothing relies on it)
  Headers headers;        // as received, framing fields included
  enum class Body {
    none,         // HEAD, 204, 304: the answer ends with its head
    length,       // content_length bytes
    chunked,      // chunked transfer coding
    until_close,  // the body runs to the end of the connection
  } body = Body::none;
  uint64_t content_length = 0;
  bool keep_alive = true;  // the connection may carry another request after this answer
};

struct ResponseLimits {
  size_t max_head_bytes = 64 * 1024;  // status line and header fields, CRLFs included, per answer
  size_t max_fields = 100;
  size_t max_trailer_bytes = 16 * 1024;
  int max_interim = 16;  // 1xx answers skipped before the final one
};

class ResponseParser {
 public:
  enum class State {
    head,      // reading the status line and header fields
    body,      // the head is in (head() holds it); reading the body
    complete,  // the answer is in; bytes after it belong to no answer
    failed,    // error() says why; the connection cannot be reused
  };

  // `head_request`: the answer is to a HEAD request, so it has no body whatever it announces.
  explicit ResponseParser(bool head_request, ResponseLimits limits = {});

  // Consumes a prefix of `in` and returns how many bytes it used; it stops where the answer
  // ends. Body bytes parsed are kept until take_body() hands them out.
  size_t feed(std::string_view in);
  // The connection reached its end: completes an answer whose body runs until the close, fails
  // any other that is not complete (cut off).
  void end_of_input();
  // The body bytes parsed since the last call (maybe none).
  std::string take_body();

  State state() const { return state_; }
  bool started() const { return started_; }  // a byte of the answer came
  const ResponseHead& head() const { return head_; }
  const std::string& error() const { return error_; }

 private:
  size_t feed_head(std::string_view in);
  size_t feed_body(std::string_view in);
  void head_line(std::string_view line);
  void parse_status_line(std::string_view line);
  void finish_head();
  bool framing();
  void fail(std::string reason);

  const bool head_request_;
  ResponseLimits limits_;
  State state_ = State::head;
  std::string error_;
  ResponseHead head_;
  std::string body_;
  syntax::LineReader line_;
  size_t head_bytes_ = 0;
  bool started_ = false;
  bool status_line_done_ = false;
  int interim_ = 0;
  uint64_t body_left_ = 0;
  syntax::ChunkedDecoder chunked_;
};

}  // namespace idem::net
