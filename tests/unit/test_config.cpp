// The `idem serve` config file (serve/config.hpp): values, defaults, and one exact message per
// mistake.
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "front/config_fields.hpp"
#include "serve/config.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_config {

using idem::front::ConfigError;
using idem::front::EnvLookup;
using idem::hooks::Hook;
using idem::hooks::KeySource;
using idem::hooks::NoKey;
using idem::hooks::Scheme;
using idem::hooks::SignatureConfig;
using idem::serve::Config;
using idem::serve::parse_config;

namespace {

constexpr int64_t k_second = 1000;
constexpr int64_t k_hour = 3600 * k_second;

std::optional<std::string> fake_env(const std::string& name) {
  if (name == "GITHUB_WEBHOOK_SECRET") return "gh-secret";
  if (name == "STRIPE_SECRET") return "whsec_stripe";
  if (name == "GENERIC_SECRET") return "generic";
  if (name == "STD_SECRET") return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  if (name == "STD_SECRET_BARE") return "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  if (name == "STD_SECRET_PREFIX_ONLY") return "whsec_";
  if (name == "STD_SECRET_NOT_BASE64") return "whsec_not*base64*value";
  if (name == "STD_SECRET_UNPADDED") return "whsec_c2VjcmV0MQ";
  if (name == "EMPTY_SECRET") return "";
  return std::nullopt;
}
const EnvLookup k_env = fake_env;

// contract §6's example.
const char* const k_contract_example = R"({
  "hooks": [
    {
      "path": "/hooks/github",
      "command": ["./handlers/github.sh"],
      "signature": {"scheme": "github", "secret_env": "GITHUB_WEBHOOK_SECRET"},
      "key": {"header": "X-GitHub-Delivery"},
      "ttl": "72h", "timeout": "30s", "max_body": "1MiB",
      "async": false, "max_concurrency": 4, "retry_abandoned": false
    },
    {
      "path": "/hooks/orders",
      "command": ["./handlers/order.sh"],
      "key": {"json": "/order/id"}
    }
  ]
})";

// The message parse_config throws for `text`, or "(parsed)".
std::string error_of(const std::string& text) {
  try {
    parse_config("serve.json", text, k_env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(parsed)";
}

// A config of one hook at /h running `true`, with `fields` added to it.
std::string one_hook(const std::string& fields) {
  return R"({"hooks": [{"path": "/h", "command": ["true"])" +
         (fields.empty() ? std::string() : ", " + fields) + "}]}";
}

std::string hook_error(const std::string& fields) { return error_of(one_hook(fields)); }

Hook parse_hook(const std::string& fields) {
  Config config = parse_config("serve.json", one_hook(fields), k_env);
  REQUIRE(config.hooks.size() == 1);
  return config.hooks[0];
}

}  // namespace

// A quoted value in a message is valid UTF-8 whatever it held: a hooks file's template is read
// before it is parsed, so an environment variable's name may hold any byte.
TEST_CASE("config: a quoted value escapes what is not valid UTF-8", "[config]") {
  using idem::front::config_fields::quote;
  CHECK(quote("UNSET\xdf"
              "ID") == "'UNSET\\xdfID'");
  CHECK(quote("caf\xc3\xa9") == "'caf\xc3\xa9'");                       // é, kept
  CHECK(quote("\xe2\x82") == "'\\xe2\\x82'");                           // cut short
  CHECK(quote("\xed\xa0\x80") == "'\\xed\\xa0\\x80'");                  // a surrogate
  CHECK(quote("\xf0\x9f\x98\x80 a\tb") == "'\xf0\x9f\x98\x80 a\\tb'");  // U+1F600, a tab
}

TEST_CASE("config: the contract's example parses to its values", "[config]") {
  Config config = parse_config("serve.json", k_contract_example, k_env);
  REQUIRE(config.hooks.size() == 2);

  const Hook& github = config.hooks[0];
  CHECK(github.path == "/hooks/github");
  CHECK(github.command == std::vector<std::string>{"./handlers/github.sh"});
  REQUIRE(github.signature.has_value());
  CHECK(github.signature->scheme == Scheme::github);
  CHECK(github.signature->secret == "gh-secret");
  CHECK(github.signature->header.empty());
  CHECK(github.signature->prefix.empty());
  CHECK(github.signature->encoding == SignatureConfig::Encoding::hex);
  CHECK(github.signature->tolerance_s == 300);
  CHECK(github.secret_env == "GITHUB_WEBHOOK_SECRET");
  REQUIRE(github.key.has_value());
  CHECK(github.key->kind == KeySource::header);
  CHECK(github.key->name == "X-GitHub-Delivery");
  CHECK(github.ttl_ms == 72 * k_hour);
  CHECK(github.timeout_ms == 30 * k_second);
  CHECK(github.max_body == 1024 * 1024);
  CHECK_FALSE(github.async);
  CHECK(github.max_concurrency == 4);
  CHECK_FALSE(github.retry_abandoned);

  const Hook& orders = config.hooks[1];
  CHECK(orders.path == "/hooks/orders");
  CHECK(orders.command == std::vector<std::string>{"./handlers/order.sh"});
  CHECK_FALSE(orders.signature.has_value());
  CHECK(orders.secret_env.empty());
  REQUIRE(orders.key.has_value());
  CHECK(orders.key->kind == KeySource::json);
  CHECK(orders.key->name == "/order/id");
}

TEST_CASE("config: every field but path and command has a default", "[config]") {
  Hook hook = parse_hook("");
  CHECK(hook.path == "/h");
  CHECK(hook.command == std::vector<std::string>{"true"});
  CHECK_FALSE(hook.signature.has_value());
  CHECK(hook.secret_env.empty());
  CHECK_FALSE(hook.key.has_value());
  CHECK(hook.ttl_ms == 24 * k_hour);
  CHECK(hook.timeout_ms == 30 * k_second);
  CHECK(hook.max_body == 1024 * 1024);
  CHECK_FALSE(hook.async);
  CHECK(hook.max_concurrency == 4);
  CHECK(hook.max_queue == 64);
  CHECK_FALSE(hook.retry_abandoned);
  CHECK(hook.methods == std::vector<std::string>{"POST"});
}

TEST_CASE("config: the other settings are read as given", "[config]") {
  Config config = parse_config("serve.json", R"({"hooks": [{"path": "/h",
    "command": ["./h.sh", "--flag", ""], "methods": ["POST", "PUT"],
    "async": true, "max_concurrency": 1024, "max_queue": 0, "retry_abandoned": true,
    "ttl": "1h30m", "timeout": "250ms", "max_body": "512KiB"}]})",
                               k_env);
  REQUIRE(config.hooks.size() == 1);
  const Hook& hook = config.hooks[0];
  CHECK(hook.command == std::vector<std::string>{"./h.sh", "--flag", ""});
  CHECK(hook.methods == std::vector<std::string>{"POST", "PUT"});
  CHECK(hook.async);
  CHECK(hook.max_concurrency == 1024);
  CHECK(hook.max_queue == 0);
  CHECK(hook.retry_abandoned);
  CHECK(hook.ttl_ms == 90 * 60 * k_second);
  CHECK(hook.timeout_ms == 250);
  CHECK(hook.max_body == 512 * 1024);
}

TEST_CASE("config: durations and sizes may be integers of seconds and bytes", "[config]") {
  Hook hook = parse_hook(R"("ttl": 3600, "timeout": 5, "max_body": 1073741824)");
  CHECK(hook.ttl_ms == k_hour);
  CHECK(hook.timeout_ms == 5 * k_second);
  CHECK(hook.max_body == 1024 * 1024 * 1024);
  CHECK(hook_error(R"("ttl": -5)") == "serve.json: hooks[0].ttl: bad duration '-5'");
  CHECK(hook_error(R"("max_body": -1)") == "serve.json: hooks[0].max_body: bad size '-1'");
  CHECK(hook_error(R"("ttl": 1.5)") ==
        "serve.json: hooks[0].ttl: expected a duration such as \"30s\" or whole seconds, got a "
        "number with a fraction or exponent");
  CHECK(hook_error(R"("max_body": true)") ==
        "serve.json: hooks[0].max_body: expected a size such as \"1MiB\" or bytes, got true");
  // Past core/duration's limits (100 years, 1 TiB) a number is as bad as a typo.
  CHECK(hook_error(R"("ttl": 18446744073709551615)") ==
        "serve.json: hooks[0].ttl: bad duration '18446744073709551615'");
}

TEST_CASE("config: signatures of each scheme", "[config]") {
  Hook stripe = parse_hook(
      R"("signature": {"scheme": "stripe", "secret_env": "STRIPE_SECRET", "tolerance": "10m"})");
  REQUIRE(stripe.signature.has_value());
  CHECK(stripe.signature->scheme == Scheme::stripe);
  CHECK(stripe.signature->secret == "whsec_stripe");
  CHECK(stripe.signature->tolerance_s == 600);
  CHECK(stripe.secret_env == "STRIPE_SECRET");

  Hook generic = parse_hook(R"("signature": {"scheme": "hmac-sha256", "secret_env":
    "GENERIC_SECRET", "header": "X-Signature", "encoding": "base64", "prefix": "sha256="})");
  REQUIRE(generic.signature.has_value());
  CHECK(generic.signature->scheme == Scheme::hmac_sha256);
  CHECK(generic.signature->secret == "generic");
  CHECK(generic.signature->header == "X-Signature");
  CHECK(generic.signature->encoding == SignatureConfig::Encoding::base64);
  CHECK(generic.signature->prefix == "sha256=");

  Hook hex = parse_hook(R"("signature": {"scheme": "hmac-sha256", "secret_env":
    "GENERIC_SECRET", "header": "X-Signature"})");
  CHECK(hex.signature->encoding == SignatureConfig::Encoding::hex);
  CHECK(hex.signature->prefix.empty());

  for (const char* scheme : {"github", "stripe", "shopify", "slack"}) {
    INFO(scheme);
    Hook hook = parse_hook(std::string(R"("signature": {"scheme": ")") + scheme +
                           R"(", "secret_env": "GENERIC_SECRET"})");
    CHECK(hook.signature.has_value());
  }
  Hook standard =
      parse_hook(R"("signature": {"scheme": "standard-webhooks", "secret_env": "STD_SECRET"})");
  REQUIRE(standard.signature.has_value());
  // Kept as the variable holds it; the scheme decodes it per delivery.
  CHECK(standard.signature->secret == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
}

TEST_CASE("config: an unknown scheme lists the known ones", "[config]") {
  std::string text = R"({"hooks": [{"path": "/a", "command": ["a"]},
    {"path": "/b", "command": ["b"], "signature": {"scheme": "githb", "secret_env": "X"}}]})";
  CHECK(error_of(text) ==
        "serve.json: hooks[1].signature.scheme: unknown scheme 'githb' (use github, stripe, "
        "standard-webhooks, shopify, slack or hmac-sha256)");
  // Exact names only.
  CHECK(hook_error(R"("signature": {"scheme": "GitHub", "secret_env": "GENERIC_SECRET"})")
            .starts_with("serve.json: hooks[0].signature.scheme: unknown scheme 'GitHub' (use "));
}

TEST_CASE("config: text that is not JSON says where", "[config]") {
  std::string message = error_of("{\"hooks\": [\n  {\"path\": \"/a\",}\n]}");
  CHECK(message.starts_with("serve.json: not JSON: parse error at line 2, column 17: "));
  CHECK(message.find("[json.exception") == std::string::npos);
  CHECK(error_of("").starts_with("serve.json: not JSON: parse error at line 1, column 1: "));
}

TEST_CASE("config: trailing garbage after the document is not JSON", "[config]") {
  std::string message = error_of(one_hook("") + " x");
  CHECK(message.starts_with("serve.json: not JSON: parse error at line 1, column "));
  CHECK(message.find("expected end of input") != std::string::npos);
  CHECK(error_of(one_hook("") + one_hook("")).starts_with("serve.json: not JSON: "));
}

TEST_CASE("config: unknown fields are errors wherever they are", "[config]") {
  CHECK(hook_error(R"("tll": "1h")") == "serve.json: hooks[0]: unknown field 'tll'");
  CHECK(error_of(R"({"hooks": [{"path": "/h", "command": ["true"]}], "hoks": []})") ==
        "serve.json: unknown field 'hoks'");
  CHECK(hook_error(R"("signature": {"scheme": "github", "secret_env": "GENERIC_SECRET",
    "tolerence": 5})") == "serve.json: hooks[0].signature: unknown field 'tolerence'");
  CHECK(hook_error(R"("key": {"jsn": "/id"})") == "serve.json: hooks[0].key: unknown field 'jsn'");
}

TEST_CASE("config: the notifications section limits notify commands", "[config][notify]") {
  Config config = parse_config("serve.json", one_hook(""), k_env);
  CHECK(config.notifications.max_running == 4);
  CHECK(config.notifications.max_queue == 64);
  config =
      parse_config("serve.json",
                   R"({"notifications": {"max_running": 2, "max_queue": 0}, "hooks": [{"path": "/h",
          "command": ["true"]}]})",
                   k_env);
  CHECK(config.notifications.max_running == 2);
  CHECK(config.notifications.max_queue == 0);
  CHECK(error_of(R"({"notifications": {"max_running": 0}, "hooks": [{"path": "/h",
                     "command": ["true"]}]})")
            .starts_with("serve.json: notifications.max_running: "));
  CHECK(error_of(R"({"notifications": {"max_queue": 5, "max": 1}, "hooks": []})") ==
        "serve.json: notifications: unknown field 'max'");
  // A section of settings configures no route: the config still needs one.
  CHECK(error_of(R"({"notifications": {}})") ==
        "serve.json: missing field 'hooks' or 'proxy' or 'schedules'");
  // "schedules": its notify alone is enough for a daemon (contract §11).
  CHECK(error_of(R"({"schedules": {}})") ==
        "serve.json: schedules: has no \"notify\": give one, or a \"hooks\" or \"proxy\" section");
  CHECK(error_of(R"({"schedules": {"notify": {"command": ""}}})")
            .starts_with("serve.json: schedules.notify.command: is empty"));
  CHECK(error_of(R"({"schedules": {"every": "1m", "notify": {"command": "x"}}})") ==
        "serve.json: schedules: unknown field 'every'");
  CHECK(error_of(R"({"schedules": {"notify": {"command": "x", "on": "change"}}})") == "(parsed)");
  CHECK(hook_error(R"("notify": {"command": "x", "output_bytes": "1MiB"})") == "(parsed)");
  CHECK(parse_hook(R"("notify": {"command": "x", "output_bytes": "1MiB"})").notify->stream_bytes ==
        1 << 20);
  CHECK(parse_hook(R"("notify": {"command": "x"})").notify->stream_bytes == 64 * 1024);
  CHECK(hook_error(R"("notify": {"command": "x", "output_bytes": "65MiB"})") ==
        "serve.json: hooks[0].notify.output_bytes: is over 64MiB, the most a notify document "
        "carries");
}

TEST_CASE("config: a field given twice is an error", "[config]") {
  CHECK(hook_error(R"("ttl": "1h", "ttl": "2h")") == "serve.json: hooks[0]: duplicate field 'ttl'");
  CHECK(error_of(R"({"hooks": [], "hooks": []})") == "serve.json: duplicate field 'hooks'");
  CHECK(hook_error(R"("key": {"header": "A", "header": "B"})") ==
        "serve.json: hooks[0].key: duplicate field 'header'");
  // Found before fields are checked, so even inside an unknown field; odd names are quoted.
  CHECK(hook_error(R"("x y": [{"a": 1, "a": 2}])") ==
        "serve.json: hooks[0]['x y'][0]: duplicate field 'a'");
}

TEST_CASE("config: bad durations and sizes name the field", "[config]") {
  CHECK(hook_error(R"("ttl": "5x")") == "serve.json: hooks[0].ttl: bad duration '5x'");
  CHECK(hook_error(R"("timeout": "")") == "serve.json: hooks[0].timeout: bad duration ''");
  CHECK(hook_error(R"("max_body": "1XB")") == "serve.json: hooks[0].max_body: bad size '1XB'");
}

TEST_CASE("config: limits on ttl, timeout and max_body", "[config]") {
  CHECK(hook_error(R"("timeout": "0s")") == "serve.json: hooks[0].timeout: must be more than 0");
  CHECK(hook_error(R"("ttl": 0)") == "serve.json: hooks[0].ttl: must be more than 0");
  CHECK(hook_error(R"("max_body": 0)") == "serve.json: hooks[0].max_body: must be more than 0");
  CHECK(hook_error(R"("max_body": "2GiB")") ==
        "serve.json: hooks[0].max_body: must be at most 1GiB, got 2GiB");
  CHECK(parse_hook(R"("max_body": "1GiB")").max_body == int64_t(1) << 30);
}

TEST_CASE("config: a path is used by one hook only", "[config]") {
  std::string text = R"({"hooks": [{"path": "/a", "command": ["a"]},
    {"path": "/b", "command": ["b"]}, {"path": "/a", "command": ["c"]}]})";
  CHECK(error_of(text) == "serve.json: hooks[2].path: '/a' is used by hooks[0] too");
}

TEST_CASE("config: paths start with '/' and hold no whitespace, query or fragment", "[config]") {
  auto path_error = [](const std::string& path) {
    return error_of(R"({"hooks": [{"path": )" + path + R"(, "command": ["x"]}]})");
  };
  CHECK(path_error(R"("hooks/a")") == "serve.json: hooks[0].path: 'hooks/a' must start with '/'");
  CHECK(path_error(R"("")") == "serve.json: hooks[0].path: '' must start with '/'");
  CHECK(path_error(R"("/a b")") ==
        "serve.json: hooks[0].path: '/a b' contains whitespace or a control character");
  CHECK(path_error(R"("/a?x=1")") ==
        "serve.json: hooks[0].path: '/a?x=1' contains '?' (a hook is matched on the path alone, "
        "without query or fragment)");
  CHECK(path_error(R"("/a#top")").starts_with("serve.json: hooks[0].path: '/a#top' contains '#'"));
  CHECK(path_error(R"("/caf\u00e9")") ==
        "serve.json: hooks[0].path: '/café' contains a non-ASCII character (a request path "
        "cannot)");
  CHECK(path_error(R"("/healthz")") ==
        "serve.json: hooks[0].path: '/healthz' is the daemon's own endpoint");
  CHECK(path_error("5") == "serve.json: hooks[0].path: expected a string, got an integer");
  CHECK(error_of(R"({"hooks": [{"command": ["x"]}]})") ==
        "serve.json: hooks[0]: missing field 'path'");
}

TEST_CASE("config: secrets come from the environment only", "[config]") {
  CHECK(hook_error(R"("signature": {"scheme": "github", "secret_env": "GITHUB_SECRET_UNSET"})") ==
        "serve.json: hooks[0].signature.secret_env: environment variable GITHUB_SECRET_UNSET of "
        "hook /h is not set (or empty)");
  CHECK(hook_error(R"("signature": {"scheme": "github", "secret_env": "EMPTY_SECRET"})") ==
        "serve.json: hooks[0].signature.secret_env: environment variable EMPTY_SECRET of hook /h "
        "is not set (or empty)");
  CHECK(hook_error(R"("signature": {"scheme": "github", "secret": "hunter2"})") ==
        "serve.json: hooks[0].signature.secret: secrets are not read from the config file; put "
        "the secret in an environment variable and name that variable in \"secret_env\"");
  CHECK(hook_error(R"("secret": "hunter2")")
            .starts_with("serve.json: hooks[0].secret: secrets are not read from the config"));
  CHECK(hook_error(R"("signature": {"scheme": "github"})") ==
        "serve.json: hooks[0].signature: missing field 'secret_env'");
  CHECK(hook_error(R"("signature": {"scheme": "github", "secret_env": "MY SECRET"})") ==
        "serve.json: hooks[0].signature.secret_env: 'MY SECRET' is not an environment variable "
        "name (letters, digits and '_', not starting with a digit)");
  // The message must never show a secret's value.
  CHECK(hook_error(R"("signature": {"scheme": "nope", "secret_env": "GITHUB_WEBHOOK_SECRET"})")
            .find("gh-secret") == std::string::npos);
}

TEST_CASE("config: generic hmac-sha256 needs a header; other schemes refuse its fields",
          "[config]") {
  CHECK(hook_error(R"("signature": {"scheme": "hmac-sha256", "secret_env": "GENERIC_SECRET"})") ==
        "serve.json: hooks[0].signature: missing field 'header'");
  CHECK(hook_error(R"("signature": {"scheme": "hmac-sha256", "secret_env": "GENERIC_SECRET",
    "header": "X-Sig", "encoding": "base32"})") ==
        "serve.json: hooks[0].signature.encoding: unknown encoding 'base32' (use hex or base64)");
  CHECK(hook_error(R"("signature": {"scheme": "hmac-sha256", "secret_env": "GENERIC_SECRET",
    "header": "X Sig"})") ==
        "serve.json: hooks[0].signature.header: 'X Sig' is not a valid header name");
  CHECK(hook_error(R"("signature": {"scheme": "github", "secret_env": "GENERIC_SECRET",
    "header": "X-Sig"})") ==
        "serve.json: hooks[0].signature.header: only for scheme hmac-sha256 (github signatures "
        "have a fixed header and encoding)");
  CHECK(hook_error(R"("signature": {"scheme": "shopify", "secret_env": "GENERIC_SECRET",
    "tolerance": "5m"})") ==
        "serve.json: hooks[0].signature.tolerance: shopify signatures carry no timestamp to check "
        "a tolerance against");
  CHECK(hook_error(R"("signature": {"scheme": "slack", "secret_env": "GENERIC_SECRET",
    "tolerance": "1500ms"})") ==
        "serve.json: hooks[0].signature.tolerance: must be a whole number of seconds, at least 1s");
}

TEST_CASE("config: the top level is an object with a non-empty hooks array", "[config]") {
  CHECK(error_of(R"({"hooks": []})") == "serve.json: hooks: is empty; list at least one hook");
  CHECK(error_of(R"({"hooks": {"path": "/a"}})") ==
        "serve.json: hooks: expected an array of hooks, got an object");
  CHECK(error_of(R"({})") == "serve.json: missing field 'hooks' or 'proxy' or 'schedules'");
  CHECK(error_of(R"([])") ==
        "serve.json: expected an object with a \"hooks\" array at the top level, got an array");
  CHECK(error_of(R"({"hooks": ["/a"]})") ==
        "serve.json: hooks[0]: expected an object, got a string");
}

TEST_CASE("config: every section is optional, but the config must configure a route", "[config]") {
  // No section at all: the message names the section to add.
  CHECK(error_of(R"({})") == "serve.json: missing field 'hooks' or 'proxy' or 'schedules'");
  // Sections that are there but configure nothing: the first of them is named.
  CHECK(error_of(R"({"hooks": []})") == "serve.json: hooks: is empty; list at least one hook");
  // A member that is no section is refused before the rule: it may be a misspelt section.
  CHECK(error_of(R"({"hooks": [], "prox": {}})") == "serve.json: unknown field 'prox'");
  CHECK(error_of(R"({"hoks": [{"path": "/h", "command": ["true"]}]})") ==
        "serve.json: unknown field 'hoks'");
  CHECK(error_of(R"({"secret": "s", "hooks": []})")
            .starts_with("serve.json: secret: secrets are not read from the config file"));
  // What is wrong inside a section comes before whether it configured anything.
  CHECK(error_of(R"({"hooks": [{"path": "/h"}]})") ==
        "serve.json: hooks[0]: missing field 'command'");
  Config config =
      parse_config("serve.json", R"({"hooks": [{"path": "/h", "command": ["true"]}]})", k_env);
  CHECK(config.hooks.size() == 1);
}

TEST_CASE("config: command is a non-empty array of strings", "[config]") {
  auto command_error = [](const std::string& command) {
    return error_of(R"({"hooks": [{"path": "/a", "command": )" + command + "}]}");
  };
  CHECK(command_error("[]") ==
        "serve.json: hooks[0].command: is empty; it must name at least the program to run");
  CHECK(command_error(R"(["./a.sh", 5])") ==
        "serve.json: hooks[0].command[1]: expected a string, got an integer");
  CHECK(command_error(R"("./a.sh --flag")") ==
        "serve.json: hooks[0].command: expected an array of strings (the program and its "
        "arguments), got a string");
  CHECK(command_error(R"([""])") == "serve.json: hooks[0].command[0]: the program name is empty");
  CHECK(command_error(R"(["a", "b\u0000c"])") ==
        "serve.json: hooks[0].command[1]: 'b\\x00c' contains a NUL character");
  CHECK(error_of(R"({"hooks": [{"path": "/a"}]})") ==
        "serve.json: hooks[0]: missing field 'command'");
}

TEST_CASE("config: key is exactly one of header or json", "[config]") {
  CHECK(hook_error(R"("key": {"header": "X-Id", "json": "/id"})") ==
        "serve.json: hooks[0].key: give exactly one of {\"header\": NAME}, {\"json\": POINTER} or "
        "{\"form\": FIELD}");
  CHECK(hook_error(R"("key": {})") ==
        "serve.json: hooks[0].key: give exactly one of {\"header\": NAME}, {\"json\": POINTER} or "
        "{\"form\": FIELD}");
  CHECK(hook_error(R"("key": {"form": "a", "json": "/a"})") ==
        "serve.json: hooks[0].key: give exactly one of {\"header\": NAME}, {\"json\": POINTER} or "
        "{\"form\": FIELD}");
  CHECK(hook_error(R"("key": "X-Id")") ==
        "serve.json: hooks[0].key: expected an object, got a string");
  CHECK(hook_error(R"("key": {"header": "X Id"})") ==
        "serve.json: hooks[0].key.header: 'X Id' is not a valid header name");
  CHECK(parse_hook(R"("key": {"json": ""})").key->name.empty());
}

TEST_CASE("config: a key may come from a field of a form-encoded body", "[config]") {
  Hook hook = parse_hook(R"("key": {"form": "trigger_id"})");
  REQUIRE(hook.key.has_value());
  CHECK(hook.key->kind == KeySource::form);
  CHECK(hook.key->name == "trigger_id");
  // Any field name, as it is after decoding.
  CHECK(parse_hook(R"("key": {"form": "a b&c"})").key->name == "a b&c");
  CHECK(hook_error(R"("key": {"form": ""})") ==
        "serve.json: hooks[0].key.form: is empty; name the form field that holds the key");
  CHECK(hook_error(R"("key": {"form": 7})") ==
        "serve.json: hooks[0].key.form: expected a string, got an integer");
}

TEST_CASE("config: no_key is refuse (the default) or run", "[config]") {
  CHECK(parse_hook("").no_key == NoKey::refuse);
  CHECK(parse_hook(R"("no_key": "refuse")").no_key == NoKey::refuse);
  CHECK(parse_hook(R"("no_key": "run")").no_key == NoKey::run);
  CHECK(hook_error(R"("no_key": "skip")") ==
        "serve.json: hooks[0].no_key: unknown policy 'skip' (use refuse or run)");
  CHECK(hook_error(R"("no_key": true)") ==
        "serve.json: hooks[0].no_key: expected a string, got true");
}

TEST_CASE("config: every hook withholds every hook's secret variable", "[config]") {
  Config config = parse_config("serve.json", R"({"hooks": [
    {"path": "/a", "command": ["a"], "signature": {"scheme": "github", "secret_env": "GITHUB_WEBHOOK_SECRET"}},
    {"path": "/b", "command": ["b"]},
    {"path": "/c", "command": ["c"], "signature": {"scheme": "stripe", "secret_env": "STRIPE_SECRET"}},
    {"path": "/d", "command": ["d"], "signature": {"scheme": "shopify", "secret_env": "STRIPE_SECRET"}}
  ]})",
                               k_env);
  REQUIRE(config.hooks.size() == 4);
  const std::vector<std::string> both = {"GITHUB_WEBHOOK_SECRET", "STRIPE_SECRET"};
  for (const Hook& hook : config.hooks) {
    INFO(hook.path);
    CHECK(hook.withheld_env == both);
  }
  CHECK(parse_hook("").withheld_env.empty());
}

TEST_CASE("config: a standard-webhooks secret must be base64, checked at load", "[config]") {
  auto standard = [](const std::string& variable) {
    return hook_error(R"("signature": {"scheme": "standard-webhooks", "secret_env": ")" + variable +
                      "\"}");
  };
  // As the Standard Webhooks libraries: whsec_ optional, then base64.
  CHECK(standard("STD_SECRET") == "(parsed)");
  CHECK(standard("STD_SECRET_BARE") == "(parsed)");
  CHECK(standard("STD_SECRET_PREFIX_ONLY") ==
        "serve.json: hooks[0].signature.secret_env: environment variable STD_SECRET_PREFIX_ONLY "
        "of hook /h: a standard-webhooks secret is whsec_ followed by base64, and this one has "
        "nothing after whsec_");
  CHECK(standard("STD_SECRET_NOT_BASE64") ==
        "serve.json: hooks[0].signature.secret_env: environment variable STD_SECRET_NOT_BASE64 "
        "of hook /h: a standard-webhooks secret is whsec_ followed by base64, and this one is not "
        "base64");
  CHECK(standard("STD_SECRET_UNPADDED").ends_with("and this one is not base64"));
  CHECK(standard("GENERIC_SECRET").ends_with("and this one is not base64"));
  // The same values are fine for schemes that key the HMAC with the text itself.
  CHECK(hook_error(R"("signature": {"scheme": "stripe", "secret_env": "STD_SECRET_NOT_BASE64"})") ==
        "(parsed)");
  for (const char* variable : {"STD_SECRET_PREFIX_ONLY", "STD_SECRET_NOT_BASE64"}) {
    INFO(variable);
    CHECK(standard(variable).find("not*base64*value") == std::string::npos);
  }
}

TEST_CASE("config: a hook's path is at most 255 bytes", "[config]") {
  std::string path = "/" + std::string(254, 'p');
  CHECK(parse_config("serve.json", R"({"hooks": [{"path": ")" + path + R"(", "command": ["x"]}]})",
                     k_env)
            .hooks[0]
            .path == path);
  std::string message = error_of(R"({"hooks": [{"path": ")" + path + R"(p", "command": ["x"]}]})");
  CHECK(message.starts_with("serve.json: hooks[0].path: '/ppp"));
  CHECK(message.ends_with("' is 256 bytes; the limit is 255"));
}

TEST_CASE("config: a key's JSON pointer is checked once, at load", "[config]") {
  CHECK(hook_error(R"("key": {"json": "a/b"})") ==
        "serve.json: hooks[0].key.json: bad JSON pointer 'a/b': it must be empty or start with "
        "'/'");
  std::string bad_escape = hook_error(R"("key": {"json": "/a~2"})");
  CHECK(bad_escape.starts_with("serve.json: hooks[0].key.json: bad JSON pointer '/a~2': "));
  CHECK(bad_escape.find("[json.exception") == std::string::npos);
}

TEST_CASE("config: max_concurrency and max_queue have bounds", "[config]") {
  CHECK(hook_error(R"("max_concurrency": 0)") ==
        "serve.json: hooks[0].max_concurrency: must be between 1 and 1024, got 0");
  CHECK(hook_error(R"("max_concurrency": 1025)") ==
        "serve.json: hooks[0].max_concurrency: must be between 1 and 1024, got 1025");
  CHECK(hook_error(R"("max_queue": -1)") ==
        "serve.json: hooks[0].max_queue: must be between 0 and 100000, got -1");
  CHECK(hook_error(R"("max_queue": 18446744073709551615)") ==
        "serve.json: hooks[0].max_queue: must be between 0 and 100000, got 18446744073709551615");
  CHECK(hook_error(R"("max_concurrency": 4.0)") ==
        "serve.json: hooks[0].max_concurrency: expected an integer, got a number with a fraction "
        "or exponent");
}

TEST_CASE("config: methods are distinct upper-case tokens", "[config]") {
  CHECK(hook_error(R"("methods": ["POST", "put"])") ==
        "serve.json: hooks[0].methods[1]: 'put' is not an upper-case HTTP method such as POST or "
        "PUT");
  CHECK(hook_error(R"("methods": [])") ==
        "serve.json: hooks[0].methods: is empty; list at least one method, such as \"POST\"");
  CHECK(hook_error(R"("methods": ["POST", "POST"])") ==
        "serve.json: hooks[0].methods[1]: 'POST' is listed twice");
  CHECK(hook_error(R"("methods": "POST")") ==
        "serve.json: hooks[0].methods: expected an array of HTTP methods such as [\"POST\"], got "
        "a string");
}

TEST_CASE("config: types are checked and named", "[config]") {
  CHECK(hook_error(R"("async": "yes")") ==
        "serve.json: hooks[0].async: expected true or false, got a string");
  CHECK(hook_error(R"("retry_abandoned": 1)") ==
        "serve.json: hooks[0].retry_abandoned: expected true or false, got an integer");
  CHECK(hook_error(R"("signature": {"scheme": 1, "secret_env": "X"})") ==
        "serve.json: hooks[0].signature.scheme: expected a string, got an integer");
  CHECK(hook_error(R"("signature": null)") ==
        "serve.json: hooks[0].signature: expected an object, got null");
}

TEST_CASE("config: messages are one line whatever the file holds", "[config]") {
  CHECK(hook_error("\"t\\nl\": 1") == "serve.json: hooks[0]: unknown field 't\\nl'");
  CHECK(hook_error(R"("ttl": "1\r\nh")") == "serve.json: hooks[0].ttl: bad duration '1\\r\\nh'");
  std::string message = hook_error("\"ttl\": \"" + std::string(5000, 'x') + "\"");
  CHECK(message.size() < 200);
  CHECK(message.ends_with("xxx…'"));
  // nlohmann quotes the bytes it stopped at; an unescaped newline in a string is one of them.
  std::string broken = error_of("{\"hooks\": \"a\nb\"}");
  CHECK(broken.starts_with("serve.json: not JSON: "));
  CHECK(broken.find('\n') == std::string::npos);
}

TEST_CASE("config: ConfigError is a usage error", "[config]") {
  try {
    parse_config("serve.json", "{", k_env);
    FAIL("no error");
  } catch (const idem::UsageError& e) {
    CHECK(e.code() == idem::k_exit_usage);
  }
}

TEST_CASE("config: a hook's allow-list", "[config]") {
  CHECK(parse_hook("").allow.empty());
  Hook hook = parse_hook(R"("allow": ["10.0.0.0/8", "::1", "192.168.1.5"])");
  REQUIRE(hook.allow.size() == 3);
  CHECK(idem::net::allows(hook.allow, "10.1.2.3"));
  CHECK(idem::net::allows(hook.allow, "::1"));
  CHECK(idem::net::allows(hook.allow, "192.168.1.5"));
  CHECK_FALSE(idem::net::allows(hook.allow, "192.168.1.6"));
  CHECK_FALSE(idem::net::allows(hook.allow, "unix"));
  CHECK(hook_error(R"("allow": ["10.0.0.0/8", "10.0.0.0/33"])") ==
        "serve.json: hooks[0].allow[1]: '10.0.0.0/33' is not an address or a CIDR range (e.g. "
        "10.0.0.0/8, ::1)");
  CHECK(hook_error(R"("allow": ["localhost"])") ==
        "serve.json: hooks[0].allow[0]: 'localhost' is not an address or a CIDR range (e.g. "
        "10.0.0.0/8, ::1)");
  CHECK(hook_error(R"("allow": [])") ==
        "serve.json: hooks[0].allow: is empty (without \"allow\", every peer is served)");
  CHECK(hook_error(R"("allow": "10.0.0.0/8")") ==
        "serve.json: hooks[0].allow: expected an array of addresses and CIDR ranges, got a string");
  CHECK(hook_error(R"("allow": [8])") ==
        "serve.json: hooks[0].allow[0]: expected a string, got an integer");
}

TEST_CASE("config: the proxy's allow-list", "[config]") {
  Config config = parse_config(
      "serve.json", R"({"proxy": {"upstream": "http://127.0.0.1:1", "allow": ["fd00::/8"]}})",
      k_env);
  REQUIRE(config.proxy);
  REQUIRE(config.proxy->allow.size() == 1);
  CHECK(idem::net::allows(config.proxy->allow, "fd00::1"));
  CHECK_FALSE(idem::net::allows(config.proxy->allow, "127.0.0.1"));
  CHECK(
      error_of(R"({"proxy": {"upstream": "http://127.0.0.1:1", "allow": ["10.0.0.0/8", "x"]}})") ==
      "serve.json: proxy.allow[1]: 'x' is not an address or a CIDR range (e.g. 10.0.0.0/8, ::1)");
}

TEST_CASE("config: a hook's serial groups", "[config][serial]") {
  CHECK_FALSE(parse_hook("").serial.has_value());
  Hook whole = parse_hook(R"("serial": {})");
  REQUIRE(whole.serial.has_value());
  CHECK_FALSE(whole.serial->source.has_value());
  CHECK(whole.serial->literal.empty());
  CHECK_FALSE(whole.serial->latest);
  CHECK(whole.serial->max_pending == 10000);

  Hook by_repo = parse_hook(
      R"("serial": {"group": {"json": "/repository/full_name"}, "mode": "latest", "max_pending": 5})");
  REQUIRE(by_repo.serial->source.has_value());
  CHECK(by_repo.serial->source->kind == idem::hooks::KeySource::json);
  CHECK(by_repo.serial->source->name == "/repository/full_name");
  CHECK(by_repo.serial->latest);
  CHECK(by_repo.serial->max_pending == 5);
  CHECK(parse_hook(R"("serial": {"group": "deploys"})").serial->literal == "deploys");
  CHECK(parse_hook(R"("serial": {"group": {"header": "X-Repo"}, "mode": "fifo"})")
            .serial->source->kind == idem::hooks::KeySource::header);

  CHECK(hook_error(R"("serial": {"mode": "newest"})") ==
        "serve.json: hooks[0].serial.mode: unknown mode 'newest' (use fifo or latest)");
  CHECK(hook_error(R"("serial": {"max_pending": 0})").find("hooks[0].serial.max_pending") !=
        std::string::npos);
  CHECK(hook_error(R"("serial": {"group": ""})").find("hooks[0].serial.group") !=
        std::string::npos);
  CHECK(hook_error(R"("serial": {"group": {"json": "x"}})").find("bad JSON pointer") !=
        std::string::npos);
  CHECK(hook_error(R"("serial": {"groups": "x"})").find("groups") != std::string::npos);
  CHECK(hook_error(R"("serial": "deploys")").find("hooks[0].serial") != std::string::npos);
  // A delivery without a key is stored nowhere: it could not wait in a line.
  CHECK(hook_error(R"("no_key": "run", "serial": {})").find("no_key") != std::string::npos);
}

}  // namespace unit_config
