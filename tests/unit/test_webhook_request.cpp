// What a webhook hook makes of a request (webhook/request.hpp): payloads by content type,
// parameter sources, trigger rules and the command, checked against the behaviour of the Go
// `webhook` server 2.8. The HMAC values were computed outside idem (Python's hmac module).
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "webhook/payload.hpp"
#include "webhook/request.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_webhook_request {

using namespace idem::webhook;
using Source = Argument::Source;
using Headers = std::vector<std::pair<std::string, std::string>>;

namespace {

Argument arg(Source source, std::string name = "", std::string envname = "") {
  Argument a;
  a.source = source;
  a.name = std::move(name);
  a.envname = std::move(envname);
  return a;
}

Rule match(MatchRule::Type type, Argument parameter, std::string value = "") {
  Rule rule;
  rule.kind = Rule::Kind::match;
  rule.match.type = type;
  rule.match.parameter = std::move(parameter);
  if (type == MatchRule::Type::value) rule.match.value = value;
  if (type == MatchRule::Type::regex) {
    rule.match.regex_text = value;
    rule.match.regex = compile_regex(value);
  }
  if (type == MatchRule::Type::ip_whitelist) rule.match.ip_range = value;
  if (type != MatchRule::Type::value && type != MatchRule::Type::regex &&
      type != MatchRule::Type::ip_whitelist)
    rule.match.secret = value;
  return rule;
}

Rule combine(Rule::Kind kind, std::vector<Rule> children) {
  Rule rule;
  rule.kind = kind;
  rule.children = std::move(children);
  return rule;
}

Rule negate(Rule child) { return combine(Rule::Kind::negate, {std::move(child)}); }

WebhookHook hook_with(std::optional<Rule> rule = std::nullopt) {
  WebhookHook hook;
  hook.id = "deploy";
  hook.execute_command = "/usr/local/bin/deploy.sh";
  hook.trigger_rule = std::move(rule);
  return hook;
}

Request post(const WebhookHook& hook, Headers headers, std::string body,
             std::string_view query = "", std::string remote = "192.0.2.10:51234") {
  return make_request(hook, "POST", std::move(remote), std::move(headers), query, std::move(body),
                      1504869872);
}

std::string value(const Request& request, Source source, std::string name) {
  std::optional<std::string> v = value_of(arg(source, std::move(name)), request);
  return v ? *v : "(none)";
}

const std::string k_github_secret = "It's a Secret to Everybody";
const std::string k_github_push =
    R"({"ref":"refs/heads/main","after":"0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",)"
    R"("repository":{"id":1296269,"full_name":"octocat/Hello-World","stars":1.50},)"
    R"("pusher":{"name":"octocat","email":"octocat@github.com"},)"
    R"("head_commit":{"id":"0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c","message":"Update README.md"},)"
    R"("commits":[{"id":"0d1a26e","author":{"name":"Mona"}},{"id":"6dcb09b","author":{"name":"Hubot"}}]})";
const std::string k_github_sha1 = "6c7865322bf16973f6a4b1fdb4ba966f86e7329e";
const std::string k_github_sha256 =
    "69195c5d9aefc8f11f431a06813490827c34cc80284af379346a1f46878e8d46";
const std::string k_github_sha512 =
    "eef352fac077a2010ca57aa253b313ed7f57878a12a5fdef898fa360b623e263bec3beca650794f8422824bbf084"
    "449f58475d4c09d0be4c51d56b2b1e87316c";

Headers github_headers(std::string signature_256) {
  return {{"Host", "hooks.example.com"},
          {"User-Agent", "GitHub-Hookshot/044aadd"},
          {"content-type", "application/json"},
          {"X-GitHub-Event", "push"},
          {"X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
          {"X-Hub-Signature-256", std::move(signature_256)}};
}

// GitHub's documented rule: the signature and the branch.
Rule github_rule() {
  return combine(Rule::Kind::all,
                 {match(MatchRule::Type::payload_hmac_sha256,
                        arg(Source::header, "X-Hub-Signature-256"), k_github_secret),
                  match(MatchRule::Type::value, arg(Source::payload, "ref"), "refs/heads/main")});
}

}  // namespace

TEST_CASE("webhook request: a GitHub push with its HMAC and a branch rule", "[webhook]") {
  WebhookHook hook = hook_with(github_rule());
  Request request = post(hook, github_headers("sha256=" + k_github_sha256), k_github_push);
  CHECK(request.payload_error.empty());
  CHECK(request.content_type == "application/json");
  RuleResult result = evaluate(hook, request);
  CHECK(result.ok);
  CHECK_FALSE(result.error);

  // Paths with indexes; numbers as written; header names in any case.
  CHECK(value(request, Source::payload, "commits.1.author.name") == "Hubot");
  CHECK(value(request, Source::payload, "repository.id") == "1296269");
  CHECK(value(request, Source::payload, "repository.stars") == "1.50");
  CHECK(value(request, Source::payload, "pusher") ==
        R"({"email":"octocat@github.com","name":"octocat"})");
  CHECK(value(request, Source::payload, "commits.2.id") == "(none)");
  CHECK(value(request, Source::payload, "commits.x") == "(none)");
  CHECK(value(request, Source::header, "x-github-delivery") ==
        "72d3162e-cc78-11e3-81ab-4c9367dc0958");
  CHECK(value(request, Source::header, "Host") == "(none)");  // Go keeps it apart

  // Another branch: not satisfied, no error.
  std::string other = k_github_push;
  other.replace(other.find("main"), 4, "dev1");
  Request dev = post(hook, github_headers("sha256=" + k_github_sha256), other);
  result = evaluate(hook, dev);
  CHECK_FALSE(result.ok);
  REQUIRE(result.error);  // the body changed, so the signature no longer verifies: an error
  CHECK(result.error->find("invalid payload signatures") != std::string::npos);
}

TEST_CASE("webhook request: HMAC rules of each digest, prefixes and several signatures",
          "[webhook]") {
  auto check = [](MatchRule::Type type, const std::string& header) {
    WebhookHook hook = hook_with(match(type, arg(Source::header, "X-Signature"), k_github_secret));
    Headers headers = {{"Content-Type", "application/json"}, {"X-Signature", header}};
    return evaluate(hook, post(hook, headers, k_github_push));
  };
  CHECK(check(MatchRule::Type::payload_hmac_sha1, "sha1=" + k_github_sha1).ok);
  CHECK(check(MatchRule::Type::payload_hmac_sha1, k_github_sha1).ok);  // the prefix is optional
  CHECK(check(MatchRule::Type::payload_hmac_sha256, k_github_sha256).ok);
  CHECK(check(MatchRule::Type::payload_hmac_sha512, "sha512=" + k_github_sha512).ok);
  // Several, comma-separated: any one that verifies will do; only parts with the prefix count.
  CHECK(check(MatchRule::Type::payload_hmac_sha256,
              "sha256=00ff,sha256=" + k_github_sha256 + ",sha1=" + k_github_sha1)
            .ok);
  CHECK(check(MatchRule::Type::payload_hmac_sha1,
              "sha256=" + k_github_sha256 + ",sha1=" + k_github_sha1)
            .ok);
  // Without the prefix in a list, or after a space, a signature is not one.
  CHECK(check(MatchRule::Type::payload_hmac_sha1, "x," + k_github_sha1).error);
  CHECK(check(MatchRule::Type::payload_hmac_sha1, "sha1=00, sha1=" + k_github_sha1).error);
  // Hex is compared as written: upper case does not verify.
  std::string upper = k_github_sha1;
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  RuleResult bad = check(MatchRule::Type::payload_hmac_sha1, upper);
  CHECK_FALSE(bad.ok);
  REQUIRE(bad.error);
  CHECK(bad.error->find("invalid payload signatures [") == 0);
}

TEST_CASE("webhook request: signature soft failures only pass over an 'or' member", "[webhook]") {
  Rule either = combine(Rule::Kind::any,
                        {match(MatchRule::Type::payload_hmac_sha256,
                               arg(Source::header, "X-Hub-Signature-256"), "another secret"),
                         match(MatchRule::Type::payload_hmac_sha256,
                               arg(Source::header, "X-Hub-Signature-256"), k_github_secret)});
  WebhookHook hook = hook_with(either);
  Request request = post(hook, github_headers("sha256=" + k_github_sha256), k_github_push);
  // Without soft failures the first member's mismatch is an error.
  RuleResult hard = evaluate(hook, request);
  CHECK_FALSE(hard.ok);
  CHECK(hard.error);
  hook.signature_soft_failures = true;
  RuleResult soft = evaluate(hook, request);
  CHECK(soft.ok);
  CHECK_FALSE(soft.error);
  // Both wrong: just not satisfied.
  Request wrong = post(hook, github_headers("sha256=00"), k_github_push);
  RuleResult neither = evaluate(hook, wrong);
  CHECK_FALSE(neither.ok);
  CHECK_FALSE(neither.error);
  // Outside an "or", even with soft failures, a bad signature is an error, as in webhook.
  WebhookHook single = hook_with(github_rule());
  single.signature_soft_failures = true;
  CHECK(evaluate(single, wrong).error);
  // An empty body says so.
  RuleResult empty = evaluate(single, post(single, github_headers("sha256=00"), ""));
  REQUIRE(empty.error);
  CHECK(empty.error->find("on empty payload") != std::string::npos);
}

TEST_CASE("webhook request: a missing parameter makes a match false, not an error", "[webhook]") {
  Rule needs_token = match(MatchRule::Type::value, arg(Source::header, "X-Gitlab-Token"), "t0k3n");
  WebhookHook hook = hook_with(needs_token);
  Request bare = post(hook, {{"Content-Type", "application/json"}}, "{}");
  RuleResult result = evaluate(hook, bare);
  CHECK_FALSE(result.ok);
  CHECK_FALSE(result.error);
  // "not" of a missing parameter is true (webhook keeps the value beside its node error).
  WebhookHook inverted = hook_with(negate(needs_token));
  CHECK(evaluate(inverted, bare).ok);
  // In an "and", the missing parameter ends the evaluation as not satisfied.
  WebhookHook both =
      hook_with(combine(Rule::Kind::all, {negate(needs_token), negate(needs_token)}));
  CHECK_FALSE(evaluate(both, bare).ok);
  // An "or" passes over it.
  WebhookHook any = hook_with(
      combine(Rule::Kind::any,
              {needs_token, match(MatchRule::Type::value, arg(Source::string, "x"), "x")}));
  CHECK(evaluate(any, bare).ok);
  // Missing HMAC header: not satisfied, no error.
  WebhookHook signed_hook = hook_with(github_rule());
  CHECK_FALSE(evaluate(signed_hook, post(signed_hook, {}, k_github_push)).error);
  // No rule: always.
  CHECK(evaluate(hook_with(), bare).ok);
}

TEST_CASE("webhook request: a GitLab push with its token and regex rules", "[webhook]") {
  const std::string body =
      R"({"object_kind":"push","ref":"refs/heads/release/2.1","checkout_sha":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7",)"
      R"("user_name":"John Smith","project":{"id":15,"name":"Diaspora","path_with_namespace":"mike/diaspora"},)"
      R"("commits":[{"id":"b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327","message":"Update Catalan translation\n"}],)"
      R"("total_commits_count":4})";
  Rule rule =
      combine(Rule::Kind::all,
              {match(MatchRule::Type::value, arg(Source::header, "X-Gitlab-Token"), "t0k3n"),
               match(MatchRule::Type::regex, arg(Source::payload, "ref"), "^refs/heads/release/"),
               match(MatchRule::Type::regex, arg(Source::payload, "project.name"), "spor")});
  WebhookHook hook = hook_with(rule);
  Headers headers = {{"Content-Type", "application/json"},
                     {"X-Gitlab-Event", "Push Hook"},
                     {"X-Gitlab-Token", "t0k3n"}};
  Request request = post(hook, headers, body);
  CHECK(evaluate(hook, request).ok);
  CHECK(value(request, Source::payload, "commits.0.message") == "Update Catalan translation\n");
  CHECK(value(request, Source::payload, "total_commits_count") == "4");
  headers[2].second = "t0k3N";
  CHECK_FALSE(evaluate(hook, post(hook, headers, body)).ok);
}

TEST_CASE("webhook request: a Bitbucket form-encoded payload parsed as JSON", "[webhook]") {
  WebhookHook hook = hook_with(match(
      MatchRule::Type::value, arg(Source::payload, "payload.canon_url"), "https://bitbucket.org"));
  hook.parse_as_json = {arg(Source::payload, "payload")};
  const std::string body =
      "payload=%7B%22canon_url%22%3A+%22https%3A%2F%2Fbitbucket.org%22%2C+%22commits%22%3A+%5B%7B"
      "%22author%22%3A+%22marcus%22%2C+%22branch%22%3A+%22master%22%2C+%22size%22%3A+1.0%7D%5D%7D";
  Request request = post(hook, {{"Content-Type", "application/x-www-form-urlencoded"}}, body);
  CHECK(request.payload_error.empty());
  CHECK(request.problems.empty());
  CHECK(evaluate(hook, request).ok);
  CHECK(value(request, Source::payload, "payload.commits.0.branch") == "master");
  CHECK(value(request, Source::payload, "payload.commits.0.size") == "1.0");
  CHECK(value(request, Source::raw_request_body, "") == body);
  // Not JSON: the value stays the string it was, and the log hears of it.
  Request plain = post(hook, {{"Content-Type", "application/x-www-form-urlencoded"}},
                       "payload=not+json&payload=second");
  CHECK(value(plain, Source::payload, "payload") == "not json");  // the first of a repeated field
  REQUIRE(plain.problems.size() == 1);
  // Go's url.ParseQuery: one bad escape or a ';' and there is no payload at all.
  Request bad = post(hook, {{"Content-Type", "application/x-www-form-urlencoded"}}, "a=1&b=%zz");
  CHECK(bad.payload.is_null());
  CHECK(bad.payload_error.find("invalid URL escape") != std::string::npos);
  Request semicolon =
      post(hook, {{"Content-Type", "application/x-www-form-urlencoded"}}, "a=1;b=2");
  CHECK(semicolon.payload.is_null());
}

TEST_CASE("webhook request: XML payloads as mxj maps them", "[webhook]") {
  WebhookHook hook =
      hook_with(match(MatchRule::Type::value, arg(Source::payload, "app.users.user.0.-id"), "1"));
  const std::string body =
      "<?xml version=\"1.0\"?>\n"
      "<app version=\"2.1\">\n"
      "  <users>\n"
      "    <user id=\"1\">Jeff</user>\n"
      "    <user id=\"2\"><name>Sarah</name></user>\n"
      "  </users>\n"
      "  <messages><message id=\"1\">Hello!</message></messages>\n"
      "  <empty/>\n"
      "</app>\n";
  Request request = post(hook, {{"Content-Type", "application/xml; charset=utf-8"}}, body);
  INFO(request.payload_error);
  REQUIRE(request.payload_error.empty());
  CHECK(evaluate(hook, request).ok);
  CHECK(value(request, Source::payload, "app.-version") == "2.1");
  CHECK(value(request, Source::payload, "app.users.user.0.#text") == "Jeff");
  CHECK(value(request, Source::payload, "app.users.user.1.name") == "Sarah");
  CHECK(value(request, Source::payload, "app.messages.message.#text") == "Hello!");
  CHECK(value(request, Source::payload, "app.empty") == "");
  // text/xml too; a body that is not XML leaves no payload.
  Request broken = post(hook, {{"Content-Type", "text/xml"}}, "<app><users></app>");
  CHECK(broken.payload.is_null());
  CHECK_FALSE(broken.payload_error.empty());
  CHECK_FALSE(evaluate(hook, broken).ok);
}

TEST_CASE("webhook request: a JSON array body is the payload's root", "[webhook]") {
  WebhookHook hook =
      hook_with(match(MatchRule::Type::value, arg(Source::payload, "root.1.name"), "beta"));
  Request request = post(hook, {{"Content-Type", "application/json"}},
                         R"( [{"name":"alpha"},{"name":"beta","tags":["x","y"]}])");
  CHECK(evaluate(hook, request).ok);
  CHECK(value(request, Source::payload, "root.1.tags.1") == "y");
  CHECK(value(request, Source::payload, "root.1.tags") == R"(["x","y"])");
  CHECK(value(request, Source::payload, "root.2") == "(none)");
  CHECK(value(request, Source::entire_payload, "") ==
        R"({"root":[{"name":"alpha"},{"name":"beta","tags":["x","y"]}]})");
}

TEST_CASE("webhook request: content types pick the decoder as webhook does", "[webhook]") {
  WebhookHook hook = hook_with();
  const std::string json = R"({"a":{"b":1}})";
  // Raw bodies: no payload, the body itself is a source.
  Request raw = post(hook, {{"Content-Type", "text/plain"}}, json);
  CHECK(raw.payload.is_null());
  CHECK(value(raw, Source::raw_request_body, "") == json);
  CHECK(value(raw, Source::entire_payload, "") == "null");
  CHECK(value(raw, Source::payload, "a") == "(none)");
  // "json" anywhere in the type, case and all.
  CHECK(value(post(hook, {{"Content-Type", "application/vnd.api+json"}}, json), Source::payload,
              "a.b") == "1");
  CHECK(post(hook, {{"Content-Type", "application/JSON"}}, json).payload.is_null());
  // The hook's incoming-payload-content-type wins over the header.
  hook.incoming_content_type = "application/json";
  Request forced = post(hook, {{"Content-Type", "text/plain"}}, json);
  CHECK(forced.content_type == "application/json");
  CHECK(value(forced, Source::payload, "a.b") == "1");
  // Go's decoder reads the first value and no further; a scalar is no payload.
  CHECK(value(post(hook, {}, R"({"a":"x"} trailing)"), Source::payload, "a") == "x");
  CHECK(post(hook, {}, R"("just a string")").payload.is_null());
  CHECK_FALSE(post(hook, {}, R"({"a":)").payload_error.empty());
}

TEST_CASE("webhook request: a name with dots is found whole before it is split", "[webhook]") {
  WebhookHook hook = hook_with();
  Request request = post(hook, {{"Content-Type", "application/json"}},
                         R"({"a.b":"whole","a":{"b":"split","c.d":"inner"},"x":{"y":"no"}})");
  CHECK(value(request, Source::payload, "a.b") == "whole");
  CHECK(value(request, Source::payload, "a.c.d") == "inner");
  CHECK(value(request, Source::payload, "x.y.z") == "(none)");
}

TEST_CASE("webhook request: values render as webhook passes them on", "[webhook]") {
  WebhookHook hook = hook_with();
  Request request =
      post(hook, {{"Content-Type", "application/json"}},
           R"({"big":18446744073709551616,"exp":1e3,"neg":-12,"t":true,"f":false,"n":null,)"
           R"("html":"<a href=\"x\">&</a>","nested":{"z":1,"a":[1.0,"\u2028"]},"dup":1,"dup":2})");
  CHECK(value(request, Source::payload, "big") == "18446744073709551616");
  CHECK(value(request, Source::payload, "exp") == "1e3");
  CHECK(value(request, Source::payload, "neg") == "-12");
  CHECK(value(request, Source::payload, "t") == "true");
  CHECK(value(request, Source::payload, "f") == "false");
  CHECK(value(request, Source::payload, "n") == "<nil>");
  CHECK(value(request, Source::payload, "html") == "<a href=\"x\">&</a>");
  CHECK(value(request, Source::payload, "nested") == R"({"a":[1.0,"\u2028"],"z":1})");
  CHECK(value(request, Source::payload, "dup") == "2");
  CHECK(go_json(request.payload["html"]) == R"("\u003ca href=\"x\"\u003e\u0026\u003c/a\u003e")");
}

TEST_CASE("webhook request: headers, query and request sources", "[webhook]") {
  WebhookHook hook = hook_with();
  Headers headers = {{"Host", "example.com"},
                     {"x-token", "first"},
                     {"X-Token", "second"},
                     {"Transfer-Encoding", "chunked"},
                     {"content-type", "text/plain"}};
  Request request = make_request(hook, "PUT", "[2001:db8::7]:443", headers,
                                 "id=1&id=2&name=a+b%21&bad=%zz&&flag", "", 0);
  CHECK(value(request, Source::header, "X-TOKEN") == "first");
  CHECK(value(request, Source::entire_headers, "") ==
        R"({"Content-Type":"text/plain","X-Token":"first"})");
  CHECK(value(request, Source::url, "id") == "1");
  CHECK(value(request, Source::url, "name") == "a b!");
  CHECK(value(request, Source::url, "flag") == "");
  CHECK(value(request, Source::url, "bad") == "(none)");
  CHECK(value(request, Source::entire_query, "") == R"({"flag":"","id":"1","name":"a b!"})");
  REQUIRE(request.query.size() == 4);
  CHECK(request.query[1] == std::pair<std::string, std::string>{"id", "2"});
  CHECK(value(request, Source::request, "method") == "PUT");
  CHECK(value(request, Source::request, "Remote-Addr") == "[2001:db8::7]:443");
  CHECK(value(request, Source::request, "path") == "(none)");
  CHECK(value(request, Source::string, "constant") == "constant");
  // parse-parameters-as-json works on headers and the query too.
  hook.parse_as_json = {arg(Source::header, "x-meta"), arg(Source::url, "q")};
  Request parsed = make_request(hook, "GET", "127.0.0.1:1", {{"X-Meta", R"({"env":"prod"})"}},
                                "q=%7B%22n%22%3A2%7D", "", 0);
  CHECK(value(parsed, Source::header, "X-Meta.env") == "prod");
  CHECK(value(parsed, Source::url, "q.n") == "2");
}

TEST_CASE("webhook request: ip-whitelist and request rules", "[webhook]") {
  WebhookHook hook = hook_with(combine(
      Rule::Kind::all, {match(MatchRule::Type::ip_whitelist, {}, "10.0.0.0/8 192.0.2.10"),
                        match(MatchRule::Type::value, arg(Source::request, "method"), "POST")}));
  CHECK(evaluate(hook, post(hook, {}, "", "", "192.0.2.10:5000")).ok);
  CHECK(evaluate(hook, post(hook, {}, "", "", "10.9.8.7:5000")).ok);
  RuleResult outside = evaluate(hook, post(hook, {}, "", "", "192.0.2.11:5000"));
  CHECK_FALSE(outside.ok);
  CHECK_FALSE(outside.error);
  WebhookHook v6 = hook_with(match(MatchRule::Type::ip_whitelist, {}, "::1"));
  CHECK(evaluate(v6, post(v6, {}, "", "", "[::1]:80")).ok);
  CHECK_FALSE(evaluate(v6, post(v6, {}, "", "", "[::2]:80")).ok);
  RuleResult unknown = evaluate(v6, post(v6, {}, "", "", "not an address"));
  REQUIRE(unknown.error);
  CHECK(unknown.error->find("invalid IP address") != std::string::npos);
}

TEST_CASE("webhook request: scalr-signature", "[webhook]") {
  WebhookHook hook = hook_with(match(MatchRule::Type::scalr_signature, {}, "scalr-key"));
  const std::string body = R"({"event":"deploy"})";
  const std::string date = "Fri 08 Sep 2017 11:24:32 UTC";
  const std::string signature = "0145f0f59209742fe03196828bc73e2d2f3ba1d2";
  auto at = [&](int64_t now, std::string sig, std::string when) {
    Request request =
        make_request(hook, "POST", "127.0.0.1:1",
                     {{"X-Signature", std::move(sig)}, {"date", std::move(when)}}, "", body, now);
    return evaluate(hook, request);
  };
  const int64_t signed_at = 1504869872;
  CHECK(at(signed_at, signature, date).ok);
  CHECK(at(signed_at + 300, signature, date).ok);
  RuleResult late = at(signed_at + 301, signature, date);
  CHECK_FALSE(late.ok);
  REQUIRE(late.error);
  CHECK(late.error->find("outdated") != std::string::npos);
  CHECK(at(signed_at - 300, signature, date).ok);
  RuleResult forged = at(signed_at, "0145f0f59209742fe03196828bc73e2d2f3ba1d3", date);
  CHECK(forged.error);
  // Go keeps the clock time as UTC's whatever the zone says; names are read in any case.
  CHECK(at(signed_at, "a2b6c8d41e9c631406e3e83088431f16aa3a8332", "Fri 08 Sep 2017 11:24:32 GMT+1")
            .ok);
  CHECK(
      at(signed_at, "a19c5ddcd8dd1a47f1a58a1f6a3beb654092f91b", "fri 08 sep 2017 11:24:32 PST").ok);
  // A date that does not parse (one digit for the day, no 31 September): an error.
  RuleResult short_day =
      at(signed_at, "4cff135fb9b57ea05fdab692b28fa4463ed00b0e", "Fri 8 Sep 2017 11:24:32 UTC");
  REQUIRE(short_day.error);
  CHECK(short_day.error->find("Date") != std::string::npos);
  CHECK(at(signed_at, "def7c629e4ae424508a215676114f3ae832c205f", "Fri 31 Sep 2017 11:24:32 UTC")
            .error);
  // A header missing: just false.
  Request no_date =
      make_request(hook, "POST", "127.0.0.1:1", {{"X-Signature", signature}}, "", body, signed_at);
  RuleResult missing = evaluate(hook, no_date);
  CHECK_FALSE(missing.ok);
  CHECK_FALSE(missing.error);
}

TEST_CASE("webhook request: the command's arguments, environment and files", "[webhook]") {
  WebhookHook hook = hook_with();
  hook.execute_command = "/srv/hooks/redeploy with space.sh";
  hook.pass_arguments = {arg(Source::payload, "head_commit.id"), arg(Source::payload, "nope"),
                         arg(Source::string, "--verbose"), arg(Source::payload, "pusher")};
  hook.pass_environment = {arg(Source::payload, "pusher.name"),
                           arg(Source::header, "X-GitHub-Event", "EVENT"),
                           arg(Source::payload, "missing")};
  Argument file = arg(Source::payload, "head_commit.message");
  Argument decoded = arg(Source::header, "X-Blob", "BLOB_FILE");
  decoded.base64decode = true;
  hook.pass_file = {file, decoded, arg(Source::payload, "absent")};
  Headers headers = github_headers("");
  headers.emplace_back("X-Blob", "aGVsbG8gd29y\nbGQ=");
  Command command = command_for(hook, post(hook, headers, k_github_push));
  CHECK(command.argv ==
        std::vector<std::string>{"/srv/hooks/redeploy with space.sh",
                                 "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", "", "--verbose",
                                 R"({"email":"octocat@github.com","name":"octocat"})"});
  CHECK(command.env == std::vector<std::pair<std::string, std::string>>{
                           {"HOOK_pusher.name", "octocat"}, {"EVENT", "push"}});
  REQUIRE(command.files.size() == 2);
  CHECK(command.files[0].envname == "HOOK_HEAD_COMMIT.MESSAGE");
  CHECK(command.files[0].content == "Update README.md");
  CHECK(command.files[1].envname == "BLOB_FILE");
  CHECK(command.files[1].content == "hello world");
  CHECK(command.problems.size() == 3);  // nope, missing, absent
  // Bad base64: what decoded before the bad group, and a word for the log.
  Headers bad = {{"Content-Type", "application/json"}, {"X-Blob", "aGVsbG8*"}};
  Command partial = command_for(hook, post(hook, bad, k_github_push));
  REQUIRE(partial.files.size() == 2);
  CHECK(partial.files[1].content == "hel");
}

TEST_CASE("webhook request: regex rules in Go's syntax, on long values", "[webhook]") {
  // RE2 matches in time linear in the value, without recursion: 1 MiB of "a" against patterns a
  // backtracking matcher takes quadratic or exponential time over (no timing asserted: that they
  // finish is the test).
  std::string long_body(1 << 20, 'a');
  const std::pair<const char*, bool> cases[] = {{"^(.)*$", true},
                                                {"(?i)^A+\\z", true},
                                                {"(a|aa)*b", false},
                                                {"(a*)*c", false},
                                                {"a.*b.*c", false}};
  for (const auto& [pattern, matches] : cases) {
    INFO(pattern);
    WebhookHook hook =
        hook_with(match(MatchRule::Type::regex, arg(Source::raw_request_body), pattern));
    CHECK(evaluate(hook, post(hook, {}, long_body)).ok == matches);
  }
  // Go's syntax on a header: \z, \pL, (?s), (?P<name>...), (?i) in the middle, [[:alpha:]].
  auto header_matches = [](const char* pattern, std::string value) {
    WebhookHook hook =
        hook_with(match(MatchRule::Type::regex, arg(Source::header, "X-V"), pattern));
    return evaluate(hook, post(hook, {{"X-V", std::move(value)}}, "")).ok;
  };
  CHECK(header_matches("/main\\z", "refs/heads/main"));
  CHECK_FALSE(header_matches("/main\\z", "refs/heads/main/x"));
  CHECK(header_matches("^\\pL+$", "Zoë"));
  CHECK_FALSE(header_matches("^\\pL+$", "Zoë1"));
  CHECK(header_matches("^\\p{Greek}+$", "αβγ"));
  CHECK(header_matches("^(?P<major>[0-9]+)\\.(?P<minor>[0-9]+)$", "1.22"));
  CHECK(header_matches("^release-(?i)RC$", "release-rc"));
  CHECK_FALSE(header_matches("^release-(?i)RC$", "RELEASE-rc"));
  CHECK(header_matches("^[[:alpha:]]+$", "abcXYZ"));
  CHECK_FALSE(header_matches("^[[:alpha:]]+$", "abc-XYZ"));
  // A rule built without the loader is compiled at the match; one that does not compile (a
  // back-reference, no part of Go's syntax) is an error of the request's evaluation.
  WebhookHook hook = hook_with(match(MatchRule::Type::regex, arg(Source::raw_request_body), "x"));
  hook.trigger_rule->match.regex = nullptr;
  hook.trigger_rule->match.regex_text = "^a+$";
  CHECK(evaluate(hook, post(hook, {}, long_body)).ok);
  hook.trigger_rule->match.regex_text = "(a)\\1";
  RuleResult refused = evaluate(hook, post(hook, {}, "aa"));
  CHECK_FALSE(refused.ok);
  REQUIRE(refused.error);
  CHECK(*refused.error == "regex '(a)\\1': invalid escape sequence: \\1");
}

}  // namespace unit_webhook_request
