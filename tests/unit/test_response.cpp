// The stored answer: its stored form round trips exactly, and garbage is refused, never thrown.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/response.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_response {

using idem::core::decode_response;
using idem::core::encode_response;
using idem::core::header_value;
using idem::core::k_max_response_header_bytes;
using idem::core::Response;
using idem::core::response_problem;
using idem::core::same_header_name;

TEST_CASE("response: the stored form round trips status and headers in order", "[response]") {
  Response r;
  r.status = 201;
  r.headers = {{"Location", "/orders/7"},
               {"ETag", "\"v1\""},
               {"Content-Type", "application/json"},
               {"Set-Cookie", "a=1"},
               {"Set-Cookie", "b=2"},  // names repeat, each kept in place
               {"X-Note", "caf\xc3\xa9 \\ \"quoted\"\ttab"},
               {"X-Empty", ""}};
  const std::string stored = encode_response(r);
  CHECK(stored.find('\n') == std::string::npos);  // compact: one line
  auto back = decode_response(stored);
  REQUIRE(back);
  CHECK(*back == r);
  CHECK(encode_response(*back) == stored);

  Response bare;
  bare.status = 500;
  CHECK(encode_response(bare) == R"({"status":500,"headers":[]})");
  CHECK(decode_response(encode_response(bare)) == bare);
}

TEST_CASE("response: header_value finds the first header of a name, any case", "[response]") {
  Response r;
  r.headers = {{"content-type", "text/plain"}, {"Content-Type", "application/json"}};
  CHECK(header_value(r, "Content-Type") == "text/plain");
  CHECK(header_value(r, "CONTENT-TYPE") == "text/plain");
  CHECK_FALSE(header_value(r, "Content-Typ"));
  CHECK_FALSE(header_value(Response{}, "Content-Type"));
  CHECK(same_header_name("ETag", "etag"));
  CHECK_FALSE(same_header_name("Content-Type", "Content_Type"));
  CHECK_FALSE(same_header_name("ETag", "ETa"));
}

TEST_CASE("response: what cannot be replayed is refused before it is stored", "[response]") {
  auto with = [](std::string name, std::string value) {
    Response r;
    r.headers = {{std::move(name), std::move(value)}};
    return r;
  };
  CHECK_FALSE(response_problem(Response{}));
  for (int status : {100, 200, 599}) {
    Response r;
    r.status = status;
    CHECK_FALSE(response_problem(r));
  }
  for (int status : {0, 99, 600, -200, 1000}) {
    INFO(status);
    Response r;
    r.status = status;
    CHECK(response_problem(r));
    CHECK_THROWS_AS(encode_response(r), std::invalid_argument);
  }
  for (const Response& bad :
       {with("", "x"), with("Bad Name", "x"), with("Name:", "x"), with("N\xc3\xa9", "x"),
        with("X", "a\r\nInjected: yes"), with("X", "a\nb"), with("X", std::string("a\0b", 3)),
        with("X", "\x7f"), with("X", "\xff\xfe"), with("X", "\xc0\xaf"),  // overlong '/'
        with("X", "\xed\xa0\x80"),                                        // a surrogate
        with("X", std::string(k_max_response_header_bytes, 'v')), with("Content-Length", "0"),
        with("transfer-encoding", "chunked"), with("Date", "x"), with("Connection", "close"),
        with("Keep-Alive", "5"), with("Upgrade", "h2c"), with("TE", "trailers")}) {
    INFO(bad.headers[0].first << ": " << bad.headers[0].second.substr(0, 20));
    CHECK(response_problem(bad));
    CHECK_THROWS_AS(encode_response(bad), std::invalid_argument);
  }
  CHECK_FALSE(response_problem(with("X-Ok", std::string(k_max_response_header_bytes - 4, 'v'))));
}

TEST_CASE("response: decoding garbage gives nothing and throws nothing", "[response][fuzz]") {
  const std::vector<std::string> bad = {
      "",
      "null",
      "[]",
      "200",
      "\"status\"",
      "{",
      "{}",
      R"({"status":200})",
      R"({"headers":[]})",
      R"({"status":"200","headers":[]})",
      R"({"status":200.5,"headers":[]})",
      R"({"status":true,"headers":[]})",
      R"({"status":99,"headers":[]})",
      R"({"status":600,"headers":[]})",
      R"({"status":4294967496,"headers":[]})",  // 2^32 + 200: must not narrow to 200
      R"({"status":-1,"headers":[]})",
      R"({"status":18446744073709551615,"headers":[]})",
      R"({"status":200,"headers":{}})",
      R"({"status":200,"headers":[["A"]]})",
      R"({"status":200,"headers":[["A","b","c"]]})",
      R"({"status":200,"headers":[["A",1]]})",
      R"({"status":200,"headers":[[1,"b"]]})",
      R"({"status":200,"headers":["A: b"]})",
      R"({"status":200,"headers":[["A","b\r\nX: y"]]})",
      R"({"status":200,"headers":[["A b","c"]]})",
      R"({"status":200,"headers":[["A","\u0000"]]})",
      R"({"status":200,"headers":[["A","\ud800"]]})",
      R"({"status":200,"headers":[["Content-Length","5"]]})",
      "{\"status\":200,\"headers\":[[\"A\",\"\xff\"]]}",
      R"({"status":200,"headers":[]} trailing)",
      std::string(100000, '['),
      std::string("{\"status\":200,\0\"headers\":[]}", 28),
  };
  for (const auto& text : bad) {
    INFO(text.substr(0, 60));
    std::optional<Response> r;
    CHECK_NOTHROW(r = decode_response(text));
    CHECK_FALSE(r);
  }
  // Members a later version may add are ignored; what is known must still be right.
  auto extra = decode_response(R"({"status":204,"headers":[["A","b"]],"reason":"No Content"})");
  REQUIRE(extra);
  CHECK(extra->status == 204);
  CHECK(extra->headers.size() == 1);
}

TEST_CASE("response: random bytes and mutations of a stored form never throw", "[response][fuzz]") {
  Response r;
  r.status = 302;
  r.headers = {{"Location", "/x"}, {"Content-Type", "text/html; charset=utf-8"}};
  const std::string stored = encode_response(r);
  std::mt19937 rng(20261201);
  for (int round = 0; round < 20000; ++round) {
    std::string text = stored;
    if (round % 4 == 0) {
      text.assign(rng() % 64, '\0');
      for (char& c : text) c = char(rng());
    } else {
      for (int edits = 1 + int(rng() % 4); edits > 0; --edits) {
        size_t at = rng() % (text.size() + 1);
        switch (rng() % 3) {
          case 0:
            text.insert(at, 1, char(rng()));
            break;
          case 1:
            if (at < text.size()) text.erase(at, 1);
            break;
          default:
            if (at < text.size()) text[at] = char(rng());
            break;
        }
      }
    }
    INFO(text);
    std::optional<Response> got;
    REQUIRE_NOTHROW(got = decode_response(text));
    // Whatever decodes is storable and stores back to a form that decodes to the same.
    if (got) {
      REQUIRE_FALSE(response_problem(*got));
      REQUIRE(decode_response(encode_response(*got)) == got);
    }
  }
}

}  // namespace unit_response
