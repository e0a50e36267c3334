// The HTTP/1.1 request parser (net/request_parser.hpp): framing, strictness, limits. Every
// request is parsed twice, in one piece and a byte at a time, and must come out the same.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "net/request_parser.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_request_parser {

using idem::net::ParserLimits;
using idem::net::RequestParser;
using State = RequestParser::State;

namespace {

struct Parsed {
  State state = State::head;
  int status = 0;  // the error's status when failed
  std::string reason;
  idem::net::RequestHead head;
  std::string body;
  size_t used = 0;  // bytes consumed in all
};

// Feeds `text` in pieces of `step` bytes (0: all at once), accepting bodies up to `max_body`.
Parsed run(const std::string& text, uint64_t max_body, size_t step, ParserLimits limits = {}) {
  RequestParser p(limits);
  Parsed out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t n = step == 0 ? text.size() - pos : std::min(step, text.size() - pos);
    size_t used = p.feed(std::string_view(text).substr(pos, n));
    pos += used;
    out.used += used;
    if (p.state() == State::routing) {
      p.accept_body(max_body);
      continue;
    }
    if (p.state() == State::complete || p.state() == State::failed) break;
    if (used == 0 && n == 0) break;  // all fed, more is needed
  }
  out.state = p.state();
  if (p.state() == State::failed) {
    out.status = p.error().status;
    out.reason = p.error().reason;
  }
  out.head = p.head();
  out.body = p.body();
  return out;
}

// Parses both ways and checks they agree.
Parsed parse(const std::string& text, uint64_t max_body = 1 << 20, ParserLimits limits = {}) {
  Parsed whole = run(text, max_body, 0, limits);
  Parsed bytes = run(text, max_body, 1, limits);
  CHECK(int(whole.state) == int(bytes.state));
  CHECK(whole.status == bytes.status);
  CHECK(whole.body == bytes.body);
  if (whole.state != State::failed) CHECK(whole.used == bytes.used);  // a failure ends the input
  return whole;
}

void refused(const std::string& text, int status, const std::string& reason_has = "") {
  INFO(text);
  Parsed p = parse(text);
  REQUIRE(p.state == State::failed);
  CHECK(p.status == status);
  if (!reason_has.empty()) CHECK_THAT(p.reason, Catch::Contains(reason_has));
}

}  // namespace

TEST_CASE("request parser: a POST with Content-Length", "[request_parser]") {
  Parsed p = parse(
      "POST /hooks/x?a=1 HTTP/1.1\r\nHost: t\r\nX-Key:  k 1 \r\nContent-Length: 5\r\n\r\nhello");
  REQUIRE(p.state == State::complete);
  CHECK(p.head.method == "POST");
  CHECK(p.head.target == "/hooks/x?a=1");
  CHECK(p.head.path == "/hooks/x");
  CHECK(p.head.minor_version == 1);
  CHECK(p.head.keep_alive);
  CHECK_FALSE(p.head.chunked);
  CHECK(p.head.content_length == 5);
  CHECK(p.body == "hello");
  CHECK(p.head.headers.get("x-key") == std::string_view("k 1"));  // OWS trimmed, inner kept
  CHECK(p.head.headers.get("HOST") == std::string_view("t"));
  CHECK_FALSE(p.head.headers.get("X-Other"));
}

TEST_CASE("request parser: the body is raw bytes whatever the content type", "[request_parser]") {
  std::string body = "payload=" + std::string(100 * 1024, '%') + std::string("\0\r\n\xff", 4);
  Parsed p = parse(
      "POST /f HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  REQUIRE(p.state == State::complete);
  CHECK(p.body == body);
}

TEST_CASE("request parser: pipelined requests are consumed one at a time", "[request_parser]") {
  std::string first = "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\none";
  std::string second = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
  std::string all = first + second;
  RequestParser p;
  size_t used = p.feed(all);
  REQUIRE(p.state() == State::routing);
  p.accept_body(100);
  used += p.feed(std::string_view(all).substr(used));
  REQUIRE(p.state() == State::complete);
  CHECK(used == first.size());  // nothing of the next request was taken
  CHECK(p.body() == "one");
  p.reset();
  used += p.feed(std::string_view(all).substr(used));
  REQUIRE(p.state() == State::routing);
  CHECK(p.head().path == "/healthz");
  p.accept_body(100);
  CHECK(p.state() == State::complete);
  CHECK(used == all.size());
}

TEST_CASE("request parser: chunked bodies", "[request_parser]") {
  Parsed p = parse(
      "POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1;ext=1\r\n,\r\n0A\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n");
  REQUIRE(p.state == State::complete);
  CHECK(p.head.chunked);
  CHECK(p.body == "hello,0123456789");
  CHECK(parse("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n").state ==
        State::complete);
  refused("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
          "chunk size");
  refused("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n", 400,
          "more data");
  refused("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "gzip");
  refused("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400);
  refused("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\n", 400);
  refused("POST /c HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "HTTP/1.0");
  // A chunk size past any limit is refused, never wrapped around.
  Parsed huge = parse(
      "POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "ffffffffffffffffffff\r\n");
  CHECK(huge.state == State::failed);
  CHECK(huge.status == 413);
}

TEST_CASE("request parser: body limits", "[request_parser]") {
  std::string head = "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 65\r\n\r\n";
  // An announced length over the limit fails before any of the body is read.
  RequestParser p;
  size_t used = p.feed(head + std::string(65, 'a'));
  REQUIRE(p.state() == State::routing);
  p.accept_body(64);
  CHECK(p.state() == State::failed);
  CHECK(p.error().status == 413);
  CHECK(used == head.size());
  CHECK(parse(head + std::string(65, 'a'), 65).state == State::complete);
  Parsed chunked = parse(
      "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "40\r\n" +
          std::string(64, 'a') + "\r\n1\r\nb\r\n0\r\n\r\n",
      64);
  CHECK(chunked.state == State::failed);
  CHECK(chunked.status == 413);
  // A Content-Length too large for 64 bits is a (very) large body, not a wrapped small one.
  Parsed big =
      parse("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n");
  CHECK(big.state == State::failed);
  CHECK(big.status == 413);
}

TEST_CASE("request parser: Content-Length must be one unambiguous number", "[request_parser]") {
  refused("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400,
          "two different Content-Length");
  refused("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 4\r\n\r\nabcd", 400, "two different");
  refused("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", 400, "not a number");
  refused("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: +3\r\n\r\nabc", 400, "not a number");
  refused("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 0x10\r\n\r\n", 400, "not a number");
  refused("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3 3\r\n\r\nabc", 400, "not a number");
  refused("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length:\r\n\r\n", 400, "not a number");
  refused("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
          400, "both Transfer-Encoding and Content-Length");
  refused("POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
          400, "both");
  // Identical repeats are accepted (RFC 9110 §8.6): the body is the same either way.
  Parsed same =
      parse("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc");
  CHECK(same.state == State::complete);
  CHECK(same.body == "abc");
  CHECK(parse("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 3\r\n\r\nabc").state ==
        State::complete);
}

TEST_CASE("request parser: a body-carrying method needs a length", "[request_parser]") {
  refused("POST /x HTTP/1.0\r\n\r\n", 400, "without Content-Length");
  refused("POST /x HTTP/1.1\r\nHost: t\r\n\r\n", 400, "without Content-Length");
  refused("PUT /x HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  refused("PATCH /x HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  // Other methods simply have no body.
  Parsed get = parse("GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  CHECK(get.state == State::complete);
  CHECK(get.body.empty());
  CHECK(parse("DELETE /x HTTP/1.1\r\nHost: t\r\n\r\n").state == State::complete);
}

TEST_CASE("request parser: header lines", "[request_parser]") {
  refused("GET / HTTP/1.1\r\nHost: t\r\nNo colon here\r\n\r\n", 400, "without a colon");
  refused("GET / HTTP/1.1\r\nHost: t\r\nX-A : 1\r\n\r\n", 400, "whitespace before the colon");
  refused("GET / HTTP/1.1\r\nHost: t\r\nX-A\t: 1\r\n\r\n", 400, "whitespace before the colon");
  refused("GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n continued\r\n\r\n", 400, "folding");
  refused("GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\tcontinued\r\n\r\n", 400, "folding");
  refused("GET / HTTP/1.1\r\nHost: t\r\n: empty name\r\n\r\n", 400, "bad header name");
  refused("GET / HTTP/1.1\r\nHost: t\r\nX(A): 1\r\n\r\n", 400, "bad header name");
  refused(std::string("GET / HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n", 38), 400,
          "control character");
  refused("GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\n\r\n", 400, "bare LF");
  refused("GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\rX-B: 2\r\n\r\n", 400, "bare CR");
  refused("GET / HTTP/1.1\r\n\r\n", 400, "without Host");
  refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host");
  // HTTP/1.0 needs no Host; obs-text (bytes >= 0x80) is kept as it is.
  Parsed p = parse("GET / HTTP/1.0\r\nX-A: caf\xc3\xa9\r\nX-Empty:\r\n\r\n");
  REQUIRE(p.state == State::complete);
  CHECK(p.head.headers.get("X-A") == std::string_view("caf\xc3\xa9"));
  CHECK(p.head.headers.get("X-Empty") == std::string_view(""));
  CHECK_FALSE(p.head.keep_alive);
  // Repeated fields are all kept, in order.
  Parsed r = parse("GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\nx-a: 2\r\n\r\n");
  REQUIRE(r.head.headers.fields().size() == 3);
  CHECK(r.head.headers.count("X-A") == 2);
  CHECK(r.head.headers.fields()[2].first == "x-a");
}

TEST_CASE("request parser: the request line", "[request_parser]") {
  refused("GARBAGE\r\n\r\n", 400, "bad request line");
  refused("NOT HTTP AT ALL\r\n\r\n", 400);
  refused("GET  / HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  refused("GET / HTTP/1.1 \r\nHost: t\r\n\r\n", 400);
  refused("GET /a b HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  refused("G(T / HTTP/1.1\r\nHost: t\r\n\r\n", 400, "bad method");
  refused("GET hooks HTTP/1.1\r\nHost: t\r\n\r\n", 400, "bad request target");
  refused("GET / HTTP/1.1x\r\nHost: t\r\n\r\n", 400, "bad HTTP version");
  refused("GET / http/1.1\r\nHost: t\r\n\r\n", 400, "bad HTTP version");
  refused("GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
  refused("GET / HTTP/1.2\r\nHost: t\r\n\r\n", 505);
  refused("GET / HTTP/0.9\r\nHost: t\r\n\r\n", 505);
  refused("GET /\n", 400, "bare LF");
  // Blank lines before a request are skipped (RFC 9112 §2.2).
  CHECK(parse("\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n").state == State::complete);
  // absolute-form and OPTIONS *.
  Parsed abs = parse("GET http://example.com/hooks/x?q HTTP/1.1\r\nHost: example.com\r\n\r\n");
  REQUIRE(abs.state == State::complete);
  CHECK(abs.head.path == "/hooks/x");
  CHECK(parse("GET http://example.com HTTP/1.1\r\nHost: e\r\n\r\n").head.path == "/");
  CHECK(parse("OPTIONS * HTTP/1.1\r\nHost: e\r\n\r\n").head.path == "*");
  refused("GET * HTTP/1.1\r\nHost: e\r\n\r\n", 400);
  refused("GET ftp://e/x HTTP/1.1\r\nHost: e\r\n\r\n", 400);
}

TEST_CASE("request parser: Connection and Expect", "[request_parser]") {
  CHECK_FALSE(parse("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").head.keep_alive);
  CHECK_FALSE(
      parse("GET / HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, Close\r\n\r\n").head.keep_alive);
  CHECK(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").head.keep_alive);
  CHECK_FALSE(parse("GET / HTTP/1.0\r\n\r\n").head.keep_alive);

  RequestParser p;
  p.feed("POST /x HTTP/1.1\r\nHost: t\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n");
  REQUIRE(p.state() == State::routing);
  CHECK(p.head().expect_continue);
  refused("POST /x HTTP/1.1\r\nHost: t\r\nExpect: something\r\nContent-Length: 2\r\n\r\nab", 417);
  // An HTTP/1.0 client's expectation is ignored (RFC 9110 §10.1.1).
  Parsed old = parse("POST /x HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab");
  CHECK(old.state == State::complete);
  CHECK_FALSE(old.head.expect_continue);
}

TEST_CASE("request parser: head limits", "[request_parser]") {
  ParserLimits limits;
  limits.max_head_bytes = 200;
  limits.max_fields = 3;
  Parsed line = parse("GET /" + std::string(300, 'a') + " HTTP/1.1\r\n\r\n", 1, limits);
  CHECK(line.status == 414);
  Parsed head =
      parse("GET / HTTP/1.1\r\nHost: t\r\nX-A: " + std::string(300, 'a') + "\r\n\r\n", 1, limits);
  CHECK(head.status == 431);
  Parsed fields = parse("GET / HTTP/1.1\r\nHost: t\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 1, limits);
  CHECK(fields.status == 431);
  CHECK(parse("GET / HTTP/1.1\r\nHost: t\r\nA: 1\r\nB: 2\r\n\r\n", 1, limits).state ==
        State::complete);
  // A head that never ends stops at the limit instead of growing without bound.
  RequestParser p(limits);
  size_t used = p.feed("GET / HTTP/1.1\r\nX-A: " + std::string(1000, 'a'));
  CHECK(p.state() == State::failed);
  CHECK(used <= 200);
}

TEST_CASE("request parser: an incomplete request asks for more", "[request_parser]") {
  RequestParser p;
  CHECK_FALSE(p.started());
  CHECK(p.feed("POST /x HTTP/1.1\r\nHost: t\r\nContent-Le") > 0);
  CHECK(p.state() == State::head);
  CHECK(p.started());
  std::string rest = "ngth: 4\r\n\r\nab";
  CHECK(p.feed(rest) == rest.size() - 2);  // the head only: the body waits for routing
  REQUIRE(p.state() == State::routing);
  p.accept_body(10);
  CHECK(p.feed("ab") == 2);
  CHECK(p.state() == State::body);
  CHECK(p.feed("cdef") == 2);
  CHECK(p.state() == State::complete);
  CHECK(p.body() == "abcd");
}

}  // namespace unit_request_parser
