#include "http/request_parser.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace idem::http {

namespace {

constexpr size_t k_max_chunk_line = 1024;  // chunk size plus extensions
constexpr uint64_t k_too_big = std::numeric_limits<uint64_t>::max();

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// RFC 9110 tchar: the characters of a method, a header name or a token.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}
bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// The elements of a comma-separated field value, trimmed (RFC 9110 §5.6.1); empty ones kept so
// that the caller can refuse them.
std::vector<std::string_view> list_elements(std::string_view value) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t comma = value.find(',');
    out.push_back(trim_ows(value.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    value.remove_prefix(comma + 1);
  }
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

// A printable excerpt of client input for an error message.
std::string excerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (s.size() > 40) out += "...";
  return out;
}

}  // namespace

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::optional<std::string_view> Headers::get(std::string_view name) const {
  for (const auto& [n, v] : fields_)
    if (equals_ignore_case(n, name)) return std::string_view(v);
  return std::nullopt;
}

size_t Headers::count(std::string_view name) const {
  return size_t(std::count_if(fields_.begin(), fields_.end(),
                              [&](const auto& f) { return equals_ignore_case(f.first, name); }));
}

void RequestParser::fail(int status, std::string reason) {
  state_ = State::failed;
  error_ = ParseError{status, std::move(reason)};
}

void RequestParser::reset() {
  state_ = State::head;
  error_ = ParseError{};
  head_ = RequestHead{};
  body_.clear();
  line_.clear();
  head_bytes_ = 0;
  started_ = false;
  request_line_done_ = false;
  max_body_ = 0;
  chunk_ = Chunk::size_line;
  chunk_left_ = 0;
  trailer_bytes_ = 0;
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

// Collects one CRLF-terminated line into line_ (without the CRLF). A bare LF or CR, or a line
// longer than `max_bytes`, fails the request: leniency about line ends is how two parsers come
// to disagree on where a message ends.
// `room` is how many more bytes (CRLF included) the line may take.
RequestParser::Line RequestParser::read_line(std::string_view in, size_t& used, size_t room,
                                             int too_long_status, const char* what, size_t limit) {
  const char* start = in.data() + used;
  const void* nl = std::memchr(start, '\n', in.size() - used);
  size_t take = nl != nullptr ? size_t(static_cast<const char*>(nl) - start) + 1 : in.size() - used;
  if (take > room) {
    fail(too_long_status,
         limit == 0 ? std::string(what)
                    : std::string(what) + " is longer than " + std::to_string(limit) + " bytes");
    return Line::failed;
  }
  used += take;
  if (nl == nullptr) {
    line_.append(start, take);
    return Line::partial;
  }
  line_.append(start, take - 1);
  if (line_.empty() || line_.back() != '\r') {
    fail(400, "a line ends with a bare LF instead of CRLF");
    return Line::failed;
  }
  line_.pop_back();
  if (line_.find('\r') != std::string::npos) {
    fail(400, "a bare CR inside a line");
    return Line::failed;
  }
  return Line::done;
}

size_t RequestParser::feed_head(std::string_view in) {
  size_t used = 0;
  while (used < in.size() && state_ == State::head) {
    started_ = true;
    size_t before = used;
    size_t room = limits_.max_head_bytes > head_bytes_ ? limits_.max_head_bytes - head_bytes_ : 0;
    Line got = read_line(in, used, room, request_line_done_ ? 431 : 414,
                         request_line_done_ ? "the request head" : "the request line",
                         limits_.max_head_bytes);
    head_bytes_ += used - before;
    if (got != Line::done) break;
    const std::string_view line = line_;
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
    } else {
      parse_field(line, head_.headers);
    }
    line_.clear();
  }
  return used;
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
  if (!is_token(method)) return fail(400, "bad method in request line '" + excerpt(line) + "'");
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

void RequestParser::parse_field(std::string_view line, Headers& into) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos)
    return fail(400, "header line without a colon: '" + excerpt(line) + "'");
  std::string_view name = line.substr(0, colon);
  if (!name.empty() && is_ows(name.back()))
    return fail(400, "whitespace before the colon in header '" + excerpt(name) + "'");
  if (!is_token(name)) return fail(400, "bad header name '" + excerpt(name) + "'");
  std::string_view value = trim_ows(line.substr(colon + 1));
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f)
      return fail(400, "a control character in the value of header " + std::string(name));
  }
  into.add(std::string(name), std::string(value));
}

void RequestParser::finish_head() {
  const Headers& h = head_.headers;
  size_t hosts = h.count("Host");
  if (hosts > 1) return fail(400, "more than one Host header field");
  if (hosts == 0 && head_.minor_version == 1) return fail(400, "an HTTP/1.1 request without Host");

  // Content-Length: every element of every field a number, all the same (RFC 9110 §8.6). Equal
  // repeats are accepted, as that section allows; the body is then the same either way.
  std::optional<uint64_t> length;
  for (const auto& [name, value] : h.fields()) {
    if (!equals_ignore_case(name, "Content-Length")) continue;
    for (std::string_view e : list_elements(value)) {
      if (e.empty() || !std::all_of(e.begin(), e.end(), is_digit))
        return fail(400, "Content-Length '" + excerpt(value) + "' is not a number of bytes");
      uint64_t n = 0;
      for (char c : e) n = n > (k_too_big - 9) / 10 ? k_too_big : n * 10 + uint64_t(c - '0');
      if (length && *length != n) return fail(400, "two different Content-Length values");
      length = n;
    }
  }
  bool has_te = h.count("Transfer-Encoding") > 0;
  if (has_te) {
    if (head_.minor_version == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (length) return fail(400, "both Transfer-Encoding and Content-Length");
    std::vector<std::string> codings;
    for (const auto& [name, value] : h.fields())
      if (equals_ignore_case(name, "Transfer-Encoding"))
        for (std::string_view e : list_elements(value)) codings.push_back(lowered(e));
    if (codings.back() != "chunked")
      return fail(400, "Transfer-Encoding does not end with chunked, so the body has no end");
    if (std::count(codings.begin(), codings.end(), "chunked") > 1)
      return fail(400, "Transfer-Encoding applies chunked twice");
    if (codings.size() > 1)
      return fail(501, "transfer coding '" + excerpt(codings.front()) + "' is not supported");
    head_.chunked = true;
  } else if (length) {
    head_.content_length = *length;
  } else if (head_.method == "POST" || head_.method == "PUT" || head_.method == "PATCH") {
    // Without a length the body would run to the end of the connection, which a client that
    // waits for the answer never closes: refuse at once instead of waiting out the deadline.
    return fail(400, head_.method + " without Content-Length or chunked Transfer-Encoding");
  }

  head_.keep_alive = head_.minor_version == 1;
  for (const auto& [name, value] : h.fields()) {
    if (!equals_ignore_case(name, "Connection")) continue;
    for (std::string_view e : list_elements(value)) {
      if (equals_ignore_case(e, "close"))
        head_.keep_alive = false;
      else if (equals_ignore_case(e, "keep-alive") && head_.minor_version == 0)
        head_.keep_alive = true;
    }
  }
  // Expect (RFC 9110 §10.1.1): only 100-continue exists; an HTTP/1.0 client's is ignored.
  if (auto expect = h.get("Expect"); expect && head_.minor_version == 1) {
    if (!equals_ignore_case(trim_ows(*expect), "100-continue") || h.count("Expect") > 1)
      return fail(417, "Expect '" + excerpt(*expect) + "' is not supported");
    head_.expect_continue = true;
  }
  state_ = State::routing;
}

void RequestParser::accept_body(uint64_t max_body) {
  if (state_ != State::routing) return;
  max_body_ = max_body;
  if (head_.chunked) {
    state_ = State::body;
    return;
  }
  if (head_.content_length > max_body)
    return fail(413, "the body is " + std::to_string(head_.content_length) + " bytes; at most " +
                         std::to_string(max_body) + " are accepted");
  state_ = head_.content_length == 0 ? State::complete : State::body;
  body_.reserve(size_t(std::min<uint64_t>(head_.content_length, 1 << 20)));
}

void RequestParser::parse_chunk_size(std::string_view line) {
  size_t digits = 0;
  uint64_t size = 0;
  for (; digits < line.size(); ++digits) {
    char c = lower(line[digits]);
    int v = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) break;
    size = size > (k_too_big >> 4) ? k_too_big : size << 4 | uint64_t(v);
  }
  std::string_view rest = line.substr(digits);
  std::string_view ext = trim_ows(rest);
  if (digits == 0 || (!ext.empty() && ext.front() != ';'))
    return fail(400, "bad chunk size line '" + excerpt(line) + "'");
  for (char c : ext) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f)
      return fail(400, "a control character in a chunk extension");
  }
  if (size == 0) {
    chunk_ = Chunk::trailer;
    return;
  }
  if (size > max_body_ - body_.size())
    return fail(413, "the chunked body grows past " + std::to_string(max_body_) + " bytes");
  chunk_left_ = size;
  chunk_ = Chunk::data;
}

size_t RequestParser::feed_chunked(std::string_view in) {
  size_t used = 0;
  while (used < in.size() && state_ == State::body) {
    if (chunk_ == Chunk::data) {
      size_t n = size_t(std::min<uint64_t>(in.size() - used, chunk_left_));
      body_.append(in.data() + used, n);
      used += n;
      chunk_left_ -= n;
      if (chunk_left_ == 0) chunk_ = Chunk::data_crlf;
      continue;
    }
    size_t before = used;
    auto left = [&](size_t limit, size_t had) { return limit > had ? limit - had : 0; };
    Line got = chunk_ == Chunk::trailer
                   ? read_line(in, used, left(limits_.max_trailer_bytes, trailer_bytes_), 431,
                               "the trailer section", limits_.max_trailer_bytes)
               : chunk_ == Chunk::data_crlf
                   ? read_line(in, used, left(2, line_.size()), 400,
                               "a chunk holds more data than its size line says", 0)
                   : read_line(in, used, left(k_max_chunk_line + 2, line_.size()), 400,
                               "a chunk size line", k_max_chunk_line);
    if (chunk_ == Chunk::trailer) trailer_bytes_ += used - before;
    if (got != Line::done) break;
    const std::string line = std::move(line_);
    line_.clear();
    switch (chunk_) {
      case Chunk::size_line:
        parse_chunk_size(line);
        break;
      case Chunk::data_crlf:
        chunk_ = Chunk::size_line;  // read_line refused anything but CRLF
        break;
      case Chunk::trailer: {
        if (line.empty()) {
          state_ = State::complete;
          break;
        }
        // Trailer fields are checked like header fields, then dropped: nothing reads them.
        if (is_ows(line.front())) return fail(400, "obsolete line folding in the trailer"), used;
        Headers ignored;
        parse_field(line, ignored);
        break;
      }
      case Chunk::data:
        break;
    }
  }
  return used;
}

}  // namespace idem::http
