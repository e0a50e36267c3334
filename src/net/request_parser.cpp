#include "net/request_parser.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace idem::net {

using syntax::excerpt;
using syntax::is_digit;
using syntax::is_ows;
using syntax::lowered;

void RequestParser::fail(int status, std::string reason) {
  state_ = State::failed;
  error_ = ParseError{status, std::move(reason)};
}

void RequestParser::reset() {
  state_ = State::head;
  error_ = ParseError{};
  head_ = RequestHead{};
  head_.remote = remote_;
  body_.clear();
  line_.clear();
  head_bytes_ = 0;
  started_ = false;
  request_line_done_ = false;
  chunked_ = syntax::ChunkedDecoder();
}

size_t RequestParser::feed(std::string_view in) {
  size_t used = 0;
  while (used < in.size()) {
    size_t n = 0;
    if (state_ == State::head) {
      n = feed_head(in.substr(used));
    } else if (state_ == State::body) {
      if (head_.chunked) {
        n = feed_chunked(in.substr(used));
      } else {
        n = size_t(std::min<uint64_t>(in.size() - used, head_.content_length - body_.size()));
        body_.append(in.data() + used, n);
        if (body_.size() == head_.content_length) state_ = State::complete;
      }
    } else {
      break;
    }
    used += n;
  }
  return used;
}

size_t RequestParser::feed_head(std::string_view in) {
  size_t used = 0;
  while (used < in.size() && state_ == State::head) {
    started_ = true;
    size_t before = used;
    size_t room = limits_.max_head_bytes > head_bytes_ ? limits_.max_head_bytes - head_bytes_ : 0;
    syntax::LineReader::Got got = line_.read(in, used, room);
    head_bytes_ += used - before;
    if (got == syntax::LineReader::Got::too_long) {
      fail(request_line_done_ ? 431 : 414,
           std::string(request_line_done_ ? "the request head" : "the request line") +
               " is longer than " + std::to_string(limits_.max_head_bytes) + " bytes");
    } else if (got == syntax::LineReader::Got::bad_end) {
      fail(400, line_.reason());
    }
    if (got != syntax::LineReader::Got::done) break;
    head_line(line_.line());
    line_.clear();
  }
  return used;
}

void RequestParser::head_line(std::string_view line) {
  if (!request_line_done_) {
    if (line.empty()) {  // RFC 9112 §2.2: ignore blank lines before a request
      started_ = false;
    } else {
      parse_request_line(line);
    }
  } else if (line.empty()) {
    finish_head();
  } else if (is_ows(line.front())) {
    fail(400, "obsolete line folding (a header line starts with whitespace)");
  } else if (head_.headers.fields().size() >= limits_.max_fields) {
    fail(431, "more than " + std::to_string(limits_.max_fields) + " header fields");
  } else if (auto refusal = syntax::parse_field(line, head_.headers)) {
    fail(refusal->status, refusal->reason);
  }
}

void RequestParser::parse_request_line(std::string_view line) {
  // method SP request-target SP HTTP-version, single spaces (RFC 9112 §3).
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "bad request line '" + excerpt(line) + "'");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!syntax::is_token(method))
    return fail(400, "bad method in request line '" + excerpt(line) + "'");
  if (target.empty() ||
      !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
    return fail(400, "bad request target in '" + excerpt(line) + "'");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !is_digit(version[5]) ||
      version[6] != '.' || !is_digit(version[7]))
    return fail(400, "bad HTTP version in request line '" + excerpt(line) + "'");
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
    return fail(505, "HTTP version " + std::string(version.substr(5)) + " is not supported");
  head_.method = std::string(method);
  head_.target = std::string(target);
  head_.minor_version = version[7] - '0';
  std::string_view path = target;
  if (target.front() != '/') {
    // absolute-form (RFC 9112 §3.2.2), which servers must accept; or "OPTIONS *".
    if (target == "*" && method == "OPTIONS") {
      path = target;
    } else {
      std::string scheme = lowered(target.substr(0, target.find("://")));
      if ((scheme != "http" && scheme != "https") || target.find("://") == std::string_view::npos)
        return fail(400, "bad request target '" + excerpt(target) + "'");
      std::string_view rest = target.substr(scheme.size() + 3);
      size_t slash = rest.find_first_of("/?");
      path = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
      if (path.front() == '?') path = "/";
    }
  }
  head_.path = std::string(path.substr(0, path.find('?')));
  if (head_.path.empty()) head_.path = "/";
  request_line_done_ = true;
}

void RequestParser::finish_head() {
  const Headers& h = head_.headers;
  size_t hosts = h.count("Host");
  if (hosts > 1) return fail(400, "more than one Host header field");
  if (hosts == 0 && head_.minor_version == 1) return fail(400, "an HTTP/1.1 request without Host");

  std::optional<uint64_t> length;
  if (auto refusal = syntax::content_length(h, length))
    return fail(refusal->status, refusal->reason);
  if (h.count("Transfer-Encoding") > 0) {
    if (head_.minor_version == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (length) return fail(400, "both Transfer-Encoding and Content-Length");
    if (auto refusal = syntax::transfer_codings(h, head_.chunked))
      return fail(refusal->status, refusal->reason);
  } else if (length) {
    head_.content_length = *length;
  } else if (head_.method == "POST" || head_.method == "PUT" || head_.method == "PATCH") {
    // Without a length the body would run to the end of the connection, which a client that
    // waits for the answer never closes: refuse at once instead of waiting out the deadline.
    return fail(400, head_.method + " without Content-Length or chunked Transfer-Encoding");
  }
  head_.keep_alive = syntax::keep_alive(h, head_.minor_version);
  // Expect (RFC 9110 §10.1.1): only 100-continue exists; an HTTP/1.0 client's is ignored.
  if (auto expect = h.get("Expect"); expect && head_.minor_version == 1) {
    if (!equals_ignore_case(syntax::trim_ows(*expect), "100-continue") || h.count("Expect") > 1)
      return fail(417, "Expect '" + excerpt(*expect) + "' is not supported");
    head_.expect_continue = true;
  }
  state_ = State::routing;
}

void RequestParser::accept_body(uint64_t max_body) {
  if (state_ != State::routing) return;
  if (head_.chunked) {
    chunked_ = syntax::ChunkedDecoder(syntax::ChunkedLimits{max_body, limits_.max_trailer_bytes});
    state_ = State::body;
    return;
  }
  if (head_.content_length > max_body)
    return fail(413, "the body is " + std::to_string(head_.content_length) + " bytes; at most " +
                         std::to_string(max_body) + " are accepted");
  state_ = head_.content_length == 0 ? State::complete : State::body;
  body_.reserve(size_t(std::min<uint64_t>(head_.content_length, 1 << 20)));
}

size_t RequestParser::feed_chunked(std::string_view in) {
  size_t used = chunked_.feed(in, body_);
  if (chunked_.state() == syntax::ChunkedDecoder::State::failed)
    fail(chunked_.error().status, chunked_.error().reason);
  else if (chunked_.state() == syntax::ChunkedDecoder::State::complete)
    state_ = State::complete;
  return used;
}

}  // namespace idem::net
