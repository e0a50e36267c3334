// Webhook signature verification (hooks/signature.hpp).
//
// Two kinds of vectors. Published ones, from the providers' own documentation or reference
// libraries, cited where they are used. Our own, for every scheme: the expected signatures were
// computed outside idem (Python's hmac/hashlib/base64, cross-checked with
// `openssl dgst -sha256 -hmac`) and are hard-coded here, so these tests do not check idem against
// itself.
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hooks/signature.hpp"
#include "util/hex.hpp"
#include "util/secret.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_signature {

using idem::hooks::default_key;
using idem::hooks::DefaultKey;
using idem::hooks::HeaderLookup;
using idem::hooks::Scheme;
using idem::hooks::scheme_from_string;
using idem::hooks::secret_problem;
using idem::hooks::signature_header_names;
using idem::hooks::SignatureConfig;
using idem::hooks::standard_webhooks_headers;
using idem::hooks::to_string;
using idem::hooks::verify;
using idem::util::hmac_sha256;
using idem::util::to_hex;

namespace {

using Headers = std::map<std::string, std::string>;

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// Case-insensitive, as the server's lookup is: the tests write names in whatever case the
// provider sends them.
HeaderLookup lookup(Headers headers) {
  return [headers = std::move(headers)](std::string_view name) -> std::optional<std::string> {
    for (const auto& [key, value] : headers) {
      if (same_name(key, name)) return value;
    }
    return std::nullopt;
  };
}

SignatureConfig config_for(Scheme scheme, std::string secret) {
  SignatureConfig config{};
  config.scheme = scheme;
  config.secret = std::move(secret);
  return config;
}

std::string upper(std::string text) {
  for (char& c : text) c = char(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// The signed timestamp of our own vectors (2023-11-14T22:13:20Z).
constexpr int64_t k_t = 1700000000;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Primitives

TEST_CASE("scheme names: config spelling round-trips, anything else is refused", "[signature]") {
  const std::pair<Scheme, const char*> names[] = {
      {Scheme::github, "github"},
      {Scheme::stripe, "stripe"},
      {Scheme::standard_webhooks, "standard-webhooks"},
      {Scheme::shopify, "shopify"},
      {Scheme::slack, "slack"},
      {Scheme::hmac_sha256, "hmac-sha256"},
  };
  for (auto [scheme, name] : names) {
    INFO(name);
    CHECK(to_string(scheme) == name);
    CHECK(scheme_from_string(name) == scheme);
  }
  for (const char* wrong : {"", "GitHub", "standard_webhooks", "hmac_sha256", "hmac", "github "}) {
    INFO(wrong);
    CHECK_FALSE(scheme_from_string(wrong).has_value());
  }
}

TEST_CASE("default_key: each scheme's delivery or event id", "[signature]") {
  auto check = [](Scheme scheme, DefaultKey::Kind kind, const char* name) {
    INFO(to_string(scheme));
    std::optional<DefaultKey> key = default_key(scheme);
    REQUIRE(key.has_value());
    CHECK(key->kind == kind);
    CHECK(key->name == name);
  };
  check(Scheme::github, DefaultKey::header, "X-GitHub-Delivery");
  check(Scheme::stripe, DefaultKey::json, "/id");
  check(Scheme::standard_webhooks, DefaultKey::header, "webhook-id");
  check(Scheme::shopify, DefaultKey::header, "X-Shopify-Webhook-Id");
  check(Scheme::slack, DefaultKey::json, "/event_id");
  CHECK_FALSE(default_key(Scheme::hmac_sha256).has_value());
}

TEST_CASE("default_key: standard-webhooks takes the id of the header set that is signed",
          "[signature]") {
  auto key_name = [](Headers headers) {
    return default_key(Scheme::standard_webhooks, lookup(std::move(headers)))->name;
  };
  CHECK(key_name({}) == "webhook-id");
  CHECK(key_name({{"webhook-id", "a"}, {"webhook-signature", "v1,x"}}) == "webhook-id");
  CHECK(key_name({{"svix-id", "a"}, {"svix-timestamp", "1"}, {"svix-signature", "v1,x"}}) ==
        "svix-id");
  // Any webhook- header picks that set, so an unsigned svix-id never becomes the key of a
  // delivery signed under the webhook- names (nor the other way round).
  CHECK(key_name({{"svix-id", "a"}, {"webhook-signature", "v1,x"}}) == "webhook-id");
  CHECK(key_name({{"Svix-Id", "a"}, {"Webhook-Timestamp", "1"}}) == "webhook-id");
  // The other schemes do not look at the headers.
  CHECK(default_key(Scheme::github, lookup({}))->name == "X-GitHub-Delivery");
  CHECK_FALSE(default_key(Scheme::hmac_sha256, lookup({})).has_value());
}

TEST_CASE("standard_webhooks_headers: one set, never a mix", "[signature]") {
  auto id_of = [](Headers headers) {
    return std::string(standard_webhooks_headers(lookup(std::move(headers))).id);
  };
  CHECK(id_of({}) == "webhook-id");
  CHECK(id_of({{"svix-signature", "v1,x"}}) == "svix-id");
  auto svix = standard_webhooks_headers(lookup({{"SVIX-TIMESTAMP", "1"}}));
  CHECK(svix.id == "svix-id");
  CHECK(svix.timestamp == "svix-timestamp");
  CHECK(svix.signature == "svix-signature");
  CHECK(id_of({{"svix-signature", "v1,x"}, {"webhook-id", "m"}}) == "webhook-id");
}

TEST_CASE("secret_problem: what each scheme can verify with", "[signature]") {
  for (Scheme scheme : {Scheme::github, Scheme::stripe, Scheme::standard_webhooks, Scheme::shopify,
                        Scheme::slack, Scheme::hmac_sha256}) {
    INFO(to_string(scheme));
    CHECK(secret_problem(scheme, "") == "the secret is empty");
  }
  // Text schemes take any text, whsec_ included (Stripe's secrets start with it).
  for (Scheme scheme :
       {Scheme::github, Scheme::stripe, Scheme::shopify, Scheme::slack, Scheme::hmac_sha256}) {
    INFO(to_string(scheme));
    CHECK_FALSE(secret_problem(scheme, "whsec_").has_value());
    CHECK_FALSE(secret_problem(scheme, "not base64!").has_value());
  }
  // standard-webhooks: what its libraries decode.
  const Scheme standard = Scheme::standard_webhooks;
  CHECK_FALSE(secret_problem(standard, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").has_value());
  CHECK_FALSE(secret_problem(standard, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").has_value());
  CHECK_FALSE(secret_problem(standard, "whsec_c2VjcmV0MQ==").has_value());
  CHECK(secret_problem(standard, "whsec_") ==
        "a standard-webhooks secret is whsec_ followed by base64, and this one has nothing "
        "after whsec_");
  for (const char* bad : {"whsec_not base64!", "whsec_abc", "whsec_c2VjcmV0MQ", "plain-text",
                          "whsec_whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2Vj=mV0"}) {
    INFO(bad);
    CHECK(secret_problem(standard, bad) ==
          "a standard-webhooks secret is whsec_ followed by base64, and this one is not base64");
  }
  // Whatever passes verifies: verify never answers "secret is ..." for it.
  auto config = config_for(standard, "whsec_c2VjcmV0MQ==");
  CHECK(verify(config, lookup({}), "{}", k_t).problem == "webhook-id is missing");
}

TEST_CASE("signature_header_names: every scheme's signature header", "[signature]") {
  std::vector<std::string> names;
  for (std::string_view name : signature_header_names()) names.emplace_back(name);
  CHECK(names == std::vector<std::string>{"X-Hub-Signature", "X-Hub-Signature-256",
                                          "Stripe-Signature", "webhook-signature", "svix-signature",
                                          "X-Shopify-Hmac-Sha256", "X-Slack-Signature"});
}

TEST_CASE("every scheme refuses an empty secret", "[signature]") {
  for (Scheme scheme : {Scheme::github, Scheme::stripe, Scheme::standard_webhooks, Scheme::shopify,
                        Scheme::slack, Scheme::hmac_sha256}) {
    INFO(to_string(scheme));
    SignatureConfig config = config_for(scheme, "");
    config.header = "X-Signature";
    // The empty key's MAC is computable by anyone; even a "correct" signature must not pass.
    std::string forged = to_hex(hmac_sha256("", "{}"));
    auto verdict = verify(
        config, lookup({{"X-Hub-Signature-256", "sha256=" + forged}, {"X-Signature", forged}}),
        "{}", k_t);
    CHECK_FALSE(verdict.ok);
    CHECK(verdict.problem == "secret is empty");
  }
}

// ---------------------------------------------------------------------------------------------
// github

TEST_CASE("github: the example published in GitHub's docs", "[signature]") {
  // docs.github.com, "Validating webhook deliveries", section "Testing the webhook payload
  // validation".
  auto config = config_for(Scheme::github, "It's a Secret to Everybody");
  const std::string sig = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
  auto verdict =
      verify(config, lookup({{"X-Hub-Signature-256", "sha256=" + sig}}), "Hello, World!", k_t);
  CHECK(verdict.ok);
  CHECK(verdict.problem.empty());
  CHECK(to_hex(hmac_sha256("It's a Secret to Everybody", "Hello, World!")) == sig);
  // Header names arrive in any case; hex digits may too.
  CHECK(verify(config, lookup({{"x-hub-signature-256", "sha256=" + upper(sig)}}), "Hello, World!",
               k_t)
            .ok);
}

TEST_CASE("github: own vector, tampering and malformed headers", "[signature]") {
  auto config = config_for(Scheme::github, "gh-secret-1");
  const std::string body = R"({"action":"opened","number":7})";
  const std::string good =
      "sha256=f37f495820dc5e6708f48ec5162ec5a939667b5fe4d69e80ea49270d12b4a041";
  auto with = [&](std::string header, std::string_view payload = {}) {
    return verify(config, lookup({{"X-Hub-Signature-256", std::move(header)}}),
                  payload.empty() ? std::string_view(body) : payload, k_t);
  };

  CHECK(with(good).ok);
  CHECK(with("  " + good + " ").ok);  // optional whitespace around the value

  SECTION("body changed by one byte") {
    auto verdict = with(good, R"({"action":"opened","number":8})");
    CHECK_FALSE(verdict.ok);
    CHECK(verdict.problem == "signature does not match");
  }
  SECTION("wrong secret") {
    config.secret = "gh-secret-2";
    CHECK(with(good).problem == "signature does not match");
  }
  SECTION("missing or empty header") {
    auto verdict = verify(config, lookup({}), body, k_t);
    CHECK_FALSE(verdict.ok);
    CHECK(verdict.problem == "X-Hub-Signature-256 is missing");
    CHECK(with("").problem == "X-Hub-Signature-256 is empty");
  }
  SECTION("malformed header") {
    const std::string bads[] = {
        good.substr(7),                         // no prefix
        "sha1=" + good.substr(7),               // the legacy header's form
        "sha256=" + good.substr(7, 63),         // odd number of digits
        "sha256=" + good.substr(7, 62) + "zz",  // not hex
        "sha256=",
    };
    for (const std::string& bad : bads) {
      INFO(bad);
      auto verdict = with(bad);
      CHECK_FALSE(verdict.ok);
      CHECK(verdict.problem == "X-Hub-Signature-256 is not in the form sha256=<hex>");
    }
  }
  SECTION("well-formed hex of the wrong length or value") {
    CHECK(with(good.substr(0, good.size() - 2)).problem == "signature does not match");
    CHECK(with(good + "00").problem == "signature does not match");
    CHECK(with("sha256=" + std::string(64, '0')).problem == "signature does not match");
  }
  SECTION("the problem never repeats the secret or the expected signature") {
    auto verdict = with("sha256=" + std::string(64, 'a'));
    CHECK(verdict.problem.find("gh-secret-1") == std::string::npos);
    CHECK(verdict.problem.find(good.substr(7)) == std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// stripe

TEST_CASE("stripe: own vector, multiple v1, other schemes ignored", "[signature]") {
  // Stripe's docs ("Check the webhook signatures" / verify manually) describe the t=,v1= scheme
  // but publish no fixed vector, so these are our own. The key is the secret text, whsec_ and all.
  auto config = config_for(Scheme::stripe, "whsec_test_5VdLk0tW3qX9");
  const std::string body = R"({"id":"evt_1","type":"charge.succeeded"})";
  const std::string good = "c7e6e0f29685b32cad9a957f9aa566daf356b647581dcd815fdf1a274641de9c";
  // The same payload signed with a previous secret, as during a roll of the endpoint's secret.
  const std::string old = "1b4e18a09db4437c413d94446a1dcce3c3c3fa477acb82625a041e762fb66117";
  auto with = [&](std::string header, int64_t now = k_t) {
    return verify(config, lookup({{"Stripe-Signature", std::move(header)}}), body, now);
  };

  CHECK(with("t=1700000000,v1=" + good).ok);
  CHECK(with("t=1700000000,v1=" + upper(good)).ok);
  CHECK(with("v1=" + good + ",t=1700000000").ok);            // order does not matter
  CHECK(with("t=1700000000, v1=" + good).ok);                // space after the comma
  CHECK(with("t=1700000000,v1=" + old + ",v1=" + good).ok);  // only the second v1 matches
  CHECK(with("t=1700000000,v1=" + good + ",v0=" + old).ok);  // v0 is ignored
  CHECK(with("t=1700000000,v1=" + good + ",v9=whatever").ok);

  SECTION("only a v0 that matches is not enough") {
    CHECK(with("t=1700000000,v0=" + good + ",v1=" + old).problem == "signature does not match");
  }
  SECTION("body changed by one byte") {
    auto verdict = verify(config, lookup({{"Stripe-Signature", "t=1700000000,v1=" + good}}),
                          R"({"id":"evt_2","type":"charge.succeeded"})", k_t);
    CHECK_FALSE(verdict.ok);
    CHECK(verdict.problem == "signature does not match");
  }
  SECTION("the timestamp is signed") {
    CHECK(with("t=1700000001,v1=" + good, k_t + 1).problem == "signature does not match");
  }
  SECTION("wrong secret, including the secret without its whsec_ prefix") {
    config.secret = "whsec_old_secret";
    CHECK(with("t=1700000000,v1=" + good).problem == "signature does not match");
    config.secret = "test_5VdLk0tW3qX9";
    CHECK(with("t=1700000000,v1=" + good).problem == "signature does not match");
  }
  SECTION("missing header") {
    CHECK(verify(config, lookup({}), body, k_t).problem == "Stripe-Signature is missing");
  }
  SECTION("malformed headers") {
    CHECK(with("v1=" + good).problem == "Stripe-Signature has no t= timestamp");
    CHECK(with("t=1700000000").problem == "Stripe-Signature has no v1= signature");
    CHECK(with("t=1700000000,v0=" + good).problem == "Stripe-Signature has no v1= signature");
    CHECK(with("t=soon,v1=" + good).problem == "Stripe-Signature has a malformed t= timestamp");
    CHECK(with("t=-5,v1=" + good).problem == "Stripe-Signature has a malformed t= timestamp");
    CHECK(with("t=,v1=" + good).problem == "Stripe-Signature has a malformed t= timestamp");
    CHECK(with("t=99999999999999999999,v1=" + good).problem ==
          "Stripe-Signature has a malformed t= timestamp");
    CHECK(with("t=1700000000,t=1700000000,v1=" + good).problem ==
          "Stripe-Signature has more than one t=");
    // A semicolon is no separator: t would be "1700000000;v1=…".
    CHECK(with("t=1700000000;v1=" + good).problem ==
          "Stripe-Signature has a malformed t= timestamp");
    const std::string bads[] = {"garbage", "t=1700000000,,v1=" + good,
                                "t=1700000000,v1=" + good + ",", "=1,t=1700000000,v1=" + good};
    for (const std::string& bad : bads) {
      INFO(bad);
      CHECK(with(bad).problem == "Stripe-Signature is not a list of key=value items");
    }
    // A v1 that is not hex cannot match, but another v1 still can.
    CHECK(with("t=1700000000,v1=nothex").problem == "signature does not match");
    CHECK(with("t=1700000000,v1=nothex,v1=" + good).ok);
  }
}

TEST_CASE("stripe: timestamp tolerance in both directions", "[signature]") {
  auto config = config_for(Scheme::stripe, "whsec_test_5VdLk0tW3qX9");
  const std::string body = R"({"id":"evt_1","type":"charge.succeeded"})";
  auto headers = lookup({{"Stripe-Signature",
                          "t=1700000000,v1=c7e6e0f29685b32cad9a957f9aa566daf356b647581dcd815fdf1a2"
                          "74641de9c"}});
  // The header's timestamp stays k_t; moving "now" puts it in the past or the future.
  CHECK(verify(config, headers, body, k_t + 299).ok);
  CHECK(verify(config, headers, body, k_t - 299).ok);
  CHECK(verify(config, headers, body, k_t + 300).ok);
  CHECK(verify(config, headers, body, k_t - 300).ok);
  auto past = verify(config, headers, body, k_t + 301);
  CHECK_FALSE(past.ok);
  CHECK(past.problem == "timestamp 1700000000 is 301s away from now (tolerance 300s)");
  auto future = verify(config, headers, body, k_t - 301);
  CHECK_FALSE(future.ok);
  CHECK(future.problem == "timestamp 1700000000 is 301s away from now (tolerance 300s)");

  config.tolerance_s = 3600;
  CHECK(verify(config, headers, body, k_t + 3600).ok);
  CHECK_FALSE(verify(config, headers, body, k_t + 3601).ok);
  config.tolerance_s = 0;
  CHECK(verify(config, headers, body, k_t).ok);
  CHECK_FALSE(verify(config, headers, body, k_t + 1).ok);
}

TEST_CASE("stripe: extreme timestamps are measured without overflow", "[signature]") {
  auto config = config_for(Scheme::stripe, "whsec_x");
  const std::string t = "9223372036854775807";  // INT64_MAX
  std::string header = "t=" + t + ",v1=" + to_hex(hmac_sha256("whsec_x", t + ".{}"));
  auto verdict = verify(config, lookup({{"Stripe-Signature", header}}), "{}",
                        std::numeric_limits<int64_t>::min());
  CHECK_FALSE(verdict.ok);
  CHECK(verdict.problem ==
        "timestamp 9223372036854775807 is 18446744073709551615s away from now (tolerance 300s)");
}

// ---------------------------------------------------------------------------------------------
// standard-webhooks

TEST_CASE("standard-webhooks: the reference libraries' published vector", "[signature]") {
  // github.com/standard-webhooks/standard-webhooks, libraries/*/ tests ("test_sign_function"):
  // secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, id msg_p5jXN8AQM9LWM0D4loKWxJek,
  // timestamp 1614265330, payload {"test": 2432232314}.
  auto config = config_for(Scheme::standard_webhooks, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  auto headers = lookup({{"webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"},
                         {"webhook-timestamp", "1614265330"},
                         {"webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}});
  const std::string body = R"({"test": 2432232314})";
  CHECK(verify(config, headers, body, 1614265330).ok);
  // The libraries accept the secret with or without its prefix.
  config.secret = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  CHECK(verify(config, headers, body, 1614265330).ok);
  // Their "invalid signature" case: the last base64 character changed.
  auto tampered =
      lookup({{"webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"},
              {"webhook-timestamp", "1614265330"},
              {"webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="}});
  CHECK(verify(config, tampered, body, 1614265330).problem == "signature does not match");
}

TEST_CASE("standard-webhooks: own vector, lists, tampering", "[signature]") {
  // Key: base64 of "idem-standard-webhooks!!".
  auto config = config_for(Scheme::standard_webhooks, "whsec_aWRlbS1zdGFuZGFyZC13ZWJob29rcyEh");
  const std::string body = R"({"type":"invoice.paid"})";
  const std::string good = "v1,wNUC+tAQFP5brdudcPPXOKH+PI1CrGLWgwQkchNp3XM=";
  const std::string good_b64 = good.substr(3);
  Headers base = {
      {"Webhook-Id", "msg_2abc"}, {"Webhook-Timestamp", "1700000000"}, {"Webhook-Signature", good}};
  auto with = [&](Headers changes, std::string_view payload = {}) {
    Headers headers = base;
    for (auto& [name, value] : changes) {
      if (value == "<absent>")
        headers.erase(name);
      else
        headers[name] = value;
    }
    return verify(config, lookup(headers), payload.empty() ? std::string_view(body) : payload, k_t);
  };

  CHECK(with({}).ok);

  SECTION("lists: other versions ignored, any v1 may match") {
    // v1a is the asymmetric (ed25519) version; its value here would even be our MAC.
    CHECK(with({{"Webhook-Signature", "v1a," + good_b64 + " " + good}}).ok);
    CHECK(with({{"Webhook-Signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= " + good}})
              .ok);
    CHECK(with({{"Webhook-Signature", "v2,abc " + good + " v1,bm9wZQ=="}}).ok);
    CHECK(with({{"Webhook-Signature", "v1,not*base64  " + good}}).ok);  // doubled space
    CHECK(with({{"Webhook-Signature", "v1a," + good_b64}}).problem ==
          "webhook-signature has no v1 signature");
    CHECK(with({{"Webhook-Signature", "v1a," + good_b64 + " v2," + good_b64}}).problem ==
          "webhook-signature has no v1 signature");
    CHECK(with({{"Webhook-Signature", good_b64}}).problem ==
          "webhook-signature has no v1 signature");
    CHECK(with({{"Webhook-Signature", "v1,bm9wZQ=="}}).problem == "signature does not match");
    CHECK(with({{"Webhook-Signature", "v1,%%%"}}).problem == "signature does not match");
  }
  SECTION("body, id and timestamp are all signed") {
    CHECK(with({}, R"({"type":"invoice.paie"})").problem == "signature does not match");
    CHECK(with({{"Webhook-Id", "msg_2abd"}}).problem == "signature does not match");
    CHECK(with({{"Webhook-Timestamp", "1700000001"}}).problem == "signature does not match");
  }
  SECTION("wrong secret") {
    config.secret = "whsec_aWRlbS1zdGFuZGFyZC13ZWJob29rcyE/";
    CHECK(with({}).problem == "signature does not match");
    // The raw text of the secret is not the key.
    auto text_keyed =
        with({{"Webhook-Signature",
               "v1," + idem::util::to_base64(hmac_sha256("whsec_aWRlbS1zdGFuZGFyZC13ZWJob29rcyEh",
                                                         "msg_2abc.1700000000." + body))}});
    config.secret = "whsec_aWRlbS1zdGFuZGFyZC13ZWJob29rcyEh";
    CHECK_FALSE(text_keyed.ok);
  }
  SECTION("secrets that are not base64") {
    for (const char* bad : {"whsec_not base64!", "whsec_abc", "plain-text-secret"}) {
      INFO(bad);
      config.secret = bad;
      CHECK(with({}).problem == "secret is not base64");
    }
    config.secret = "whsec_";
    CHECK(with({}).problem == "secret is empty");
  }
  SECTION("missing and malformed headers") {
    CHECK(with({{"Webhook-Id", "<absent>"}}).problem == "webhook-id is missing");
    CHECK(with({{"Webhook-Timestamp", "<absent>"}}).problem == "webhook-timestamp is missing");
    CHECK(with({{"Webhook-Signature", "<absent>"}}).problem == "webhook-signature is missing");
    CHECK(with({{"Webhook-Signature", " "}}).problem == "webhook-signature is empty");
    CHECK(with({{"Webhook-Timestamp", "hello"}}).problem ==
          "webhook-timestamp is not a unix timestamp");
    CHECK(with({{"Webhook-Timestamp", "1700000000.5"}}).problem ==
          "webhook-timestamp is not a unix timestamp");
  }
  SECTION("timestamp tolerance in both directions") {
    auto headers = lookup(base);
    CHECK(verify(config, headers, body, k_t + 299).ok);
    CHECK(verify(config, headers, body, k_t - 299).ok);
    CHECK(verify(config, headers, body, k_t + 301).problem ==
          "timestamp 1700000000 is 301s away from now (tolerance 300s)");
    CHECK(verify(config, headers, body, k_t - 301).problem ==
          "timestamp 1700000000 is 301s away from now (tolerance 300s)");
  }
}

TEST_CASE("standard-webhooks: Svix's header names, never mixed with the others", "[signature]") {
  // The own vector above under svix- names: the same MAC, as Svix signs what Standard Webhooks
  // signs.
  auto config = config_for(Scheme::standard_webhooks, "whsec_aWRlbS1zdGFuZGFyZC13ZWJob29rcyEh");
  const std::string body = R"({"type":"invoice.paid"})";
  const std::string good = "v1,wNUC+tAQFP5brdudcPPXOKH+PI1CrGLWgwQkchNp3XM=";
  Headers svix = {
      {"svix-id", "msg_2abc"}, {"svix-timestamp", "1700000000"}, {"svix-signature", good}};
  CHECK(verify(config, lookup(svix), body, k_t).ok);
  Headers upper = {{"Svix-Id", "msg_2abc"},
                   {"Svix-Timestamp", "1700000000"},
                   {"Svix-Signature", "v1,bm9wZQ== " + good}};
  CHECK(verify(config, lookup(upper), body, k_t).ok);
  // The id is signed under these names too.
  svix["svix-id"] = "msg_2abd";
  CHECK(verify(config, lookup(svix), body, k_t).problem == "signature does not match");
  svix["svix-id"] = "msg_2abc";
  // Problems name the headers of the set in use.
  Headers no_timestamp = {{"svix-id", "msg_2abc"}, {"svix-signature", good}};
  CHECK(verify(config, lookup(no_timestamp), body, k_t).problem == "svix-timestamp is missing");
  Headers v1a = {
      {"svix-id", "msg_2abc"}, {"svix-timestamp", "1700000000"}, {"svix-signature", "v1a,abc"}};
  CHECK(verify(config, lookup(v1a), body, k_t).problem == "svix-signature has no v1 signature");
  CHECK(verify(config, lookup(svix), body, k_t + 301).problem ==
        "timestamp 1700000000 is 301s away from now (tolerance 300s)");
  // One webhook- header present: the webhook- set is used, and it is incomplete.
  Headers mixed = svix;
  mixed["webhook-id"] = "msg_other";
  CHECK(verify(config, lookup(mixed), body, k_t).problem == "webhook-timestamp is missing");
}

// ---------------------------------------------------------------------------------------------
// shopify

TEST_CASE("shopify: own vector (base64), tampering, malformed", "[signature]") {
  // Shopify's docs describe a base64 HMAC-SHA256 of the raw body keyed by the app's secret but
  // publish no fixed vector; this one is our own.
  auto config = config_for(Scheme::shopify, "shpss_idem");
  const std::string body = R"({"id":820982911946154508})";
  const std::string good = "b1wVkrT1IIysHh5/alP0wGCr37hHTt6VOtvfS98maTU=";
  auto with = [&](std::string header, std::string_view payload = {}) {
    return verify(config, lookup({{"X-Shopify-Hmac-Sha256", std::move(header)}}),
                  payload.empty() ? std::string_view(body) : payload, k_t);
  };

  CHECK(with(good).ok);
  CHECK(verify(config, lookup({{"x-shopify-hmac-sha256", good}}), body, k_t).ok);
  CHECK(with(good, R"({"id":820982911946154509})").problem == "signature does not match");
  CHECK(verify(config, lookup({}), body, k_t).problem == "X-Shopify-Hmac-Sha256 is missing");
  config.secret = "shpss_other";
  CHECK(with(good).problem == "signature does not match");
  config.secret = "shpss_idem";
  // Base64 is case-sensitive: unlike hex, an upper-cased signature is a different one.
  CHECK_FALSE(with(upper(good)).ok);
  // The right MAC in the wrong encoding: 64 hex digits are also valid base64, of 48 bytes.
  CHECK(with("6f5c1592b4f5208cac1e1e7f6a53f4c060abdfb8474ede953adbdf4bdf266935").problem ==
        "signature does not match");
  CHECK(with("b1wVkrT1IIysHh5_alP0wGCr37hHTt6VOtvfS98maTU=").problem ==
        "X-Shopify-Hmac-Sha256 is not in the form <base64>");
  CHECK(with("b1wVkrT1IIysHh5/alP0wGCr37hHTt6VOtvfS98maTU").problem ==
        "X-Shopify-Hmac-Sha256 is not in the form <base64>");
  CHECK(with("AAAA").problem == "signature does not match");
}

// ---------------------------------------------------------------------------------------------
// slack

namespace {
// api.slack.com/authentication/verifying-requests-from-slack (now docs.slack.dev), the worked
// example under "Validating a request".
const std::string k_slack_doc_body =
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id="
    "G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-"
    "collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%"
    "2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121."
    "803a0bc887a14d10d2c447fce8b6703c";
}  // namespace

TEST_CASE("slack: the example published in Slack's docs", "[signature]") {
  auto config = config_for(Scheme::slack, "8f742231b10e8888abcd99yyyzzz85a5");
  const std::string sig = "a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
  auto headers =
      lookup({{"X-Slack-Request-Timestamp", "1531420618"}, {"X-Slack-Signature", "v0=" + sig}});
  CHECK(verify(config, headers, k_slack_doc_body, 1531420618 + 60).ok);
  CHECK(verify(config,
               lookup({{"x-slack-request-timestamp", "1531420618"},
                       {"x-slack-signature", "v0=" + upper(sig)}}),
               k_slack_doc_body, 1531420618)
            .ok);
  // Years later, the same request is a replay.
  CHECK(verify(config, headers, k_slack_doc_body, k_t).problem ==
        "timestamp 1531420618 is 168579382s away from now (tolerance 300s)");
}

TEST_CASE("slack: own vector, tampering, tolerance", "[signature]") {
  auto config = config_for(Scheme::slack, "slack-signing-secret");
  const std::string body = R"({"type":"event_callback","event_id":"Ev01"})";
  const std::string good = "v0=b267c736bd224b65ec14717c3ea2721405c0c90c903a9dd3e66299c1e60472b8";
  auto with = [&](std::optional<std::string> ts, std::optional<std::string> sig, int64_t now = k_t,
                  std::string_view payload = {}) {
    Headers headers;
    if (ts) headers["X-Slack-Request-Timestamp"] = *ts;
    if (sig) headers["X-Slack-Signature"] = *sig;
    return verify(config, lookup(headers), payload.empty() ? std::string_view(body) : payload, now);
  };

  CHECK(with("1700000000", good).ok);
  CHECK(with("1700000000", upper(good.substr(3)).insert(0, "v0=")).ok);
  CHECK(with("1700000000", good, k_t, R"({"type":"event_callback","event_id":"Ev02"})").problem ==
        "signature does not match");
  CHECK(with("1700000001", good, k_t).problem == "signature does not match");
  CHECK(with(std::nullopt, good).problem == "X-Slack-Request-Timestamp is missing");
  CHECK(with("1700000000", std::nullopt).problem == "X-Slack-Signature is missing");
  CHECK(with("yesterday", good).problem == "X-Slack-Request-Timestamp is not a unix timestamp");
  CHECK(with("1700000000", good.substr(3)).problem ==
        "X-Slack-Signature is not in the form v0=<hex>");
  CHECK(with("1700000000", "v1=" + good.substr(3)).problem ==
        "X-Slack-Signature is not in the form v0=<hex>");

  config.secret = "slack-signing-secreT";
  CHECK(with("1700000000", good).problem == "signature does not match");
  config.secret = "slack-signing-secret";

  CHECK(with("1700000000", good, k_t + 299).ok);
  CHECK(with("1700000000", good, k_t - 299).ok);
  CHECK(with("1700000000", good, k_t + 301).problem ==
        "timestamp 1700000000 is 301s away from now (tolerance 300s)");
  CHECK(with("1700000000", good, k_t - 301).problem ==
        "timestamp 1700000000 is 301s away from now (tolerance 300s)");
}

// ---------------------------------------------------------------------------------------------
// hmac-sha256 (generic)

TEST_CASE("hmac-sha256: header, encoding and prefix from the config", "[signature]") {
  auto config = config_for(Scheme::hmac_sha256, "generic-secret");
  config.header = "X-Signature";
  const std::string body = "ping";
  const std::string hex = "ba477d1405eba228e870b01c708094877d4daac39640fa676a05b5490912d59f";
  const std::string b64 = "ukd9FAXroijocLAccICUh31NqsOWQPpnagW1SQkS1Z8=";
  auto with = [&](std::string header, std::string_view payload = "ping") {
    return verify(config, lookup({{"x-signature", std::move(header)}}), payload, k_t);
  };

  SECTION("hex, no prefix") {
    CHECK(with(hex).ok);
    CHECK(with(upper(hex)).ok);
    CHECK(with(hex, "pong").problem == "signature does not match");
    CHECK(with(b64).problem == "X-Signature is not in the form <hex>");
    CHECK(with("sha256=" + hex).problem == "X-Signature is not in the form <hex>");
  }
  SECTION("hex with a prefix: required, then stripped") {
    config.prefix = "sha256=";
    CHECK(with("sha256=" + hex).ok);
    CHECK(with("sha256=" + upper(hex)).ok);
    CHECK(with(hex).problem == "X-Signature is not in the form sha256=<hex>");
    CHECK(with("sha1=" + hex).problem == "X-Signature is not in the form sha256=<hex>");
  }
  SECTION("base64") {
    config.encoding = SignatureConfig::Encoding::base64;
    CHECK(with(b64).ok);
    CHECK(with(b64, "pinG").problem == "signature does not match");
    CHECK(with(hex).problem == "signature does not match");  // hex digits are base64 too
    CHECK(with(hex + "=").problem == "X-Signature is not in the form <base64>");
    CHECK(with("").problem == "X-Signature is empty");
    config.prefix = "v1=";
    CHECK(with("v1=" + b64).ok);
    CHECK(with(b64).problem == "X-Signature is not in the form v1=<base64>");
  }
  SECTION("wrong secret; the problem does not echo it") {
    config.secret = "generic-secreT";
    auto verdict = with(hex);
    CHECK(verdict.problem == "signature does not match");
    CHECK(verdict.problem.find("secre") == std::string::npos);
  }
  SECTION("missing header, and no header configured") {
    CHECK(verify(config, lookup({}), body, k_t).problem == "X-Signature is missing");
    config.header.clear();
    CHECK(verify(config, lookup({{"X-Signature", hex}}), body, k_t).problem ==
          "no signature header is configured");
  }
  SECTION("no timestamp: now does not matter") {
    CHECK(verify(config, lookup({{"X-Signature", hex}}), body, 0).ok);
  }
}

}  // namespace unit_signature
