// The proxy's pure rules (proxy/rules.hpp): keys, scopes, fingerprints, which headers go where,
// which answers are stored, the problem bodies.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/response.hpp"
#include "proxy/rules.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_proxy {

using namespace idem::net;
using namespace idem::proxy;

namespace {

Headers headers_of(std::initializer_list<std::pair<std::string, std::string>> fields) {
  Headers h;
  for (const auto& [n, v] : fields) h.add(n, v);
  return h;
}

KeyReading key_of(const std::string& value) {
  return read_idempotency_key(headers_of({{"Idempotency-Key", value}}));
}

RequestHead head_of(const std::string& method, const std::string& target) {
  RequestHead h;
  h.method = method;
  h.target = target;
  h.path = target.substr(0, target.find('?'));
  return h;
}

}  // namespace

TEST_CASE("proxy: a bare key is taken as it is", "[proxy]") {
  KeyReading r = key_of("stripe-node-retry-0b8e6a3c");
  CHECK(r.kind == KeyReading::ok);
  CHECK(r.key == "stripe-node-retry-0b8e6a3c");
  CHECK(key_of("  abc  ").key == "abc");  // whitespace around a field value is not part of it
}

TEST_CASE("proxy: a structured-field string is unquoted", "[proxy]") {
  CHECK(key_of(R"("abc")").key == "abc");
  CHECK(key_of(R"("a\"b\\c")").key == "a\"b\\c");
  CHECK(key_of(R"("a b")").key == "a b");
  CHECK(key_of(R"("abc"  )").kind == KeyReading::ok);
}

TEST_CASE("proxy: malformed keys say why", "[proxy]") {
  CHECK(key_of(R"("abc)").reason ==
        "Idempotency-Key is not a structured-field string: the quoted string has no closing '\"'");
  CHECK(key_of(R"("a\nb")").kind == KeyReading::malformed);
  CHECK(key_of(R"("abc";p=1)").reason ==
        "Idempotency-Key is not a structured-field string: something follows the quoted string");
  CHECK(key_of("\"caf\xc3\xa9\"").kind == KeyReading::malformed);  // sf-strings are ASCII
  CHECK(key_of(R"("")").kind == KeyReading::malformed);            // empty key
  CHECK(key_of("").kind == KeyReading::malformed);
  CHECK(key_of("a\x01"
               "b")
            .kind == KeyReading::malformed);
  CHECK(read_idempotency_key(headers_of({{"Idempotency-Key", "a"}, {"idempotency-key", "b"}}))
            .reason == "Idempotency-Key is given 2 times");
}

TEST_CASE("proxy: keys up to 255 bytes, quoted or not", "[proxy]") {
  CHECK(key_of(std::string(255, 'k')).kind == KeyReading::ok);
  CHECK(key_of(std::string(256, 'k')).reason ==
        "Idempotency-Key is 256 bytes long; the limit is 255");
  CHECK(key_of("\"" + std::string(255, 'k') + "\"").kind == KeyReading::ok);
  CHECK(key_of("\"" + std::string(256, 'k') + "\"").kind == KeyReading::malformed);
}

TEST_CASE("proxy: a request without the header has no key", "[proxy]") {
  CHECK(read_idempotency_key(headers_of({{"Host", "x"}})).kind == KeyReading::missing);
  CHECK(read_idempotency_key(headers_of({{"idempotency-key", "k"}})).key == "k");
}

TEST_CASE("proxy: keys are scoped by Authorization or by the scope header alone", "[proxy]") {
  CHECK(key_scope(headers_of({}), "X-Tenant") == "-");
  const std::string a = key_scope(headers_of({{"Authorization", "Bearer a"}}), "");
  const std::string b = key_scope(headers_of({{"Authorization", "Bearer b"}}), "");
  CHECK(a.size() == 16);
  CHECK(a != b);
  // Without the scope header, Authorization scopes the key.
  CHECK(a == key_scope(headers_of({{"authorization", "Bearer a"}}), "X-Tenant"));
  // With it, the scope header alone: a refreshed token keeps the scope.
  CHECK(key_scope(headers_of({{"Authorization", "Bearer a"}, {"X-Tenant", "t"}}), "X-Tenant") ==
        key_scope(headers_of({{"Authorization", "Bearer b"}, {"X-Tenant", "t"}}), "X-Tenant"));
  CHECK(key_scope(headers_of({{"Authorization", "Bearer a"}, {"X-Tenant", "t"}}), "X-Tenant") ==
        key_scope(headers_of({{"X-Tenant", "t"}}), "X-Tenant"));
  // Which header holds a value matters.
  CHECK(key_scope(headers_of({{"Authorization", "t"}}), "X-Tenant") !=
        key_scope(headers_of({{"X-Tenant", "t"}}), "X-Tenant"));
  CHECK(key_scope(headers_of({{"X-Tenant", "t"}}), "") == "-");
  CHECK(key_scope(headers_of({{"X-Tenant", "t1"}}), "X-Tenant") !=
        key_scope(headers_of({{"X-Tenant", "t2"}}), "X-Tenant"));
  CHECK(stored_key("-", "k1") == "proxy#-#k1");
}

TEST_CASE("proxy: the fingerprint covers method, path, query and body", "[proxy]") {
  const std::string base = request_fingerprint(head_of("POST", "/a?x=1"), "body");
  CHECK(base == request_fingerprint(head_of("POST", "/a?x=1"), "body"));
  CHECK(base != request_fingerprint(head_of("PATCH", "/a?x=1"), "body"));
  CHECK(base != request_fingerprint(head_of("POST", "/b?x=1"), "body"));
  CHECK(base != request_fingerprint(head_of("POST", "/a?x=2"), "body"));
  CHECK(base != request_fingerprint(head_of("POST", "/a"), "body"));
  CHECK(base != request_fingerprint(head_of("POST", "/a?x=1"), "body2"));
  // Boundaries: moving bytes between fields changes it.
  CHECK(request_fingerprint(head_of("POST", "/a?b"), "") !=
        request_fingerprint(head_of("POST", "/a"), "b"));
}

TEST_CASE("proxy: forwarded headers drop hop-by-hop ones and add X-Forwarded-*", "[proxy]") {
  RequestHead h = head_of("POST", "/a");
  for (auto [n, v] : std::initializer_list<std::pair<const char*, const char*>>{
           {"Host", "idem.local:8787"},
           {"Connection", "keep-alive, X-Secret-Hop"},
           {"X-Secret-Hop", "1"},
           {"Keep-Alive", "timeout=5"},
           {"Content-Length", "4"},
           {"Transfer-Encoding", "chunked"},
           {"Upgrade", "h2c"},
           {"TE", "trailers"},
           {"Expect", "100-continue"},
           {"Idempotency-Key", "k"},
           {"X-Forwarded-For", "10.0.0.1"},
           {"X-Forwarded-Proto", "https"},
           {"Authorization", "Bearer a"},
           {"X-Custom", "v"}})
    h.headers.add(n, v);
  UpstreamTarget t;
  t.authority = "127.0.0.1:3000";
  auto out = forwarded_headers(h, "127.0.0.9", t);
  std::vector<std::pair<std::string, std::string>> expected = {
      {"Idempotency-Key", "k"},
      {"Authorization", "Bearer a"},
      {"X-Custom", "v"},
      {"Host", "127.0.0.1:3000"},
      {"X-Forwarded-For", "10.0.0.1, 127.0.0.9"},
      {"X-Forwarded-Host", "idem.local:8787"},
      {"X-Forwarded-Proto", "http"}};
  CHECK(out == expected);
}

TEST_CASE("proxy: the first answer keeps Set-Cookie, the stored one does not", "[proxy]") {
  UpstreamHead up;
  up.status = 201;
  up.headers = {{"Date", "Tue, 01 Dec 2026 00:00:00 GMT"},
                {"Content-Type", "application/json"},
                {"Location", "/orders/7"},
                {"ETag", "\"v1\""},
                {"Set-Cookie", "s=1"},
                {"Connection", "X-Hop"},
                {"X-Hop", "1"},
                {"Content-Length", "2"},
                {"X-Bad", "caf\xe9"},
                {"Cache-Control", "no-store"}};
  Response first = answer_head(up);
  CHECK(first.status == 201);
  CHECK(first.content_type == "application/json");
  std::vector<std::pair<std::string, std::string>> first_expected = {{"Location", "/orders/7"},
                                                                     {"ETag", "\"v1\""},
                                                                     {"Set-Cookie", "s=1"},
                                                                     {"X-Bad", "caf\xe9"},
                                                                     {"Cache-Control", "no-store"}};
  CHECK(first.headers == first_expected);

  idem::core::Response stored = stored_response(up);
  CHECK(stored.status == 201);
  std::vector<std::pair<std::string, std::string>> stored_expected = {
      {"Content-Type", "application/json"},
      {"Location", "/orders/7"},
      {"ETag", "\"v1\""},
      {"Cache-Control", "no-store"}};
  CHECK(stored.headers == stored_expected);
  CHECK_FALSE(idem::core::response_problem(stored));
}

TEST_CASE("proxy: stored headers stay within the size the store accepts", "[proxy]") {
  UpstreamHead up;
  up.status = 200;
  for (int i = 0; i < 5; ++i)
    up.headers.emplace_back("X-Big-" + std::to_string(i), std::string(100 * 1024, 'x'));
  idem::core::Response stored = stored_response(up);
  CHECK(stored.headers.size() == 2);
  CHECK_FALSE(idem::core::response_problem(stored));
}

TEST_CASE("proxy: 5xx answers are stored only when asked", "[proxy]") {
  ProxySettings s;
  CHECK(stores_status(200, s));
  CHECK(stores_status(404, s));
  CHECK(stores_status(499, s));
  CHECK_FALSE(stores_status(500, s));
  CHECK_FALSE(stores_status(503, s));
  s.store_server_errors = true;
  CHECK(stores_status(503, s));
}

TEST_CASE("proxy: answers that say 'try again' are not stored by default", "[proxy]") {
  ProxySettings s;
  for (int status : {408, 409, 425, 429}) CHECK_FALSE(stores_status(status, s));
  for (int status : {200, 201, 204, 301, 304, 400, 401, 402, 403, 404, 410, 422})
    CHECK(stores_status(status, s));
  s.store_server_errors = true;
  CHECK_FALSE(stores_status(429, s));
  CHECK(stores_status(502, s));
}

TEST_CASE("proxy: a status set takes statuses and classes, and refuses some", "[proxy]") {
  auto set_of = [](std::initializer_list<std::string_view> items) {
    StatusSet set;
    for (std::string_view item : items) set.items.push_back(StatusSet::read_item(item).value());
    return set;
  };
  StatusSet set = set_of({"2xx", "429", "!204", "5XX", "!503"});
  CHECK(set.stores(200));
  CHECK(set.stores(299));
  CHECK_FALSE(set.stores(204));
  CHECK(set.stores(429));
  CHECK_FALSE(set.stores(428));
  CHECK_FALSE(set.stores(300));
  CHECK(set.stores(500));
  CHECK_FALSE(set.stores(503));
  // A refusal wins wherever it stands.
  CHECK_FALSE(set_of({"!404", "4xx"}).stores(404));
  for (std::string_view bad : {"", "!", "1xx", "6xx", "199", "600", "2x", "20", "2000", "x2x",
                               "!!200", " 200", "2xy", "abc"})
    CHECK_FALSE(StatusSet::read_item(bad));
  CHECK(StatusSet::read_item("599")->low == 599);
  CHECK(StatusSet::read_item("!4xx")->refuses);
}

TEST_CASE("proxy: keyed methods and the longest route prefix", "[proxy]") {
  ProxyConfig c;
  CHECK(c.settings.keyed("POST"));
  CHECK(c.settings.keyed("PATCH"));
  CHECK_FALSE(c.settings.keyed("PUT"));
  CHECK_FALSE(c.settings.keyed("GET"));
  ProxyRouteSettings pay{"/v1/payments", c.settings};
  pay.settings.ttl_ms = 1;
  ProxyRouteSettings v1{"/v1/", c.settings};
  v1.settings.ttl_ms = 2;
  ProxyRouteSettings refunds{"/v1/payments/refunds", c.settings};
  refunds.settings.ttl_ms = 3;
  c.routes = {v1, pay, refunds};
  CHECK(c.settings_for("/v1/payments").ttl_ms == 1);
  CHECK(c.settings_for("/v1/payments/7").ttl_ms == 1);
  CHECK(c.settings_for("/v1/payments/refunds/1").ttl_ms == 3);
  CHECK(c.settings_for("/v1/paymentsX").ttl_ms == 2);
  CHECK(c.settings_for("/v1/other").ttl_ms == 2);
  CHECK(c.settings_for("/v2").ttl_ms == c.settings.ttl_ms);
  CHECK(prefix_takes("/", "/anything"));
  CHECK_FALSE(prefix_takes("/a", "/ab"));
}

TEST_CASE("proxy: problems carry an error member", "[proxy]") {
  Response r = proxy_problem(409, "A request is outstanding for this Idempotency-Key", "busy");
  CHECK(r.status == 409);
  CHECK(r.content_type == "application/problem+json");
  auto j = nlohmann::json::parse(r.body);
  CHECK(j["title"] == "A request is outstanding for this Idempotency-Key");
  CHECK(j["status"] == 409);
  CHECK(j["detail"] == "busy");
  CHECK(j["error"]["type"] == "idempotency_error");
  CHECK(j["error"]["message"] == "busy");
  CHECK(nlohmann::json::parse(proxy_problem(502, "t", "d", "api_error").body)["error"]["type"] ==
        "api_error");
}

TEST_CASE("proxy: the stored request redacts credentials", "[proxy]") {
  RequestHead h = head_of("POST", "/a?x=1");
  h.headers.add("Authorization", "Bearer secret");
  h.headers.add("X-A", "1");
  auto j = nlohmann::json::parse(proxy_stored_request(h, "hi"));
  CHECK(j["method"] == "POST");
  CHECK(j["path"] == "/a?x=1");
  CHECK(j["headers"][0][1] == "[redacted]");
  CHECK(j["headers"][1][1] == "1");
  CHECK(j["body_b64"] == "aGk=");
}

}  // namespace unit_proxy
