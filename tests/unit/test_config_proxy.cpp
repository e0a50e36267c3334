// The config's "proxy" section (serve/config.hpp, proxy/rules.hpp): values, defaults, and one
// message per mistake naming the field.
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "serve/config.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_config_proxy {

using idem::front::ConfigError;
using idem::proxy::ProxyConfig;
using idem::serve::Config;
using idem::serve::parse_config;

namespace {

constexpr int64_t k_second = 1000;
constexpr int64_t k_hour = 3600 * k_second;

std::optional<std::string> no_env(const std::string&) { return std::nullopt; }

std::string error_of(const std::string& text) {
  try {
    parse_config("serve.json", text, no_env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(parsed)";
}

// A proxy section with `fields` beside its upstream.
std::string proxy_with(const std::string& fields) {
  return R"({"proxy": {"upstream": "http://127.0.0.1:3000")" +
         (fields.empty() ? std::string() : ", " + fields) + "}}";
}

std::string proxy_error(const std::string& fields) { return error_of(proxy_with(fields)); }

ProxyConfig parse_proxy(const std::string& fields) {
  Config c = parse_config("serve.json", proxy_with(fields), no_env);
  REQUIRE(c.proxy);
  return *c.proxy;
}

}  // namespace

TEST_CASE("config proxy: every field but upstream has a default", "[config][proxy]") {
  ProxyConfig p = parse_proxy("");
  CHECK(p.upstream == "http://127.0.0.1:3000");
  CHECK(p.target.port == 3000);
  CHECK(p.target.authority == "127.0.0.1:3000");
  CHECK(p.settings.methods == std::vector<std::string>{"POST", "PATCH"});
  CHECK(p.settings.ttl_ms == 24 * k_hour);
  CHECK(p.settings.timeout_ms == 30 * k_second);
  CHECK(p.settings.max_body == 1 << 20);
  CHECK_FALSE(p.settings.store_server_errors);
  CHECK(p.settings.late_answer_ms == 10 * 60 * k_second);
  CHECK_FALSE(p.settings.store_statuses.stores(429));
  CHECK(p.settings.store_statuses.stores(404));
  CHECK(p.max_response == 10 << 20);
  CHECK(p.max_forwards == 0);  // the daemon's --max-connections
  CHECK(p.scope_header.empty());
  CHECK(p.routes.empty());
}

TEST_CASE("config proxy: the fields are read as given", "[config][proxy]") {
  ProxyConfig p = parse_proxy(
      R"("methods": ["POST", "PUT"], "ttl": "1h", "timeout": 5, "max_body": "2KiB",
         "max_response": 100, "max_forwards": 3, "scope_header": "X-Tenant",
         "store_server_errors": true,
         "late_answer": "0s", "store_statuses": ["2xx", 429, "!204"],
         "routes": [{"prefix": "/v1/payments", "ttl": "7d", "store_server_errors": false,
                     "late_answer": "1h", "store_statuses": ["4xx"]},
                    {"prefix": "/v1/", "methods": ["DELETE"], "timeout": "1s", "max_body": 10}])");
  CHECK(p.settings.late_answer_ms == 0);
  CHECK(p.settings.store_statuses.stores(429));
  CHECK_FALSE(p.settings.store_statuses.stores(204));
  CHECK_FALSE(p.settings.store_statuses.stores(404));
  CHECK(p.routes[0].settings.late_answer_ms == k_hour);
  CHECK(p.routes[0].settings.store_statuses.stores(404));
  CHECK_FALSE(p.routes[0].settings.store_statuses.stores(200));
  CHECK(p.routes[1].settings.store_statuses.stores(429));  // inherited
  CHECK(p.routes[1].settings.late_answer_ms == 0);
  CHECK(p.settings.methods == std::vector<std::string>{"POST", "PUT"});
  CHECK(p.settings.ttl_ms == k_hour);
  CHECK(p.settings.timeout_ms == 5 * k_second);
  CHECK(p.settings.max_body == 2048);
  CHECK(p.max_response == 100);
  CHECK(p.max_forwards == 3);
  CHECK(p.scope_header == "X-Tenant");
  CHECK(p.settings.store_server_errors);
  REQUIRE(p.routes.size() == 2);
  // A route inherits what it does not set.
  CHECK(p.routes[0].prefix == "/v1/payments");
  CHECK(p.routes[0].settings.ttl_ms == 7 * 24 * k_hour);
  CHECK_FALSE(p.routes[0].settings.store_server_errors);
  CHECK(p.routes[0].settings.methods == std::vector<std::string>{"POST", "PUT"});
  CHECK(p.routes[1].settings.methods == std::vector<std::string>{"DELETE"});
  CHECK(p.routes[1].settings.timeout_ms == k_second);
  CHECK(p.routes[1].settings.max_body == 10);
  CHECK(p.routes[1].settings.ttl_ms == k_hour);
  CHECK(p.settings_for("/v1/payments/3").ttl_ms == 7 * 24 * k_hour);
  CHECK(p.settings_for("/v1/refunds").timeout_ms == k_second);
  CHECK(p.settings_for("/v2").timeout_ms == 5 * k_second);
}

TEST_CASE("config proxy: a proxy alone, or beside hooks, is a config", "[config][proxy]") {
  Config alone = parse_config("serve.json", proxy_with(""), no_env);
  CHECK(alone.hooks.empty());
  Config both = parse_config(
      "serve.json",
      R"({"hooks": [{"path": "/h", "command": ["true"]}], "proxy": {"upstream": "http://u:1"}})",
      no_env);
  CHECK(both.hooks.size() == 1);
  CHECK(both.proxy->target.host == "u");
  Config empty_hooks =
      parse_config("serve.json", R"({"hooks": [], "proxy": {"upstream": "http://u:1"}})", no_env);
  CHECK(empty_hooks.hooks.empty());
  CHECK_FALSE(
      parse_config("serve.json", R"({"hooks": [{"path": "/h", "command": ["true"]}]})", no_env)
          .proxy);
}

TEST_CASE("config proxy: each bad value is named", "[config][proxy]") {
  CHECK(error_of(R"({"proxy": {}})") == "serve.json: proxy: missing field 'upstream'");
  CHECK(error_of(R"({"proxy": []})") == "serve.json: proxy: expected an object, got an array");
  CHECK(error_of(R"({"proxy": {"upstream": 3}})") ==
        "serve.json: proxy.upstream: expected a string, got an integer");
  CHECK(error_of(R"({"proxy": {"upstream": "ftp://x"}})")
            .starts_with("serve.json: proxy.upstream: "));
  CHECK(proxy_error(R"("upstrem": 1)") == "serve.json: proxy: unknown field 'upstrem'");
  CHECK(proxy_error(R"("methods": ["GET"])") ==
        "serve.json: proxy.methods[0]: 'GET' is never keyed: safe methods are passed through "
        "untouched");
  CHECK(proxy_error(R"("methods": ["POST", "HEAD"])")
            .starts_with("serve.json: proxy.methods[1]: 'HEAD' is never keyed"));
  CHECK(proxy_error(R"("methods": ["OPTIONS"])")
            .starts_with("serve.json: proxy.methods[0]: 'OPTIONS' is never keyed"));
  CHECK(proxy_error(R"("methods": [])") ==
        "serve.json: proxy.methods: is empty; list at least one method, such as \"POST\"");
  CHECK(proxy_error(R"("methods": ["post"])") ==
        "serve.json: proxy.methods[0]: 'post' is not an upper-case HTTP method such as POST or "
        "PUT");
  CHECK(proxy_error(R"("ttl": "5x")") == "serve.json: proxy.ttl: bad duration '5x'");
  CHECK(proxy_error(R"("ttl": 0)") == "serve.json: proxy.ttl: must be more than 0");
  CHECK(proxy_error(R"("timeout": "0s")") == "serve.json: proxy.timeout: must be more than 0");
  CHECK(proxy_error(R"("timeout": true)") ==
        "serve.json: proxy.timeout: expected a duration such as \"30s\" or whole seconds, got "
        "true");
  CHECK(proxy_error(R"("max_body": "2GiB")") ==
        "serve.json: proxy.max_body: must be at most 1GiB, got 2GiB");
  CHECK(proxy_error(R"("max_body": 0)") == "serve.json: proxy.max_body: must be more than 0");
  CHECK(proxy_error(R"("max_response": "lots")") ==
        "serve.json: proxy.max_response: bad size 'lots'");
  CHECK(proxy_error(R"("max_response": "1GiB")") ==
        "serve.json: proxy.max_response: must be at most 900MiB, got 1GiB");
  CHECK(proxy_error(R"("max_response": 0)") ==
        "serve.json: proxy.max_response: must be more than 0");
  CHECK(proxy_error(R"("max_forwards": 0)") ==
        "serve.json: proxy.max_forwards: must be between 1 and 4096, got 0");
  CHECK_THAT(proxy_error(R"("max_forwards": "many")"),
             Catch::Contains("serve.json: proxy.max_forwards: expected an integer"));
  CHECK(proxy_error(R"("scope_header": "X Tenant")") ==
        "serve.json: proxy.scope_header: 'X Tenant' is not a valid header name");
  CHECK(proxy_error(R"("store_server_errors": "yes")") ==
        "serve.json: proxy.store_server_errors: expected true or false, got a string");
  CHECK(proxy_error(R"("late_answer": "soon")") ==
        "serve.json: proxy.late_answer: bad duration 'soon'");
  CHECK(proxy_error(R"("store_statuses": "2xx")") ==
        "serve.json: proxy.store_statuses: expected a non-empty array of statuses and classes "
        "(\"2xx\", 404, \"!429\"), got a string");
  CHECK(proxy_error(R"("store_statuses": [])")
            .starts_with("serve.json: proxy.store_statuses: expected a non-empty array"));
  CHECK(proxy_error(R"("store_statuses": ["2xx", "6xx"])") ==
        "serve.json: proxy.store_statuses[1]: '6xx' is neither a status (200 to 599) nor a class "
        "(2xx to 5xx), with or without a leading '!'");
  CHECK(proxy_error(R"("store_statuses": [200, 99])") ==
        "serve.json: proxy.store_statuses[1]: 99 is neither a status (200 to 599) nor a class "
        "(2xx to 5xx), with or without a leading '!'");
  CHECK(proxy_error(R"("store_statuses": [true])") ==
        "serve.json: proxy.store_statuses[0]: expected a status or a class, got true");
  CHECK(proxy_error(R"("store_statuses": ["!429"])") ==
        "serve.json: proxy.store_statuses: only refuses statuses ('!'): name at least one status "
        "or class to store");
  CHECK(proxy_error(R"("routes": [{"prefix": "/a", "store_statuses": ["x"]}])")
            .starts_with("serve.json: proxy.routes[0].store_statuses[0]: 'x' is neither"));
}

TEST_CASE("config proxy: each bad route is named", "[config][proxy]") {
  CHECK(proxy_error(R"("routes": {})") ==
        "serve.json: proxy.routes: expected an array of routes, got an object");
  CHECK(proxy_error(R"("routes": [{}])") == "serve.json: proxy.routes[0]: missing field 'prefix'");
  CHECK(proxy_error(R"("routes": [{"prefix": "v1"}])") ==
        "serve.json: proxy.routes[0].prefix: 'v1' must start with '/'");
  CHECK(proxy_error(R"("routes": [{"prefix": "/a?b"}])") ==
        "serve.json: proxy.routes[0].prefix: '/a?b' contains '?' (routes are matched on the path "
        "alone)");
  CHECK(proxy_error(R"("routes": [{"prefix": "/a b"}])") ==
        "serve.json: proxy.routes[0].prefix: '/a b' contains whitespace, a control or a "
        "non-ASCII character");
  CHECK(proxy_error(R"("routes": [{"prefix": "/a"}, {"prefix": "/a"}])") ==
        "serve.json: proxy.routes[1].prefix: '/a' is used by proxy.routes[0] too");
  CHECK(proxy_error(R"("routes": [{"prefix": "/a", "scope_header": "X"}])") ==
        "serve.json: proxy.routes[0]: unknown field 'scope_header'");
  CHECK(proxy_error(R"("routes": [{"prefix": "/a", "ttl": "x"}])") ==
        "serve.json: proxy.routes[0].ttl: bad duration 'x'");
  CHECK(proxy_error(R"("routes": [{"prefix": "/a", "methods": ["GET"]}])")
            .starts_with("serve.json: proxy.routes[0].methods[0]: 'GET' is never keyed"));
  CHECK(proxy_error(R"("routes": ["/a"])") ==
        "serve.json: proxy.routes[0]: expected an object, got a string");
}

}  // namespace unit_config_proxy
