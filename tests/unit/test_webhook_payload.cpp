// Payload decoding and rendering as the Go `webhook` server 2.8 does it (webhook/payload.hpp)
// and Go's form decoding (net/message.hpp). The expected values are what webhook 2.8.0
// (Debian's, built with Go 1.19) answered for the same bodies, passed back as its
// entire-payload.
#include <catch2/catch.hpp>
#include <string>

#include "net/message.hpp"
#include "webhook/payload.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_webhook_payload {

using namespace idem::net;
using namespace idem::webhook;

namespace {

std::string xml(const std::string& body) {
  Decoded decoded = decode_xml(body);
  return decoded.error.empty() ? go_json(decoded.value) : "error: " + decoded.error;
}

std::string json_of(const std::string& body) {
  Decoded decoded = decode_json(body);
  return decoded.error.empty() ? go_json(decoded.value) : "error";
}

}  // namespace

TEST_CASE("webhook payload: XML as mxj maps it", "[webhook]") {
  CHECK(
      xml(R"(<?xml version="1.0"?><app v="2">text<user>1</user><user id="x">2</user></app><junk)") ==
      R"({"app":{"#text":"text","-v":"2","user":["1",{"#text":"2","-id":"x"}]}})");
  // Text before any attribute or child is the element's value, and what follows is dropped.
  CHECK(xml("<app>text<user>1</user></app>") == R"({"app":"text"})");
  CHECK(xml("<app><user>1</user>text<![CDATA[ cdata ]]></app>") ==
        R"({"app":{"#text":"cdata","user":"1"}})");
  // A comment ends a run of text; the last run wins.
  CHECK(xml("<app>a<!-- c -->b</app>") == R"({"app":"b"})");
  // Local names only; xmlns attributes are attributes; XML's own entities.
  CHECK(
      xml(R"(<x:app xmlns:x="urn:x" x:attr="1" xmlns="urn:d"><x:in/><in a="1"/>&amp;&#65;</x:app>)") ==
      R"({"app":{"#text":"\u0026A","-attr":"1","-x":"urn:x","-xmlns":"urn:d","in":["",{"-a":"1"}]}})");
  CHECK(xml("<a><b></b><b/><c>  </c></a>") == R"({"a":{"b":["",""],"c":""}})");
  CHECK(xml(R"(<!DOCTYPE a [<!ENTITY e "v">]><a>1</a>)") == R"({"a":"1"})");
  CHECK(xml(" junk <a>1</a>") == R"({"a":"1"})");
  CHECK(xml(R"(<!DOCTYPE a [<!ENTITY e "v">]><a>&e;</a>)").rfind("error", 0) == 0);
  CHECK(xml("<a>&e;</a>").rfind("error", 0) == 0);
  CHECK(xml("").rfind("error", 0) == 0);
  CHECK(xml("<a><b></a>").rfind("error", 0) == 0);
  CHECK(xml("<a>\t\r\n x \n</a>") == R"({"a":"x"})");
}

TEST_CASE("webhook payload: nesting is bounded", "[webhook]") {
  std::string deep_json(k_max_payload_depth + 1, '[');
  CHECK(decode_json(deep_json).error.find("nested deeper") != std::string::npos);
  std::string ok_json =
      std::string(k_max_payload_depth, '[') + std::string(k_max_payload_depth, ']');
  CHECK(decode_json(ok_json).error.empty());
  std::string deep_xml;
  for (size_t i = 0; i <= k_max_payload_depth; ++i) deep_xml += "<a>";
  CHECK(decode_xml(deep_xml).error.find("nested deeper") != std::string::npos);
  // Stopped at the start of an empty element, which expat may still end.
  std::string deep_empty;
  for (size_t i = 0; i < k_max_payload_depth; ++i) deep_empty += "<a>";
  CHECK(decode_xml(deep_empty + "<b/>").error.find("nested deeper") != std::string::npos);
}

TEST_CASE("webhook payload: JSON numbers keep their text", "[webhook]") {
  CHECK(json_of(R"({"a.b":1,"a":{"b":2},"n":null,"num":1.50,"s":"<\u2028>\u0008\u000c"} junk)") ==
        R"({"a":{"b":2},"a.b":1,"n":null,"num":1.50,"s":"\u003c\u2028\u003e\u0008\u000c"})");
  CHECK(json_of("[1E+2, -0.0, 123456789012345678901234567890]") ==
        "[1E+2,-0.0,123456789012345678901234567890]");
  // Invalid UTF-8 in a string: each bad byte becomes U+FFFD, as Go's decoder has it.
  Decoded latin1 = decode_json("{\"name\":\"Jos\xe9 \xe2\x82\"}");
  REQUIRE(latin1.error.empty());
  CHECK(latin1.value["name"] == "Jos\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd");
  CHECK(json_of("{\"a\":1}\xff") == R"({"a":1})");
  CHECK(json_of("\xff{}") == "error");
  CHECK(json_of("") == "error");
  CHECK(json_of("{\"a\":tru}") == "error");
  REQUIRE(number_text(json_number("7")));
  CHECK(number_text(nlohmann::json("7")) == nullptr);
  CHECK(go_string(json_number("2.50")) == "2.50");
}

TEST_CASE("webhook payload: Go's json.Marshal of strings", "[webhook]") {
  CHECK(go_json("tab\there\n\r\"\\/") == R"("tab\there\n\r\"\\/")");
  CHECK(go_json(std::string("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001f\x7f\"");
  CHECK(go_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") ==
        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  // Invalid UTF-8, byte by byte: overlong forms, surrogates, a lone continuation, a cut sequence.
  CHECK(go_json("\xc0\xaf|\xed\xa0\x80|\x80|\xe2\x82") ==
        R"("\ufffd\ufffd|\ufffd\ufffd\ufffd|\ufffd|\ufffd\ufffd")");
  CHECK(go_json("\xe2\x80\xa8\xe2\x80\xa9") == R"("\u2028\u2029")");
  CHECK(go_json(nlohmann::json::object()) == "{}");
  CHECK(go_json(nullptr) == "null");
  CHECK(go_string(nullptr) == "<nil>");
  CHECK(go_string(true) == "true");
}

TEST_CASE("form fields: WHATWG and Go's url.ParseQuery", "[webhook]") {
  FormFields lenient = form_fields("a=1&b=%zz&&c&d=x=y&e=a+b%21");
  REQUIRE(lenient.size() == 5);
  CHECK(lenient[1].second == "%zz");
  CHECK(lenient[2] == std::pair<std::string, std::string>{"c", ""});
  CHECK(lenient[3].second == "x=y");
  CHECK(lenient[4].second == "a b!");
  GoFormFields strict = go_form_fields("a=1&b=%zz&&c&d=x=y&e;f=1&%4=2&=v");
  CHECK(strict.error == "invalid URL escape in '%zz'");
  CHECK(strict.fields == FormFields{{"a", "1"}, {"c", ""}, {"d", "x=y"}, {"", "v"}});
  CHECK(go_form_fields("e;f=1").error == "invalid semicolon separator in query");
  CHECK(go_form_fields("a=%41%42&a=2").fields == FormFields{{"a", "AB"}, {"a", "2"}});
  CHECK(go_form_fields("").fields.empty());
}

}  // namespace unit_webhook_payload
