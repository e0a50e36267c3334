#include "net/response_parser.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace idem::net {

using syntax::excerpt;
using syntax::is_digit;

ResponseParser::ResponseParser(bool head_request, ResponseLimits limits)
    : head_request_(head_request), limits_(limits) {}

void ResponseParser::fail(std::string reason) {
  state_ = State::failed;
  error_ = std::move(reason);
}

std::string ResponseParser::take_body() { return std::exchange(body_, std::string()); }

size_t ResponseParser::feed(std::string_view in) {
  size_t used = 0;
  while (used < in.size() && (state_ == State::head || state_ == State::body))
    used += state_ == State::head ? feed_head(in.substr(used)) : feed_body(in.substr(used));
  return used;
}

void ResponseParser::end_of_input() {
  if (state_ == State::body && head_.body == ResponseHead::Body::until_close) {
    state_ = State::complete;
  } else if (state_ == State::head) {
    fail(started_ ? "the connection closed inside the answer's head"
                  : "the connection closed before an answer");
  } else if (state_ == State::body) {
    fail("the connection closed inside the answer's body");
  }
}

size_t ResponseParser::feed_head(std::string_view in) {
  size_t used = 0;
  while (used < in.size() && state_ == State::head) {
    started_ = true;
    size_t before = used;
    size_t room = limits_.max_head_bytes > head_bytes_ ? limits_.max_head_bytes - head_bytes_ : 0;
    syntax::LineReader::Got got = line_.read(in, used, room);
    head_bytes_ += used - before;
    if (got == syntax::LineReader::Got::too_long)
      fail("the answer's head is longer than " + std::to_string(limits_.max_head_bytes) + " bytes");
    else if (got == syntax::LineReader::Got::bad_end)
      fail(line_.reason());
    if (got != syntax::LineReader::Got::done) break;
    head_line(line_.line());
    line_.clear();
  }
  return used;
}

void ResponseParser::head_line(std::string_view line) {
  if (!status_line_done_) {
    parse_status_line(line);
  } else if (line.empty()) {
    finish_head();
  } else if (syntax::is_ows(line.front())) {
    fail("obsolete line folding (a header line starts with whitespace)");
  } else if (head_.headers.fields().size() >= limits_.max_fields) {
    fail("more than " + std::to_string(limits_.max_fields) + " header fields");
  } else if (auto refusal = syntax::parse_field(line, head_.headers)) {
    fail(refusal->reason);
  }
}

void ResponseParser::parse_status_line(std::string_view line) {
  // HTTP-version SP 3DIGIT SP [reason-phrase] (RFC 9112 §4); the SP before an empty reason is
  // often left out, which is harmless.
  const std::string_view version = line.substr(0, 8);
  if (line.size() < 12 || version.substr(0, 5) != "HTTP/" || !is_digit(version[5]) ||
      version[6] != '.' || !is_digit(version[7]) || line[8] != ' ' || !is_digit(line[9]) ||
      !is_digit(line[10]) || !is_digit(line[11]) || (line.size() > 12 && line[12] != ' '))
    return fail("bad status line '" + excerpt(line) + "'");
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
    return fail("HTTP version " + std::string(version.substr(5)) + " is not supported");
  const int status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (status < 100 || status > 599) return fail("bad status code in '" + excerpt(line) + "'");
  std::string_view reason = line.size() > 12 ? line.substr(13) : std::string_view();
  if (syntax::has_control(reason)) return fail("a control character in the status line");
  head_.status = status;
  head_.minor_version = version[7] - '0';
  head_.reason = std::string(reason);
  status_line_done_ = true;
}

void ResponseParser::finish_head() {
  if (head_.status == 101)
    return fail("101 Switching Protocols: the upstream changed protocols, which is not supported");
  if (head_.status < 200) {
    // An interim answer (100 Continue, 103 Early Hints): the final one follows (RFC 9110 §15.2).
    if (++interim_ > limits_.max_interim)
      return fail("more than " + std::to_string(limits_.max_interim) + " interim answers");
    head_ = ResponseHead{};
    head_bytes_ = 0;
    status_line_done_ = false;
    return;
  }
  if (!framing()) return;
  head_.keep_alive = head_.body != ResponseHead::Body::until_close &&
                     syntax::keep_alive(head_.headers, head_.minor_version);
  state_ = head_.body == ResponseHead::Body::none ||
                   (head_.body == ResponseHead::Body::length && head_.content_length == 0)
               ? State::complete
               : State::body;
}

// The body's framing, RFC 9112 §6.3 in its order. False when it is refused.
bool ResponseParser::framing() {
  const Headers& h = head_.headers;
  if (head_request_ || head_.status == 204 || head_.status == 304) {
    head_.body = ResponseHead::Body::none;  // whatever the fields announce
    return true;
  }
  std::optional<uint64_t> length;
  if (auto refusal = syntax::content_length(h, length)) return fail(refusal->reason), false;
  if (h.count("Transfer-Encoding") > 0) {
    // A sender of both may mean either: §6.3 says to treat it as an error, and a proxy must.
    if (length) return fail("both Transfer-Encoding and Content-Length"), false;
    if (head_.minor_version == 0) return fail("Transfer-Encoding in an HTTP/1.0 answer"), false;
    bool chunked = false;
    if (auto refusal = syntax::transfer_codings(h, chunked)) return fail(refusal->reason), false;
    head_.body = ResponseHead::Body::chunked;
    chunked_ = syntax::ChunkedDecoder(syntax::ChunkedLimits{UINT64_MAX, limits_.max_trailer_bytes});
  } else if (length) {
    head_.body = ResponseHead::Body::length;
    head_.content_length = *length;
    body_left_ = *length;
  } else {
    head_.body = ResponseHead::Body::until_close;
  }
  return true;
}

size_t ResponseParser::feed_body(std::string_view in) {
  if (head_.body == ResponseHead::Body::chunked) {
    size_t used = chunked_.feed(in, body_);
    if (chunked_.state() == syntax::ChunkedDecoder::State::failed)
      fail(chunked_.error().reason);
    else if (chunked_.state() == syntax::ChunkedDecoder::State::complete)
      state_ = State::complete;
    return used;
  }
  size_t n = in.size();
  if (head_.body == ResponseHead::Body::length) {
    n = size_t(std::min<uint64_t>(n, body_left_));
    body_left_ -= n;
    if (body_left_ == 0) state_ = State::complete;
  }
  body_.append(in.data(), n);
  return n;
}

}  // namespace idem::net
