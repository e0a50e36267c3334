// The HTTP/1.1 request parser (net/request_parser.hpp) on arbitrary bytes. The first byte
// picks the body limit and how the rest is split into reads; the rest is a connection's input,
// parsed as pipelined requests until it fails or needs more. Properties:
// - any split of the input gives the same requests (or the same refusal) as one read;
// - every byte is used at most once, and the parser never stalls with input it could take;
// - a parsed request is sane: a token method, a path, header names that are tokens and values
//   without CR, LF or NUL, a body within the limit and (unchunked) exactly Content-Length long;
// - a parsed request, written out again with Content-Length framing, parses to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "net/request_parser.hpp"

using idem::net::RequestHead;
using idem::net::RequestParser;
using State = RequestParser::State;

namespace {

struct Outcome {
  std::vector<std::pair<RequestHead, std::string>> requests;
  int status = 0;  // the refusal's status, 0 when none
  size_t used = 0;
};

bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_tchar(c)) return false;
  return true;
}

void check_request(const RequestHead& h, const std::string& body, uint64_t max_body) {
  FUZZ_CHECK(is_token(h.method));
  FUZZ_CHECK(!h.path.empty() && (h.path[0] == '/' || h.path == "*"));
  FUZZ_CHECK(h.path.find('?') == std::string::npos);
  FUZZ_CHECK(h.minor_version == 0 || h.minor_version == 1);
  for (const auto& [name, value] : h.headers.fields()) {
    FUZZ_CHECK(is_token(name));
    FUZZ_CHECK(value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos);
    FUZZ_CHECK(value.empty() || (value.front() != ' ' && value.back() != ' '));
  }
  FUZZ_CHECK(body.size() <= max_body);
  if (!h.chunked) FUZZ_CHECK(body.size() == h.content_length);
  if (h.chunked) FUZZ_CHECK(h.headers.count("Content-Length") == 0);
}

// Parses `in`, handing it over in reads of the sizes `steps` cycles through (0: all at once).
Outcome parse(std::string_view in, uint64_t max_body, const std::vector<size_t>& steps) {
  Outcome out;
  RequestParser p;
  size_t pos = 0, read_end = 0, step = 0;
  for (int guard = 0; guard < 1000000; ++guard) {
    if (p.state() == State::routing) {
      p.accept_body(max_body);
      continue;
    }
    if (p.state() == State::failed) {
      out.status = p.error().status;
      break;
    }
    if (p.state() == State::complete) {
      RequestHead head = p.take_head();
      std::string body = p.take_body();
      out.requests.emplace_back(std::move(head), std::move(body));
      p.reset();
      continue;
    }
    if (pos == read_end) {  // all of this read used: the next one
      if (read_end == in.size()) break;
      size_t n = steps.empty() || steps[step % steps.size()] == 0 ? in.size() - read_end
                                                                  : steps[step % steps.size()];
      ++step;
      read_end = std::min(in.size(), read_end + n);
    }
    size_t used = p.feed(in.substr(pos, read_end - pos));
    FUZZ_CHECK(used <= read_end - pos);
    // In states head and body the parser takes what it is given until its state changes.
    FUZZ_CHECK(used > 0 || (p.state() != State::head && p.state() != State::body));
    pos += used;
  }
  out.used = pos;
  return out;
}

std::string serialize(const RequestHead& h, const std::string& body) {
  std::string s = h.method + " " + h.target + " HTTP/1." + std::to_string(h.minor_version) + "\r\n";
  for (const auto& [name, value] : h.headers.fields()) {
    if (idem::net::equals_ignore_case(name, "Content-Length") ||
        idem::net::equals_ignore_case(name, "Transfer-Encoding"))
      continue;
    s += name + ": " + value + "\r\n";
  }
  s += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr uint64_t k_limits[4] = {0, 16, 1024, 1 << 20};
  const uint64_t max_body = k_limits[data[0] & 3];
  std::vector<size_t> steps{size_t(1 + ((data[0] >> 2) & 7)), 1, size_t(1 + (data[0] >> 5))};
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);

  Outcome whole = parse(in, max_body, {});
  Outcome split = parse(in, max_body, steps);
  FUZZ_CHECK(whole.status == split.status);
  FUZZ_CHECK(whole.requests.size() == split.requests.size());
  if (whole.status == 0) FUZZ_CHECK(whole.used == split.used);
  for (size_t i = 0; i < whole.requests.size(); ++i) {
    const auto& [head, body] = whole.requests[i];
    check_request(head, body, max_body);
    FUZZ_CHECK(head.method == split.requests[i].first.method);
    FUZZ_CHECK(head.target == split.requests[i].first.target);
    FUZZ_CHECK(head.headers.fields() == split.requests[i].first.headers.fields());
    FUZZ_CHECK(body == split.requests[i].second);

    Outcome again = parse(serialize(head, body), max_body, {});
    // A chunked request written out with a length may now need one it had not (a GET with an
    // empty body is fine either way); it must still come out the same.
    if (again.requests.size() != 1) continue;
    const auto& [head2, body2] = again.requests[0];
    FUZZ_CHECK(head2.method == head.method && head2.target == head.target &&
               head2.path == head.path && head2.minor_version == head.minor_version);
    FUZZ_CHECK(body2 == body);
  }
  return 0;
}
