// What a delivery means before anything runs (hooks/delivery.hpp): header names as environment
// variables and the one rule for headers that share one, what the store keeps of the request
// (credentials by name only), and form-encoded fields.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "hooks/config.hpp"
#include "hooks/delivery.hpp"
#include "util/hex.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_delivery {

using idem::hooks::Delivery;
using idem::hooks::form_values;
using idem::hooks::header_environment;
using idem::hooks::header_variable;
using idem::hooks::Hook;
using idem::hooks::is_credential_header;
using idem::hooks::k_redacted;
using idem::hooks::Scheme;
using idem::hooks::SignatureConfig;
using idem::hooks::stored_request;

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

Delivery delivery_with(Headers headers, std::string body = {}) {
  Delivery d;
  d.method = "POST";
  d.path = "/h";
  d.headers = std::move(headers);
  d.body = std::move(body);
  return d;
}

Hook plain_hook() {
  Hook hook;
  hook.path = "/h";
  hook.command = {"true"};
  return hook;
}

Hook generic_hook(const std::string& header) {
  Hook hook = plain_hook();
  SignatureConfig signature{};
  signature.scheme = Scheme::hmac_sha256;
  signature.secret = "s";
  signature.header = header;
  hook.signature = signature;
  return hook;
}

nlohmann::json stored_headers(const Hook& hook, const Delivery& d) {
  return nlohmann::json::parse(stored_request(hook, d)).at("headers");
}

}  // namespace

TEST_CASE("header_variable: upper-cased, every other byte '_'", "[delivery]") {
  CHECK(header_variable("X-GitHub-Event") == "IDEM_HEADER_X_GITHUB_EVENT");
  CHECK(header_variable("content-type") == "IDEM_HEADER_CONTENT_TYPE");
  CHECK(header_variable("X.A") == "IDEM_HEADER_X_A");
  CHECK(header_variable("X_A") == "IDEM_HEADER_X_A");
  CHECK(header_variable("x-a") == "IDEM_HEADER_X_A");
  CHECK(header_variable("a~b!c#1") == "IDEM_HEADER_A_B_C_1");
  // Bytes above 0x7f are not letters here, whatever the locale says.
  CHECK(header_variable("\xc3\xa9t\xe9") == "IDEM_HEADER___T_");
}

TEST_CASE("headers that map to one variable are combined, in the order received", "[delivery]") {
  Delivery d = delivery_with({{"X-A", "one"},
                              {"Content-Type", "text/plain"},
                              {"X_A", "two"},
                              {"x.a", "three"},
                              {"X-B", "1"},
                              {"x-b", "2"}});
  // The value signatures and keys read...
  CHECK(d.header("X-A") == "one, two, three");
  CHECK(d.header("x_a") == "one, two, three");
  CHECK(d.header("X-B") == "1, 2");
  CHECK(d.header("Content-Type") == "text/plain");
  CHECK_FALSE(d.header("X-C").has_value());
  CHECK_FALSE(d.header("X-AB").has_value());
  // ... is the value the handler sees: one variable each, in the order of its first header.
  CHECK(header_environment(d) == Headers{{"IDEM_HEADER_X_A", "one, two, three"},
                                         {"IDEM_HEADER_CONTENT_TYPE", "text/plain"},
                                         {"IDEM_HEADER_X_B", "1, 2"}});
  // An empty value is an element like any other.
  Delivery empty = delivery_with({{"X-K", ""}, {"X-K", "v"}});
  CHECK(empty.header("X-K") == ", v");
  CHECK(delivery_with({{"X-K", ""}}).header("X-K") == "");
}

TEST_CASE("stored_request: method, path, body and headers by name", "[delivery]") {
  Delivery d = delivery_with(
      {{"X-GitHub-Event", "push"}, {"Accept", "a"}, {"accept", "b"}, {"X_Accept", "c"}},
      std::string("bin\0ary", 7));
  nlohmann::json request = nlohmann::json::parse(stored_request(plain_hook(), d));
  CHECK(request.at("method") == "POST");
  CHECK(request.at("path") == "/h");
  CHECK(idem::util::from_base64(request.at("body_b64").get<std::string>()) == d.body);
  // A repeated name is one member, as first spelled, its values combined; another name that maps
  // to the same variable stays a member of its own.
  CHECK(request.at("headers") ==
        nlohmann::json{{"X-GitHub-Event", "push"}, {"Accept", "a, b"}, {"X_Accept", "c"}});
}

TEST_CASE("stored_request: credentials are kept by name, their values redacted", "[delivery]") {
  CHECK(k_redacted == "[redacted]");
  Headers sent = {{"Authorization", "Bearer t0ken"},
                  {"cookie", "session=abc"},
                  {"Proxy-Authorization", "Basic eDp5"},
                  {"X-Hub-Signature", "sha1=aa"},
                  {"X-Hub-Signature-256", "sha256=bb"},
                  {"Stripe-Signature", "t=1,v1=cc"},
                  {"Webhook-Signature", "v1,dd"},
                  {"svix-signature", "v1,ee"},
                  {"X-Shopify-Hmac-Sha256", "ff"},
                  {"X-Slack-Signature", "v0=gg"},
                  {"X-Acme-Signature", "hh"},
                  {"Proxy_Authorization", "ii"},
                  {"X-Request-Id", "kept"}};
  Delivery d = delivery_with(sent);
  nlohmann::json headers = stored_headers(generic_hook("X-Acme-Signature"), d);
  for (const auto& [name, value] : sent) {
    INFO(name);
    REQUIRE(headers.contains(name));
    if (name == "X-Request-Id")
      CHECK(headers[name] == "kept");
    else
      CHECK(headers[name] == k_redacted);
  }
  // Nothing of any value is left anywhere in the stored text.
  std::string text = stored_request(generic_hook("X-Acme-Signature"), d);
  for (const char* secret :
       {"t0ken", "abc", "eDp5", "aa", "bb", "cc", "dd", "ee", "ff", "gg", "hh", "ii"}) {
    INFO(secret);
    CHECK(text.find(std::string("\"") + secret) == std::string::npos);
    CHECK(text.find(std::string("=") + secret) == std::string::npos);
  }
  // The generic scheme's header is a credential only on the hook configured with it.
  CHECK(stored_headers(plain_hook(), d)["X-Acme-Signature"] == "hh");
  CHECK(is_credential_header(generic_hook("X-Acme-Signature"), "x.acme.signature"));
  CHECK_FALSE(is_credential_header(plain_hook(), "X-Acme-Signature"));
  CHECK_FALSE(is_credential_header(plain_hook(), "X-Authorization-Hint"));
  CHECK(is_credential_header(plain_hook(), "AUTHORIZATION"));
}

TEST_CASE("form_values: WHATWG form decoding of one field", "[delivery]") {
  const std::string slash =
      "token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&command=%2Fweather&text=94070+now%21"
      "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1234%2F5678"
      "&trigger_id=13345224609.738474920.8088930838d88f008e0&api_app_id=A123456";
  CHECK(form_values(slash, "trigger_id") ==
        std::vector<std::string>{"13345224609.738474920.8088930838d88f008e0"});
  CHECK(form_values(slash, "command") == std::vector<std::string>{"/weather"});
  CHECK(form_values(slash, "text") == std::vector<std::string>{"94070 now!"});
  CHECK(form_values(slash, "response_url") ==
        std::vector<std::string>{"https://hooks.slack.com/commands/1234/5678"});
  CHECK(form_values(slash, "user_id").empty());
  // Names are decoded too; '+' is a space and %2B a plus.
  CHECK(form_values("a+b=1&a%2Bb=2&a%20b=3", "a b") == std::vector<std::string>{"1", "3"});
  CHECK(form_values("a+b=1&a%2Bb=2", "a+b") == std::vector<std::string>{"2"});
  // A '%' without two hex digits stays as it is; hex digits of either case decode.
  CHECK(form_values("k=100%25&j=%zz%4&i=%e2%82%AC", "k") == std::vector<std::string>{"100%"});
  CHECK(form_values("k=100%25&j=%zz%4&i=%e2%82%AC", "j") == std::vector<std::string>{"%zz%4"});
  CHECK(form_values("k=100%25&j=%zz%4&i=%e2%82%AC", "i") ==
        std::vector<std::string>{"\xe2\x82\xac"});
  // Every occurrence, in order; a field without '=' has an empty value; empty pairs are skipped.
  CHECK(form_values("&&id=1&&id=2&id&", "id") == std::vector<std::string>{"1", "2", ""});
  CHECK(form_values("=v&x==y", "") == std::vector<std::string>{"v"});
  CHECK(form_values("=v&x==y", "x") == std::vector<std::string>{"=y"});
  CHECK(form_values("", "id").empty());
  // Decoding can make bytes that are not text; the key check refuses them later, not this.
  CHECK(form_values("id=%00%ff", "id") == std::vector<std::string>{std::string("\0\xff", 2)});
  // A JSON body is not a form with that field.
  CHECK(form_values(R"({"trigger_id":"x"})", "trigger_id").empty());
}

TEST_CASE("serial_group: the hook's path and the value its source finds", "[delivery][serial]") {
  Hook hook = plain_hook();
  hook.serial = idem::hooks::SerialConfig{};
  Delivery d = delivery_with({{"X-Repo", "acme/web"}}, R"({"repo": {"name": "acme/api"}})");
  // No group: the whole hook is one line.
  CHECK(std::get<std::string>(idem::hooks::serial_group(hook, d)) == "/h#");
  hook.serial->literal = "deploys";
  CHECK(std::get<std::string>(idem::hooks::serial_group(hook, d)) == "/h#deploys");
  hook.serial->source = idem::hooks::KeySource{idem::hooks::KeySource::header, "X-Repo"};
  CHECK(std::get<std::string>(idem::hooks::serial_group(hook, d)) == "/h#acme/web");
  hook.serial->source = idem::hooks::KeySource{idem::hooks::KeySource::json, "/repo/name"};
  CHECK(std::get<std::string>(idem::hooks::serial_group(hook, d)) == "/h#acme/api");

  // A delivery without its group, or with one that is no usable name: 400, said so.
  hook.serial->source = idem::hooks::KeySource{idem::hooks::KeySource::header, "X-Missing"};
  auto none = idem::hooks::serial_group(hook, d);
  REQUIRE(std::holds_alternative<idem::front::Answer>(none));
  CHECK(std::get<idem::front::Answer>(none).status == 400);
  CHECK(std::get<idem::front::Answer>(none).outcome == "no_group");
  CHECK(std::get<idem::front::Answer>(none).body.find("No serial group") != std::string::npos);
  CHECK(std::get<idem::front::Answer>(none).body.find("X-Missing") != std::string::npos);
  hook.serial->source = idem::hooks::KeySource{idem::hooks::KeySource::header, "X-Repo"};
  auto bad = idem::hooks::serial_group(hook, delivery_with({{"X-Repo", "a\nb"}}));
  REQUIRE(std::holds_alternative<idem::front::Answer>(bad));
  CHECK(std::get<idem::front::Answer>(bad).body.find("Bad serial group") != std::string::npos);
}

TEST_CASE("stored_delivery: what stored_request kept, read back", "[delivery][serial]") {
  Delivery d =
      delivery_with({{"X-Repo", "acme"}, {"Authorization", "Bearer t"}}, std::string("b\0dy", 4));
  d.query = "who=w1&x=%20";
  d.remote = "127.0.0.1:5555";
  std::optional<Delivery> back = idem::hooks::stored_delivery(stored_request(plain_hook(), d));
  REQUIRE(back.has_value());
  CHECK(back->method == d.method);
  CHECK(back->path == d.path);
  CHECK(back->body == d.body);
  CHECK(back->query == d.query);
  CHECK(back->remote == d.remote);
  CHECK(back->header("X-Repo") == "acme");
  CHECK(back->header("Authorization") == std::string(k_redacted));
  // A request stored before the query and the sender were kept has neither.
  nlohmann::json old = nlohmann::json::parse(stored_request(plain_hook(), delivery_with({})));
  CHECK_FALSE(old.contains("query"));
  CHECK_FALSE(old.contains("remote"));
  CHECK(idem::hooks::stored_delivery(old.dump())->query.empty());
  CHECK_FALSE(idem::hooks::stored_delivery("not json").has_value());
  CHECK_FALSE(idem::hooks::stored_delivery(R"({"body_b64": "!!"})").has_value());
}

}  // namespace unit_delivery
