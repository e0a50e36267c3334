// The HTTP/1.1 response parser (net/response_parser.hpp) on arbitrary bytes. The first byte
// says whether the answer is to a HEAD request, whether the connection ends after the input, and
// how the rest is split into reads. Properties:
// - any split of the input gives the same head, body and outcome as one read;
// - every byte is used at most once, and the parser never stalls with input it could take;
// - a parsed answer is sane: a final status (200..599), header names that are tokens and values
//   without CR, LF or NUL, no body where none may be, and a Content-Length body exactly that long;
// - a complete answer, written out again with Content-Length framing, parses to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "net/response_parser.hpp"

using idem::net::ResponseHead;
using idem::net::ResponseParser;
using State = ResponseParser::State;

namespace {

struct Outcome {
  State state = State::head;
  ResponseHead head;
  std::string body;
  size_t used = 0;
};

// Parses `in` in reads of the sizes `steps` cycles through (empty: all at once).
Outcome parse(std::string_view in, bool head_request, bool closed, const std::vector<size_t>& steps,
              idem::net::ResponseLimits limits = {}) {
  Outcome out;
  ResponseParser p(head_request, limits);
  size_t pos = 0, step = 0;
  while (pos < in.size() && (p.state() == State::head || p.state() == State::body)) {
    size_t n =
        steps.empty() ? in.size() - pos : std::min(in.size() - pos, steps[step++ % steps.size()]);
    size_t used = p.feed(in.substr(pos, n));
    FUZZ_CHECK(used <= n);
    // In states head and body the parser takes what it is given until its state changes.
    FUZZ_CHECK(used == n || (p.state() != State::head && p.state() != State::body));
    pos += used;
    out.body += p.take_body();
    if (used < n) break;
  }
  if (closed && pos == in.size()) p.end_of_input();
  out.body += p.take_body();
  FUZZ_CHECK(p.take_body().empty());
  out.state = p.state();
  out.head = p.head();
  out.used = pos;
  return out;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos))
      return false;
  return true;
}

void check_answer(const Outcome& o, bool head_request) {
  const ResponseHead& h = o.head;
  FUZZ_CHECK(h.status >= 200 && h.status <= 599);
  FUZZ_CHECK(h.minor_version == 0 || h.minor_version == 1);
  for (const auto& [name, value] : h.headers.fields()) {
    FUZZ_CHECK(is_token(name));
    FUZZ_CHECK(value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos);
  }
  if (head_request || h.status == 204 || h.status == 304) {
    FUZZ_CHECK(h.body == ResponseHead::Body::none);
    FUZZ_CHECK(o.body.empty());
  }
  if (h.body == ResponseHead::Body::length && o.state == State::complete)
    FUZZ_CHECK(o.body.size() == h.content_length);
  if (h.body == ResponseHead::Body::until_close) FUZZ_CHECK(!h.keep_alive);
}

std::string serialize(const ResponseHead& h, const std::string& body) {
  std::string s = "HTTP/1." + std::to_string(h.minor_version) + " " + std::to_string(h.status) +
                  (h.reason.empty() ? "" : " " + h.reason) + "\r\n";
  for (const auto& [name, value] : h.headers.fields()) {
    if (idem::net::equals_ignore_case(name, "Content-Length") ||
        idem::net::equals_ignore_case(name, "Transfer-Encoding"))
      continue;
    s += name + ": " + value + "\r\n";
  }
  return s + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool head_request = (data[0] & 1) != 0;
  const bool closed = (data[0] & 2) != 0;
  std::vector<size_t> steps{size_t(1 + ((data[0] >> 2) & 7)), 1, size_t(1 + (data[0] >> 5))};
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);

  Outcome whole = parse(in, head_request, closed, {});
  Outcome split = parse(in, head_request, closed, steps);
  FUZZ_CHECK(whole.state == split.state);
  FUZZ_CHECK(whole.body == split.body);
  if (whole.state != State::failed) FUZZ_CHECK(whole.used == split.used);
  if (whole.state != State::body && whole.state != State::complete) return 0;
  FUZZ_CHECK(whole.head.status == split.head.status);
  FUZZ_CHECK(whole.head.headers.fields() == split.head.headers.fields());
  check_answer(whole, head_request);
  if (whole.state != State::complete) return 0;

  // Written out again it has one field more (Content-Length) and its head may grow: room for it.
  idem::net::ResponseLimits roomier;
  roomier.max_fields += 1;
  roomier.max_head_bytes += 64;
  Outcome again = parse(serialize(whole.head, whole.body), head_request, false, {}, roomier);
  FUZZ_CHECK(again.state == State::complete);
  FUZZ_CHECK(again.head.status == whole.head.status);
  FUZZ_CHECK(again.body == whole.body);
  return 0;
}
