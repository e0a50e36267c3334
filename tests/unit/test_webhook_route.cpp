// The pure parts of serving webhook hooks: Go's content sniffing, the statuses Go knows, request
// paths as Go's router reads them, the executable of a command in its working directory, and the
// serve flags' values.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "core/errors.hpp"
#include "webhook/route.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_webhook_route {

using idem::webhook::cleaned_path;
using idem::webhook::decoded_path;
using idem::webhook::executable;
using idem::webhook::go_escaped_path;
using idem::webhook::known_status;
using idem::webhook::parse_http_methods;
using idem::webhook::parse_response_header;
using idem::webhook::sniffed_content_type;

TEST_CASE("webhook route: answers carry the Content-Type Go sniffs", "[webhook_route]") {
  CHECK(sniffed_content_type("").empty());
  CHECK(sniffed_content_type("ok\n") == "text/plain; charset=utf-8");
  CHECK(sniffed_content_type("{\"a\": 1}") == "text/plain; charset=utf-8");  // Go knows no JSON
  CHECK(sniffed_content_type("Hook rules were not satisfied.") == "text/plain; charset=utf-8");
  CHECK(sniffed_content_type("\n  <html><body>x") == "text/html; charset=utf-8");
  CHECK(sniffed_content_type("<!doctype html>") == "text/html; charset=utf-8");
  CHECK(sniffed_content_type("<p>para") == "text/html; charset=utf-8");
  CHECK(sniffed_content_type("<pre>") == "text/plain; charset=utf-8");  // "<p" then 'r'
  CHECK(sniffed_content_type("<?xml version=\"1.0\"?><a/>") == "text/xml; charset=utf-8");
  CHECK(sniffed_content_type("%PDF-1.7") == "application/pdf");
  CHECK(sniffed_content_type("\x89PNG\r\n\x1a\n....") == "image/png");
  CHECK(sniffed_content_type(std::string("\x1f\x8b\x08\x00", 4)) == "application/x-gzip");
  CHECK(sniffed_content_type(std::string("a\0b", 3)) == "application/octet-stream");
  CHECK(sniffed_content_type("tab\tand\r\nescape \x1b[0m") == "text/plain; charset=utf-8");
  CHECK(sniffed_content_type("start of heading \x01") == "application/octet-stream");
  CHECK(sniffed_content_type("caf\xc3\xa9") == "text/plain; charset=utf-8");
  // Only the first 512 bytes count.
  CHECK(sniffed_content_type(std::string(512, 'a') + std::string(1, '\0')) ==
        "text/plain; charset=utf-8");
}

TEST_CASE("webhook route: a configured code Go does not know answers 200", "[webhook_route]") {
  CHECK(known_status(200));
  CHECK(known_status(202));
  CHECK(known_status(418));
  CHECK(known_status(511));
  CHECK_FALSE(known_status(0));
  CHECK_FALSE(known_status(299));
  CHECK_FALSE(known_status(599));
}

TEST_CASE("webhook route: paths are percent-decoded as Go decodes them", "[webhook_route]") {
  CHECK(decoded_path("/hooks/x") == "/hooks/x");
  CHECK(decoded_path("/hooks/a%20b") == "/hooks/a b");
  CHECK(decoded_path("/hook%73/caf%C3%a9") == "/hooks/caf\xc3\xa9");
  CHECK(decoded_path("/hooks/a%2Fb") == "/hooks/a/b");
  CHECK(decoded_path("/hooks/50%25") == "/hooks/50%");
  CHECK(decoded_path("/hooks/a+b") == "/hooks/a+b");  // '+' is a space in queries only
  CHECK(decoded_path("/hooks/a%00b") == std::string("/hooks/a\0b", 10));
  CHECK_FALSE(decoded_path("/hooks/%zz").has_value());
  CHECK_FALSE(decoded_path("/hooks/x%2").has_value());
  CHECK_FALSE(decoded_path("/hooks/x%").has_value());
  CHECK_FALSE(decoded_path("/hooks/%g0").has_value());
}

TEST_CASE("webhook route: paths are cleaned as gorilla/mux cleans them", "[webhook_route]") {
  CHECK(cleaned_path("/") == "/");
  CHECK(cleaned_path("/hooks/x") == "/hooks/x");
  CHECK(cleaned_path("//hooks/x") == "/hooks/x");
  CHECK(cleaned_path("/hooks//x") == "/hooks/x");
  CHECK(cleaned_path("/hooks/./x") == "/hooks/x");
  CHECK(cleaned_path("/hooks/a/../b") == "/hooks/b");
  CHECK(cleaned_path("/hooks/x/") == "/hooks/x/");  // a trailing slash stays
  CHECK(cleaned_path("/hooks/x//") == "/hooks/x/");
  CHECK(cleaned_path("/hooks/x/.") == "/hooks/x");
  CHECK(cleaned_path("/hooks/x/..") == "/hooks");
  CHECK(cleaned_path("/hooks/../..") == "/");
  CHECK(cleaned_path("/../x/") == "/x/");
  CHECK(cleaned_path("//") == "/");
  CHECK(cleaned_path("/./") == "/");
  CHECK(cleaned_path("/hooks/...") == "/hooks/...");
  CHECK(cleaned_path("/hooks/a b") == "/hooks/a b");
}

TEST_CASE("webhook route: a redirect's path is escaped as Go escapes it", "[webhook_route]") {
  CHECK(go_escaped_path("/hooks/x") == "/hooks/x");
  CHECK(go_escaped_path("/hooks/a b") == "/hooks/a%20b");
  CHECK(go_escaped_path("/hooks/caf\xc3\xa9") == "/hooks/caf%C3%A9");
  CHECK(go_escaped_path("/hooks/50%") == "/hooks/50%25");
  CHECK(go_escaped_path("/-._~$&+,/:;=@") == "/-._~$&+,/:;=@");
  CHECK(go_escaped_path("/!'()*?#\"<>[]{}|\\^`") ==
        "/%21%27%28%29%2A%3F%23%22%3C%3E%5B%5D%7B%7D%7C%5C%5E%60");
  CHECK(go_escaped_path(std::string("/\0\x7f\xff", 4)) == "/%00%7F%FF");
}

TEST_CASE("webhook route: a command runs from its working directory", "[webhook_route]") {
  CHECK(executable("/usr/bin/env", "/srv") == "/usr/bin/env");
  CHECK(executable("deploy.sh", "") == "deploy.sh");  // looked up on PATH, as Go's LookPath
  CHECK(executable("deploy.sh", "/srv/hooks") == "/srv/hooks/deploy.sh");
  CHECK(executable("./bin/deploy", "/srv") == "/srv/./bin/deploy");
  char here[4096];
  REQUIRE(::getcwd(here, sizeof here) != nullptr);
  CHECK(executable("deploy.sh", "hooks") == std::string(here) + "/hooks/deploy.sh");
}

TEST_CASE("webhook route: --response-header and --http-methods", "[webhook_route]") {
  using Pair = std::pair<std::string, std::string>;
  CHECK(parse_response_header("X-A=1") == Pair{"X-A", "1"});
  CHECK(parse_response_header("Access-Control-Allow-Origin=*") ==
        Pair{"Access-Control-Allow-Origin", "*"});
  CHECK(parse_response_header("X-Empty=") == Pair{"X-Empty", ""});
  CHECK(parse_response_header("X-Eq=a=b") == Pair{"X-Eq", "a=b"});
  CHECK_THROWS_AS(parse_response_header("no-equals"), idem::UsageError);
  CHECK_THROWS_AS(parse_response_header("=value"), idem::UsageError);
  CHECK_THROWS_AS(parse_response_header("Bad Name=1"), idem::UsageError);
  CHECK_THROWS_AS(parse_response_header("X-A=line\r\nX-B: 2"), idem::UsageError);
  CHECK(parse_http_methods("post, Put ,DELETE") ==
        std::vector<std::string>{"POST", "PUT", "DELETE"});
  CHECK(parse_http_methods("GET") == std::vector<std::string>{"GET"});
  CHECK_THROWS_AS(parse_http_methods("POST,,PUT"), idem::UsageError);
  CHECK_THROWS_AS(parse_http_methods("PO ST"), idem::UsageError);
  CHECK_THROWS_WITH(parse_http_methods(""), Catch::Contains("--http-methods"));
}

}  // namespace unit_webhook_route
