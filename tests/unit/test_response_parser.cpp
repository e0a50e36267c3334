// The HTTP/1.1 response parser (net/response_parser.hpp): the status line, header fields,
// interim answers, and each body framing of RFC 9112 §6.3. Every answer is parsed twice, in one
// piece and a byte at a time, and must come out the same.
#include <catch2/catch.hpp>
#include <string>

#include "net/response_parser.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_response_parser {

using idem::net::ResponseHead;
using idem::net::ResponseLimits;
using idem::net::ResponseParser;
using State = ResponseParser::State;
using Body = ResponseHead::Body;

namespace {

struct Parsed {
  State state = State::head;
  std::string error;
  ResponseHead head;
  std::string body;
  size_t used = 0;
  size_t pieces = 0;  // non-empty pieces handed out
};

// Feeds `text` in pieces of `step` bytes (0: all at once), taking the body after each feed;
// `closed`: the connection ends after `text`.
Parsed run(const std::string& text, size_t step, bool head_request, bool closed,
           ResponseLimits limits) {
  ResponseParser p(head_request, limits);
  Parsed out;
  size_t pos = 0;
  while (pos < text.size() && (p.state() == State::head || p.state() == State::body)) {
    size_t n = step == 0 ? text.size() - pos : std::min(step, text.size() - pos);
    size_t used = p.feed(std::string_view(text).substr(pos, n));
    pos += used;
    std::string piece = p.take_body();
    out.pieces += piece.empty() ? 0 : 1;
    out.body += piece;
    if (used < n) break;
  }
  if (closed && pos == text.size()) p.end_of_input();
  out.body += p.take_body();
  out.state = p.state();
  out.error = p.error();
  out.head = p.head();
  out.used = pos;
  return out;
}

Parsed parse(const std::string& text, bool head_request = false, bool closed = false,
             ResponseLimits limits = {}) {
  Parsed whole = run(text, 0, head_request, closed, limits);
  Parsed bytes = run(text, 1, head_request, closed, limits);
  CHECK(int(whole.state) == int(bytes.state));
  CHECK(whole.body == bytes.body);
  CHECK(whole.head.status == bytes.head.status);
  if (whole.state != State::failed) CHECK(whole.used == bytes.used);
  return whole;
}

void check_refused(const std::string& text, const std::string& reason_part) {
  Parsed p = parse(text, false, true);
  CHECK(p.state == State::failed);
  CHECK_THAT(p.error, Catch::Contains(reason_part));
}

}  // namespace

TEST_CASE("response parser: a Content-Length body, and the bytes after it are not used",
          "[response_parser]") {
  Parsed p = parse("HTTP/1.1 201 Created\r\nContent-Length: 5\r\nLocation: /o/1\r\n\r\nhelloEXTRA");
  REQUIRE(p.state == State::complete);
  CHECK(p.head.status == 201);
  CHECK(p.head.reason == "Created");
  CHECK(p.head.body == Body::length);
  CHECK(p.head.keep_alive);
  CHECK(p.body == "hello");
  CHECK(p.used ==
        std::string("HTTP/1.1 201 Created\r\nContent-Length: 5\r\nLocation: /o/1\r\n\r\n").size() +
            5);
  CHECK(p.head.headers.get("location") == std::string_view("/o/1"));
}

TEST_CASE("response parser: the status line", "[response_parser]") {
  CHECK(parse("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n").state == State::complete);
  CHECK(parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").head.minor_version == 0);
  check_refused("HTTP/1.1 20 OK\r\n\r\n", "bad status line");
  check_refused("HTTP/1.1 2000 OK\r\n\r\n", "bad status line");
  check_refused("HTTP/1.1  200 OK\r\n\r\n", "bad status line");
  check_refused("http/1.1 200 OK\r\n\r\n", "bad status line");
  check_refused("ICY 200 OK\r\n\r\n", "bad status line");
  check_refused("HTTP/2.0 200 OK\r\n\r\n", "not supported");
  check_refused("HTTP/1.1 600 Odd\r\n\r\n", "bad status code");
  check_refused("HTTP/1.1 099 Odd\r\n\r\n", "bad status code");
  check_refused(std::string("HTTP/1.1 200 O\x01K\r\n\r\n"), "control character");
  check_refused("HTTP/1.1 200 OK\n\r\n", "bare LF");
}

TEST_CASE("response parser: header fields are checked and bounded", "[response_parser]") {
  check_refused("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n",
                "obsolete line folding");
  check_refused("HTTP/1.1 200 OK\r\nX-A : 1\r\n\r\n", "whitespace before the colon");
  check_refused("HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "without a colon");
  check_refused("HTTP/1.1 200 OK\r\nX-A: a\x7f\r\n\r\n", "control character");
  ResponseLimits small;
  small.max_head_bytes = 64;
  small.max_fields = 2;
  Parsed big =
      parse("HTTP/1.1 200 OK\r\nX-A: " + std::string(100, 'a') + "\r\n\r\n", false, true, small);
  CHECK(big.state == State::failed);
  CHECK_THAT(big.error, Catch::Contains("longer than 64 bytes"));
  Parsed many = parse("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", false, true, small);
  CHECK(many.state == State::failed);
  CHECK_THAT(many.error, Catch::Contains("more than 2 header fields"));
}

TEST_CASE("response parser: interim answers are skipped; 101 is refused", "[response_parser]") {
  Parsed p = parse(
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  REQUIRE(p.state == State::complete);
  CHECK(p.head.status == 200);
  CHECK(p.head.headers.fields().size() == 1);  // the 103's Link is not the answer's
  CHECK(p.body == "ok");
  check_refused("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", "101");
  ResponseLimits limits;
  limits.max_interim = 2;
  std::string three;
  for (int i = 0; i < 3; ++i) three += "HTTP/1.1 100 Continue\r\n\r\n";
  Parsed endless = parse(three + "HTTP/1.1 200 OK\r\n\r\n", false, true, limits);
  CHECK(endless.state == State::failed);
  CHECK_THAT(endless.error, Catch::Contains("interim"));
}

TEST_CASE("response parser: no body for HEAD, 204 and 304, whatever they announce",
          "[response_parser]") {
  Parsed head = parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", true);
  CHECK(head.state == State::complete);
  CHECK(head.head.body == Body::none);
  CHECK(head.body.empty());
  Parsed chunked_head = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true);
  CHECK(chunked_head.state == State::complete);
  for (const char* status : {"204 No Content", "304 Not Modified"}) {
    Parsed p = parse(std::string("HTTP/1.1 ") + status + "\r\nContent-Length: 3\r\n\r\nabc");
    CHECK(p.state == State::complete);
    CHECK(p.body.empty());
    CHECK(p.head.keep_alive);
  }
}

TEST_CASE("response parser: a chunked body, extensions checked and trailers dropped",
          "[response_parser]") {
  Parsed p = parse(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n1A\r\n" +
      std::string(26, 'x') + "\r\n0\r\nX-Trailer: t\r\n\r\nNEXT");
  REQUIRE(p.state == State::complete);
  CHECK(p.head.body == Body::chunked);
  CHECK(p.body == "hello" + std::string(26, 'x'));
  CHECK(p.head.headers.get("X-Trailer") == std::nullopt);
  CHECK(p.head.keep_alive);
  check_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size");
  check_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
                "more data than its size line");
  check_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Name: x\r\n\r\n",
                "bad header name");
  check_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "not supported");
  check_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", "twice");
  check_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "does not end with chunked");
  check_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                "both");
  check_refused("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.0");
}

TEST_CASE("response parser: Content-Length values", "[response_parser]") {
  Parsed same = parse("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nab");
  CHECK(same.state == State::complete);
  CHECK(same.body == "ab");
  check_refused("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
                "two different Content-Length");
  check_refused("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "not a number");
  check_refused("HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", "not a number");
}

TEST_CASE("response parser: without a length the body runs to the close", "[response_parser]") {
  Parsed open = parse("HTTP/1.1 200 OK\r\n\r\nsome body", false, false);
  CHECK(open.state == State::body);
  CHECK(open.body == "some body");
  CHECK_FALSE(open.head.keep_alive);
  Parsed closed = parse("HTTP/1.1 200 OK\r\n\r\nsome body", false, true);
  CHECK(closed.state == State::complete);
  CHECK(closed.head.body == Body::until_close);
  CHECK(closed.body == "some body");
}

TEST_CASE("response parser: an answer cut off by the close fails", "[response_parser]") {
  Parsed body = parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", false, true);
  CHECK(body.state == State::failed);
  CHECK_THAT(body.error, Catch::Contains("inside the answer's body"));
  Parsed chunk = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", false, true);
  CHECK(chunk.state == State::failed);
  Parsed head = parse("HTTP/1.1 200 OK\r\nContent-", false, true);
  CHECK_THAT(head.error, Catch::Contains("inside the answer's head"));
  Parsed nothing = parse("", false, true);
  CHECK_THAT(nothing.error, Catch::Contains("before an answer"));
}

TEST_CASE("response parser: Connection decides whether the connection is kept",
          "[response_parser]") {
  CHECK_FALSE(
      parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").head.keep_alive);
  CHECK_FALSE(parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").head.keep_alive);
  CHECK(parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n")
            .head.keep_alive);
}

TEST_CASE("response parser: a large body is handed out in pieces as it is parsed",
          "[response_parser]") {
  const std::string body(1 << 20, 'b');
  Parsed p =
      run("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
          4096, false, false, {});
  REQUIRE(p.state == State::complete);
  CHECK(p.body == body);
  CHECK(p.pieces >= body.size() / 4096);
}

}  // namespace unit_response_parser
