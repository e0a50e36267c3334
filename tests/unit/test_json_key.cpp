// Keys read from JSON documents by a JSON Pointer (core/json_key.hpp).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json_key.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_json_key {

using idem::core::key_from_json;
using nlohmann::json;

namespace {

const json k_doc = json::parse(R"({
  "id": "order-17",
  "n": 42,
  "neg": -7,
  "big": 18446744073709551615,
  "nested": {"deep": {"key": "k-3"}},
  "items": ["zero", 1, {"sku": "s-9"}],
  "a/b": "slash",
  "m~n": "tilde",
  "": "empty-name",
  "price": 9.5,
  "whole": 7.0,
  "huge": 18446744073709551616,
  "obj": {},
  "arr": [],
  "flag": true,
  "none": null
})");

}  // namespace

TEST_CASE("json key: strings are returned as is, integers in decimal", "[json_key]") {
  std::string problem = "untouched";
  CHECK(key_from_json(k_doc, "/id", &problem) == "order-17");
  CHECK(key_from_json(k_doc, "/n", &problem) == "42");
  CHECK(key_from_json(k_doc, "/neg", &problem) == "-7");
  CHECK(key_from_json(k_doc, "/big", &problem) == "18446744073709551615");
  CHECK(key_from_json(k_doc, "/nested/deep/key", &problem) == "k-3");
  CHECK(key_from_json(k_doc, "/items/0", &problem) == "zero");
  CHECK(key_from_json(k_doc, "/items/1", &problem) == "1");
  CHECK(key_from_json(k_doc, "/items/2/sku", &problem) == "s-9");
  // Success leaves the problem alone.
  CHECK(problem == "untouched");
  // The empty pointer is the whole document; "/" is the member named "".
  CHECK(key_from_json(json("root"), "", nullptr) == "root");
  CHECK(key_from_json(json(5), "", nullptr) == "5");
  CHECK(key_from_json(k_doc, "/", nullptr) == "empty-name");
}

TEST_CASE("json key: ~1 and ~0 escape '/' and '~' in member names", "[json_key]") {
  CHECK(key_from_json(k_doc, "/a~1b", nullptr) == "slash");
  CHECK(key_from_json(k_doc, "/m~0n", nullptr) == "tilde");
  // Unescaping is one pass: "~01" is the member named "~1", not "/".
  CHECK(key_from_json(json{{"~1", "x"}}, "/~01", nullptr) == "x");
  CHECK(key_from_json(k_doc, "/a/b", nullptr) == std::nullopt);
}

TEST_CASE("json key: a missing member or index is a problem, not an exception", "[json_key]") {
  const char* missing[] = {"/nope",     "/nested/nope", "/nested/deep/key/more",
                           "/items/3",  "/items/-",     "/items/x",
                           "/items/01", "/items/+1",    "/id/0"};
  for (const char* pointer : missing) {
    INFO(pointer);
    std::string problem;
    CHECK(key_from_json(k_doc, pointer, &problem) == std::nullopt);
    CHECK_THAT(problem, Catch::StartsWith("no value at '" + std::string(pointer) + "'"));
    CHECK_THAT(problem, !Catch::Contains("json.exception"));
  }
  // A null problem pointer is allowed.
  CHECK(key_from_json(k_doc, "/nope", nullptr) == std::nullopt);
}

TEST_CASE("json key: a malformed pointer is reported as such", "[json_key]") {
  std::string problem;
  CHECK(key_from_json(k_doc, "a/b", &problem) == std::nullopt);
  CHECK(problem == "bad JSON pointer 'a/b': it must be empty or start with '/'");
  CHECK(key_from_json(k_doc, "id", &problem) == std::nullopt);
  CHECK_THAT(problem, Catch::StartsWith("bad JSON pointer 'id'"));
  CHECK(key_from_json(k_doc, "~2", &problem) == std::nullopt);
  CHECK_THAT(problem, Catch::StartsWith("bad JSON pointer '~2'"));
  for (const char* pointer : {"/~2", "/~", "/m~n", "/a~"}) {
    INFO(pointer);
    CHECK(key_from_json(k_doc, pointer, &problem) == std::nullopt);
    CHECK_THAT(problem, Catch::StartsWith("bad JSON pointer '" + std::string(pointer) + "'"));
    CHECK_THAT(problem, Catch::Contains("'~' must be followed with '0' or '1'"));
  }
}

TEST_CASE("json key: objects, arrays, booleans and null are not keys", "[json_key]") {
  std::string problem;
  CHECK(key_from_json(k_doc, "/obj", &problem) == std::nullopt);
  CHECK(problem == "the value at '/obj' is an object; a key must be a string or an integer");
  CHECK(key_from_json(k_doc, "/arr", &problem) == std::nullopt);
  CHECK(problem == "the value at '/arr' is an array; a key must be a string or an integer");
  CHECK(key_from_json(k_doc, "/flag", &problem) == std::nullopt);
  CHECK(problem == "the value at '/flag' is a boolean value; a key must be a string or an integer");
  CHECK(key_from_json(k_doc, "/none", &problem) == std::nullopt);
  CHECK(problem == "the value at '/none' is null; a key must be a string or an integer");
  CHECK(key_from_json(k_doc, "", &problem) == std::nullopt);
  CHECK(problem ==
        "the value at the document root is an object; a key must be a string or an "
        "integer");
}

TEST_CASE("json key: numbers with a fraction or exponent are refused", "[json_key]") {
  // nlohmann keeps only a double for these, so no exact key can be made from them.
  for (const char* pointer : {"/price", "/whole", "/huge"}) {
    INFO(pointer);
    std::string problem;
    CHECK(key_from_json(k_doc, pointer, &problem) == std::nullopt);
    CHECK_THAT(problem, Catch::Contains("fraction or exponent"));
  }
  CHECK(key_from_json(json::parse("1e3"), "", nullptr) == std::nullopt);
}

}  // namespace unit_json_key
