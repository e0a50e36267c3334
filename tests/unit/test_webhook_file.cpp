// The hooks files of the webhook server (webhook/file.hpp): every property, JSON and YAML
// giving the same model, idem's extra properties, and one exact message per mistake.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "webhook/file.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_webhook_file {

using idem::front::ConfigError;
using idem::hooks::Scheme;
using idem::webhook::Argument;
using idem::webhook::HooksFileOptions;
using idem::webhook::HooksFiles;
using idem::webhook::HooksFileText;
using idem::webhook::MatchRule;
using idem::webhook::parse_hooks_files;
using idem::webhook::Rule;
using idem::webhook::WebhookHook;

namespace {

using Json = nlohmann::json;

std::optional<std::string> fake_env(const std::string& name) {
  if (name == "GITHUB_WEBHOOK_SECRET") return "gh-secret";
  if (name == "DEPLOY_SECRET") return "s3cr3t";
  return std::nullopt;
}

std::optional<std::string> fake_file(const std::string& path) {
  if (path == "/run/secrets/token") return "from-a-file\n";
  return std::nullopt;
}

HooksFiles parse(const std::vector<HooksFileText>& files, HooksFileOptions options = {}) {
  return parse_hooks_files(files, options, fake_env, fake_file);
}

HooksFiles parse_one(const std::string& name, const std::string& text,
                     HooksFileOptions options = {}) {
  return parse({{name, text}}, options);
}

std::string error_of(const std::string& name, const std::string& text,
                     HooksFileOptions options = {}) {
  try {
    parse_one(name, text, options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(parsed)";
}

// The message for a file of one hook {"id": "h", "execute-command": "/bin/true", <fields>}.
std::string hook_error(const std::string& fields) {
  return error_of("hooks.json", R"([{"id": "h", "execute-command": "/bin/true", )" + fields + "}]");
}

WebhookHook one_hook(const std::string& fields) {
  HooksFiles files =
      parse_one("hooks.json", R"([{"id": "h", "execute-command": "/bin/true")" +
                                  (fields.empty() ? std::string() : ", " + fields) + "}]");
  REQUIRE(files.hooks.size() == 1);
  return files.hooks[0];
}

// The model as JSON, to compare what two files give.
Json dump(const Argument& a) { return {int(a.source), a.name, a.envname, a.base64decode}; }

Json dump(const std::vector<Argument>& list) {
  Json out = Json::array();
  for (const Argument& a : list) out.push_back(dump(a));
  return out;
}

Json dump(const Rule& rule) {
  Json children = Json::array();
  for (const Rule& child : rule.children) children.push_back(dump(child));
  const MatchRule& m = rule.match;
  return {int(rule.kind), children,           int(m.type), dump(m.parameter), m.value,
          m.regex_text,   m.regex != nullptr, m.secret,    m.ip_range};
}

Json dump(const WebhookHook& h) {
  Json native = {h.native.path,       h.native.command,         h.native.ttl_ms,
                 h.native.timeout_ms, h.native.max_body,        h.native.max_concurrency,
                 h.native.max_queue,  h.native.retry_abandoned, h.native.methods,
                 h.native.secret_env, h.native.withheld_env,    h.native.signature.has_value()};
  return {h.id,
          h.execute_command,
          h.working_directory,
          h.response_message,
          h.response_headers,
          h.capture_output,
          h.capture_output_on_error,
          dump(h.pass_environment),
          dump(h.pass_arguments),
          dump(h.pass_file),
          dump(h.parse_as_json),
          h.trigger_rule ? dump(*h.trigger_rule) : Json(),
          h.mismatch_code,
          h.signature_soft_failures,
          h.incoming_content_type,
          h.success_code,
          h.http_methods,
          h.key ? dump(*h.key) : Json(),
          native};
}

Json dump(const HooksFiles& files) {
  Json hooks = Json::array();
  for (const WebhookHook& hook : files.hooks) hooks.push_back(dump(hook));
  return {hooks, files.withheld_env, files.warnings};
}

// Every property of webhook 2.8 and of idem's object, in JSON...
const char* const k_full_json = R"([
  {
    "id": "deploy",
    "execute-command": "/srv/hooks/deploy.sh",
    "command-working-directory": "/srv",
    "response-message": "Deploying",
    "response-headers": [{"name": "X-Served-By", "value": "idem"}],
    "include-command-output-in-response": true,
    "include-command-output-in-response-on-error": true,
    "pass-environment-to-command": [
      {"source": "payload", "name": "head_commit.id", "envname": "COMMIT"},
      {"source": "header", "name": "X-GitHub-Event"}
    ],
    "pass-arguments-to-command": [
      {"source": "payload", "name": "pusher.name"},
      {"source": "string", "name": "--verbose"},
      {"source": "request", "name": "Remote-Addr"},
      {"source": "query", "name": "token"},
      {"source": "entire-payload"}
    ],
    "pass-file-to-command": [
      {"source": "payload", "name": "archive", "envname": "ARCHIVE", "base64decode": true}
    ],
    "parse-parameters-as-json": [{"source": "payload", "name": "payload"}],
    "trigger-rule": {
      "and": [
        {"match": {"type": "payload-hmac-sha256", "secret": "hmac-secret",
                   "parameter": {"source": "header", "name": "X-Hub-Signature-256"}}},
        {"match": {"type": "value", "value": "refs/heads/main",
                   "parameter": {"source": "payload", "name": "ref"}}},
        {"or": [
          {"match": {"type": "regex", "regex": "^(?:alice|bob)$",
                     "parameter": {"source": "payload", "name": "pusher.name"}}},
          {"match": {"type": "ip-whitelist", "ip-range": "10.0.0.0/8, ::1"}}
        ]},
        {"not": {"match": {"type": "scalr-signature", "secret": "scalr-key"}}}
      ]
    },
    "trigger-rule-mismatch-http-response-code": 412,
    "trigger-signature-soft-failures": true,
    "incoming-payload-content-type": "application/json",
    "success-http-response-code": 201,
    "http-methods": [" post ", "Put"],
    "idem": {
      "key": {"source": "header", "name": "X-GitHub-Delivery"},
      "ttl": "72h", "timeout": "30s", "max_body": "1MiB",
      "max_concurrency": 2, "max_queue": 8, "retry_abandoned": true,
      "signature": {"scheme": "github", "secret_env": "GITHUB_WEBHOOK_SECRET"}
    }
  },
  {"id": "plain", "execute-command": "/bin/true"}
])";

// ... and the same in YAML, with the scalars YAML allows where webhook expects text.
const char* const k_full_yaml = R"(# the same hooks
- id: deploy
  execute-command: /srv/hooks/deploy.sh
  command-working-directory: /srv
  response-message: Deploying
  response-headers:
    - name: X-Served-By
      value: idem
  include-command-output-in-response: yes
  include-command-output-in-response-on-error: true
  pass-environment-to-command:
    - {source: payload, name: head_commit.id, envname: COMMIT}
    - source: header
      name: X-GitHub-Event
  pass-arguments-to-command:
    - source: payload
      name: pusher.name
    - {source: string, name: "--verbose"}
    - {source: request, name: Remote-Addr}
    - {source: query, name: token}
    - source: entire-payload
  pass-file-to-command:
    - source: payload
      name: archive
      envname: ARCHIVE
      base64decode: On
  parse-parameters-as-json:
    - source: payload
      name: payload
  trigger-rule:
    and:
      - match:
          type: payload-hmac-sha256
          secret: 'hmac-secret'
          parameter: {source: header, name: X-Hub-Signature-256}
      - match:
          type: value
          value: refs/heads/main
          parameter: {source: payload, name: ref}
      - or:
          - match:
              type: regex
              regex: '^(?:alice|bob)$'
              parameter: {source: payload, name: pusher.name}
          - match: {type: ip-whitelist, ip-range: "10.0.0.0/8, ::1"}
      - not:
          match:
            type: scalr-signature
            secret: scalr-key
  trigger-rule-mismatch-http-response-code: 412
  trigger-signature-soft-failures: true
  incoming-payload-content-type: application/json
  success-http-response-code: 201
  http-methods: [" post ", Put]
  idem:
    key: {source: header, name: X-GitHub-Delivery}
    ttl: 72h
    timeout: 30s
    max_body: 1MiB
    max_concurrency: 2
    max_queue: 8
    retry_abandoned: true
    signature:
      scheme: github
      secret_env: GITHUB_WEBHOOK_SECRET
- id: plain
  execute-command: /bin/true
)";

}  // namespace

TEST_CASE("webhook file: every property is read", "[webhook_file]") {
  HooksFiles files = parse_one("hooks.json", k_full_json);
  REQUIRE(files.hooks.size() == 2);
  const WebhookHook& h = files.hooks[0];
  CHECK(h.id == "deploy");
  CHECK(h.file == "hooks.json");
  CHECK(h.execute_command == "/srv/hooks/deploy.sh");
  CHECK(h.working_directory == "/srv");
  CHECK(h.response_message == "Deploying");
  CHECK(h.response_headers ==
        std::vector<std::pair<std::string, std::string>>{{"X-Served-By", "idem"}});
  CHECK(h.capture_output);
  CHECK(h.capture_output_on_error);

  REQUIRE(h.pass_environment.size() == 2);
  CHECK(h.pass_environment[0].source == Argument::Source::payload);
  CHECK(h.pass_environment[0].name == "head_commit.id");
  CHECK(h.pass_environment[0].envname == "COMMIT");
  CHECK(h.pass_environment[1].source == Argument::Source::header);
  CHECK(h.pass_environment[1].envname.empty());

  REQUIRE(h.pass_arguments.size() == 5);
  CHECK(h.pass_arguments[1].source == Argument::Source::string);
  CHECK(h.pass_arguments[1].name == "--verbose");
  CHECK(h.pass_arguments[2].source == Argument::Source::request);
  CHECK(h.pass_arguments[2].name == "remote-addr");  // webhook compares it case-insensitively
  CHECK(h.pass_arguments[3].source == Argument::Source::url);  // "query" is url's other name
  CHECK(h.pass_arguments[4].source == Argument::Source::entire_payload);
  CHECK(h.pass_arguments[4].name.empty());

  REQUIRE(h.pass_file.size() == 1);
  CHECK(h.pass_file[0].envname == "ARCHIVE");
  CHECK(h.pass_file[0].base64decode);
  REQUIRE(h.parse_as_json.size() == 1);
  CHECK(h.parse_as_json[0].name == "payload");

  CHECK(h.mismatch_code == 412);
  CHECK(h.signature_soft_failures);
  CHECK(h.incoming_content_type == "application/json");
  CHECK(h.success_code == 201);
  CHECK(h.http_methods == std::vector<std::string>{"POST", "PUT"});

  const WebhookHook& plain = files.hooks[1];
  CHECK(plain.id == "plain");
  CHECK_FALSE(plain.capture_output);
  CHECK_FALSE(plain.trigger_rule.has_value());
  CHECK(plain.mismatch_code == 0);
  CHECK(plain.success_code == 0);
  CHECK(plain.http_methods.empty());
  CHECK_FALSE(plain.key.has_value());
  CHECK(files.warnings.empty());
}

TEST_CASE("webhook file: trigger rules are read into their tree", "[webhook_file]") {
  const WebhookHook h = parse_one("hooks.json", k_full_json).hooks[0];
  REQUIRE(h.trigger_rule.has_value());
  const Rule& all = *h.trigger_rule;
  CHECK(all.kind == Rule::Kind::all);
  REQUIRE(all.children.size() == 4);

  const MatchRule& hmac = all.children[0].match;
  CHECK(all.children[0].kind == Rule::Kind::match);
  CHECK(hmac.type == MatchRule::Type::payload_hmac_sha256);
  CHECK(hmac.secret == "hmac-secret");
  CHECK(hmac.parameter.source == Argument::Source::header);
  CHECK(hmac.parameter.name == "X-Hub-Signature-256");

  const MatchRule& value = all.children[1].match;
  CHECK(value.type == MatchRule::Type::value);
  CHECK(value.value == "refs/heads/main");
  CHECK(value.parameter.name == "ref");

  const Rule& any = all.children[2];
  CHECK(any.kind == Rule::Kind::any);
  REQUIRE(any.children.size() == 2);
  const MatchRule& regex = any.children[0].match;
  CHECK(regex.type == MatchRule::Type::regex);
  CHECK(regex.regex_text == "^(?:alice|bob)$");
  REQUIRE(regex.regex);
  CHECK(regex.regex->search("bob"));
  CHECK_FALSE(regex.regex->search("bobby"));
  CHECK(any.children[1].match.type == MatchRule::Type::ip_whitelist);
  CHECK(any.children[1].match.ip_range == "10.0.0.0/8, ::1");

  const Rule& negate = all.children[3];
  CHECK(negate.kind == Rule::Kind::negate);
  REQUIRE(negate.children.size() == 1);
  CHECK(negate.children[0].match.type == MatchRule::Type::scalr_signature);
  CHECK(negate.children[0].match.secret == "scalr-key");
}

TEST_CASE("webhook file: idem's properties make the native hook", "[webhook_file]") {
  HooksFiles files = parse_one("hooks.json", k_full_json);
  const WebhookHook& h = files.hooks[0];
  REQUIRE(h.key.has_value());
  CHECK(h.key->source == Argument::Source::header);
  CHECK(h.key->name == "X-GitHub-Delivery");
  CHECK(h.native.path == "/hooks/deploy");
  CHECK(h.native.command == std::vector<std::string>{"/srv/hooks/deploy.sh"});
  CHECK(h.native.methods == std::vector<std::string>{"POST", "PUT"});
  CHECK(h.native.ttl_ms == 72 * 3600 * 1000);
  CHECK(h.native.timeout_ms == 30 * 1000);
  CHECK(h.native.max_body == 1 << 20);
  CHECK(h.native.max_concurrency == 2);
  CHECK(h.native.max_queue == 8);
  CHECK(h.native.retry_abandoned);
  REQUIRE(h.native.signature.has_value());
  CHECK(h.native.signature->scheme == Scheme::github);
  CHECK(h.native.signature->secret == "gh-secret");
  CHECK(h.native.secret_env == "GITHUB_WEBHOOK_SECRET");
  CHECK(files.withheld_env == std::vector<std::string>{"GITHUB_WEBHOOK_SECRET"});
  CHECK(h.native.withheld_env == files.withheld_env);

  // Without an idem object: webhook's behaviour, with idem's limits where webhook has none.
  const WebhookHook& plain = files.hooks[1];
  CHECK(plain.native.path == "/hooks/plain");
  CHECK(plain.native.ttl_ms == 24 * 3600 * 1000);
  CHECK(plain.native.timeout_ms == 0);
  CHECK(plain.native.max_body == 10 << 20);
  CHECK(plain.native.max_concurrency == 4);
  CHECK(plain.native.max_queue == 64);
  CHECK_FALSE(plain.native.retry_abandoned);
  CHECK_FALSE(plain.native.signature.has_value());
  CHECK(plain.native.methods.empty());
  CHECK(plain.native.withheld_env == files.withheld_env);
}

TEST_CASE("webhook file: the URL prefix", "[webhook_file]") {
  const char* text = R"([{"id": "a/b", "execute-command": "/bin/true"}])";
  HooksFileOptions options;
  options.urlprefix = "webhooks";
  CHECK(parse_one("h.json", text, options).hooks[0].native.path == "/webhooks/a/b");
  options.urlprefix = "";
  CHECK(parse_one("h.json", text, options).hooks[0].native.path == "/a/b");
  CHECK(parse_one("h.json", text).hooks[0].native.path == "/hooks/a/b");
}

TEST_CASE("webhook file: an id is served at its path percent-decoded", "[webhook_file]") {
  HooksFiles files = parse_one("hooks.json", R"([
    {"id": "a b", "execute-command": "/x"}, {"id": "caf\u00e9", "execute-command": "/x"},
    {"id": "50%", "execute-command": "/x"}, {"id": "q?x#y!'()*", "execute-command": "/x"},
    {"id": "dir/sub/", "execute-command": "/x"}, {"id": "a/../b", "execute-command": "/x"},
    {"id": "//x", "execute-command": "/x"}])");
  REQUIRE(files.hooks.size() == 7);
  CHECK(files.hooks[0].served_path == "/hooks/a b");
  CHECK(files.hooks[1].served_path == "/hooks/caf\xc3\xa9");
  CHECK(files.hooks[2].served_path == "/hooks/50%");
  CHECK(files.hooks[3].served_path == "/hooks/q?x#y!'()*");
  // Its records and its route are named by the path with what a request target cannot hold raw
  // encoded: printable ASCII without '?' or '#'.
  CHECK(files.hooks[0].native.path == "/hooks/a%20b");
  CHECK(files.hooks[1].native.path == "/hooks/caf%C3%A9");
  CHECK(files.hooks[2].native.path == "/hooks/50%25");
  CHECK(files.hooks[3].native.path == "/hooks/q%3Fx%23y!'()*");
  CHECK(files.hooks[4].native.path == "/hooks/dir/sub/");
  // A path webhook's router redirects is never served there: a warning says so.
  CHECK(files.warnings ==
        std::vector<std::string>{
            "hooks.json: hooks[5] (a/../b): id: '/hooks/a/../b' is never served: webhook's "
            "router redirects it to '/hooks/b'",
            "hooks.json: hooks[6] (//x): id: '/hooks///x' is never served: webhook's router "
            "redirects it to '/hooks/x'"});
}

TEST_CASE("webhook file: response codes Go does not know load, with a warning", "[webhook_file]") {
  // webhook answers 200 in their place (webhook/route.hpp); 0 is "not set".
  HooksFiles files = parse_one("hooks.json", R"([
    {"id": "a", "execute-command": "/x", "trigger-rule-mismatch-http-response-code": 999,
     "success-http-response-code": 99},
    {"id": "b", "execute-command": "/x", "trigger-rule-mismatch-http-response-code": -3,
     "success-http-response-code": 201.0},
    {"id": "c", "execute-command": "/x", "success-http-response-code": 1e+10,
     "trigger-rule-mismatch-http-response-code": 0}])");
  REQUIRE(files.hooks.size() == 3);
  CHECK(files.hooks[0].mismatch_code == 999);
  CHECK(files.hooks[0].success_code == 99);
  CHECK(files.hooks[1].mismatch_code == -3);
  CHECK(files.hooks[1].success_code == 201);
  CHECK(files.hooks[2].success_code == -1);  // beyond an int: unknown all the same
  CHECK(files.hooks[2].mismatch_code == 0);
  const std::string tail = " is not an HTTP status webhook knows; it answers 200 instead";
  CHECK(files.warnings ==
        std::vector<std::string>{
            "hooks.json: hooks[0] (a): trigger-rule-mismatch-http-response-code: 999" + tail,
            "hooks.json: hooks[0] (a): success-http-response-code: 99" + tail,
            "hooks.json: hooks[1] (b): trigger-rule-mismatch-http-response-code: -3" + tail,
            "hooks.json: hooks[2] (c): success-http-response-code: 10000000000.0" + tail});
}

TEST_CASE("webhook file: a JSON file with YAML's flow syntax loads, as in webhook",
          "[webhook_file]") {
  // webhook's own test files are written so: a key: value pair as an element of an array (a
  // mapping of one pair), trailing commas, tabs, a comment.
  HooksFiles files = parse_one("hooks.json",
                               "[\n  {\n\t\t\"id\": \"a\",\n"
                               "\t\t\"execute-command\": \"/x\", # the program\n"
                               "    \"trigger-rule\": {\"and\": [\n"
                               "      \"or\": [{\"match\": {\"type\": \"value\", "
                               "\"value\": 1, \"parameter\": {\"source\": \"url\", "
                               "\"name\": \"x\"}}},],\n"
                               "      {\"not\": {\"match\": {\"type\": \"value\", "
                               "\"value\": 2, \"parameter\": {\"source\": \"url\", "
                               "\"name\": \"y\"}}}},\n    ],},\n  },\n]\n");
  REQUIRE(files.hooks.size() == 1);
  const Rule& rule = *files.hooks[0].trigger_rule;
  REQUIRE(rule.kind == Rule::Kind::all);
  REQUIRE(rule.children.size() == 2);
  CHECK(rule.children[0].kind == Rule::Kind::any);
  CHECK(rule.children[0].children.at(0).match.value == "1");
  CHECK(rule.children[1].kind == Rule::Kind::negate);
  // What neither YAML nor JSON reads gets JSON's message.
  CHECK(error_of("hooks.json", "[{\"id\": \"a\"") ==
        "hooks.json: not JSON: parse error at line 1, column 12: syntax error while parsing "
        "object - unexpected end of input; expected '}'");
}

TEST_CASE("webhook file: YAML gives the same model as JSON", "[webhook_file]") {
  Json from_json = dump(parse_one("hooks.json", k_full_json));
  Json from_yaml = dump(parse_one("hooks.yaml", k_full_yaml));
  CHECK(from_yaml.dump(1) == from_json.dump(1));
}

TEST_CASE("webhook file: YAML scalars stand for text as webhook's loader reads them",
          "[webhook_file]") {
  HooksFiles files = parse_one("hooks.yaml", R"(
- id: 42
  execute-command: /bin/true
  response-message: 1.50
  trigger-rule:
    match: {type: value, value: 0x1F, parameter: {source: payload, name: 3}}
- id: "007"
  execute-command: /bin/true
  response-message: yes
  success-http-response-code: 202
- id: 'off'
  execute-command: /bin/true
  response-message: 1e7
- id: more
  execute-command: /bin/true
  response-message: 1_0e+6
  response-headers:
    - {name: A, value: 08}
    - {name: B, value: 0b101}
    - {name: C, value: .25}
    - {name: D, value: 1.}
    - {name: E, value: 0o17}
    - {name: F, value: 3.14159265}
)");
  REQUIRE(files.hooks.size() == 4);
  CHECK(files.hooks[0].id == "42");
  CHECK(files.hooks[0].response_message == "1.5");
  CHECK(files.hooks[0].trigger_rule->match.value == "31");
  CHECK(files.hooks[0].trigger_rule->match.parameter.name == "3");
  CHECK(files.hooks[1].id == "007");  // quoted: a string as written
  CHECK(files.hooks[1].response_message == "true");
  CHECK(files.hooks[1].success_code == 202);
  CHECK(files.hooks[2].id == "off");
  CHECK(files.hooks[2].response_message == "1e7");  // no sign in the exponent: a string
  CHECK(files.hooks[3].response_message == "1e+07");
  CHECK(files.hooks[3].response_headers[0].second == "8");  // 08 is no octal number: a float
  CHECK(files.hooks[3].response_headers[1].second == "5");  // 0b101
  CHECK(files.hooks[3].response_headers[2].second == "0.25");
  CHECK(files.hooks[3].response_headers[3].second == "1.");
  CHECK(files.hooks[3].response_headers[4].second == "15");
  CHECK(files.hooks[3].response_headers[5].second == "3.1415927");  // a float32's digits
}

TEST_CASE("webhook file: YAML's anchors, aliases and merge keys", "[webhook_file]") {
  HooksFiles files = parse_one("hooks.yaml", R"(
- id: one
  execute-command: /bin/one
  trigger-rule: &token
    match: {type: value, value: t0k3n, parameter: {source: url, name: token}}
  idem: &limits
    max_concurrency: 2
    ttl: 1h
- id: two
  execute-command: /bin/two
  trigger-rule: *token
  idem:
    <<: *limits
    max_concurrency: 3
)");
  REQUIRE(files.hooks.size() == 2);
  CHECK(files.hooks[1].trigger_rule->match.value == "t0k3n");
  CHECK(files.hooks[1].native.max_concurrency == 3);  // its own key wins over the merged one
  CHECK(files.hooks[1].native.ttl_ms == 3600 * 1000);
  CHECK(error_of("hooks.yaml", "- id: a\n  <<: [x]\n") ==
        "hooks.yaml: line 2, column 8: a merge key (<<) takes a mapping or a list of mappings");
}

TEST_CASE("webhook file: JSON's numbers and booleans stand for text where webhook wants a string",
          "[webhook_file]") {
  // webhook reads JSON files with its YAML loader, which turns them into their text.
  HooksFiles files = parse_one("hooks.json", R"([{"id": 5, "execute-command": "/bin/true",
    "response-message": 1.50, "http-methods": [true],
    "response-headers": [{"name": "A", "value": 1.5e3}, {"name": "B", "value": 1e+3},
                         {"name": "C", "value": 1E-5}, {"name": "D", "value": 12345678901234567890}],
    "trigger-rule": {"match": {"type": "value", "value": 1, "parameter": {"source": "payload",
                                                                        "name": 0}}}}])");
  const WebhookHook& h = files.hooks.at(0);
  CHECK(h.id == "5");
  CHECK(h.native.path == "/hooks/5");
  CHECK(h.response_message == "1.5");
  CHECK(h.http_methods == std::vector<std::string>{"TRUE"});
  CHECK(h.response_headers[0].second == "1.5e3");  // no sign in the exponent: YAML's string
  CHECK(h.response_headers[1].second == "1000");
  CHECK(h.response_headers[2].second == "1e-05");
  CHECK(h.response_headers[3].second == "12345678901234567890");
  CHECK(h.trigger_rule->match.value == "1");
  CHECK(h.trigger_rule->match.parameter.name == "0");
  // Where webhook wants a boolean or an integer, it converts nothing.
  CHECK(hook_error(R"("include-command-output-in-response": "yes")") ==
        "hooks.json: hooks[0] (h): include-command-output-in-response: expected true or false, "
        "got a string");
}

TEST_CASE("webhook file: null is absent, as in webhook", "[webhook_file]") {
  WebhookHook h = one_hook(R"("response-message": null, "trigger-rule": null)");
  CHECK(h.response_message.empty());
  CHECK_FALSE(h.trigger_rule.has_value());
  HooksFiles files =
      parse_one("h.yaml", "- id: a\n  execute-command: /bin/true\n  http-methods:\n");
  CHECK(files.hooks[0].http_methods.empty());
}

TEST_CASE("webhook file: several files are one set", "[webhook_file]") {
  HooksFiles files = parse({{"a.json", R"([{"id": "one", "execute-command": "/bin/a"}])"},
                            {"b.yaml", "- id: two\n  execute-command: /bin/b\n"}});
  REQUIRE(files.hooks.size() == 2);
  CHECK(files.hooks[0].file == "a.json");
  CHECK(files.hooks[1].file == "b.yaml");
  CHECK(files.hooks[1].native.path == "/hooks/two");

  try {
    parse({{"a.json", R"([{"id": "one", "execute-command": "/bin/a"}])"},
           {"b.yaml", "- id: two\n  execute-command: /bin/b\n- id: one\n  execute-command: /x\n"}});
    FAIL("a duplicate id across files was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "b.yaml: hooks[1] (one): id: 'one' is used by a.json: hooks[0] too");
  }
}

TEST_CASE("webhook file: match rules", "[webhook_file]") {
  auto rule = [](const std::string& match) {
    return one_hook(R"("trigger-rule": {"match": )" + match + "}").trigger_rule->match;
  };
  CHECK(
      rule(
          R"({"type": "payload-hmac-sha1", "secret": "k", "parameter": {"source": "header", "name": "X-Hub-Signature"}})")
          .type == MatchRule::Type::payload_hmac_sha1);
  CHECK(
      rule(
          R"({"type": "payload-hmac-sha512", "secret": "k", "parameter": {"source": "header", "name": "X-Sig"}})")
          .type == MatchRule::Type::payload_hmac_sha512);
  // An empty value is a value (it matches an empty parameter).
  CHECK(rule(R"({"type": "value", "value": "", "parameter": {"source": "header", "name": "X"}})")
            .value.empty());
  // Go's syntax (RE2's): (?i) anywhere, \z, Unicode classes.
  MatchRule icase = rule(
      R"({"type": "regex", "regex": "^refs/heads/(?i)main\\z", "parameter": {"source": "payload", "name": "b"}})");
  CHECK(icase.regex->search("refs/heads/MAIN"));
  CHECK_FALSE(icase.regex->search("REFS/heads/main"));
  CHECK_FALSE(icase.regex->search("refs/heads/main\n"));
  CHECK(icase.regex_text == "^refs/heads/(?i)main\\z");
}

TEST_CASE("webhook file: the deprecated payload-hash types are warned about", "[webhook_file]") {
  HooksFiles files = parse_one("hooks.json", R"([{"id": "h", "execute-command": "/bin/true",
    "trigger-rule": {"match": {"type": "payload-hash-sha256", "secret": "k",
                               "parameter": {"source": "header", "name": "X-Sig"}}}}])");
  CHECK(files.hooks[0].trigger_rule->match.type == MatchRule::Type::payload_hmac_sha256);
  CHECK(files.warnings ==
        std::vector<std::string>{"hooks.json: hooks[0] (h): trigger-rule.match.type: "
                                 "'payload-hash-sha256' is deprecated; use payload-hmac-sha256"});
}

TEST_CASE("webhook file: a template is expanded first", "[webhook_file]") {
  HooksFileOptions options;
  options.as_template = true;
  HooksFiles files = parse_one("hooks.json", R"([{"id": "h", "execute-command": "/bin/true",
    "response-message": "{{ cat "/run/secrets/token" }}",
    "trigger-rule": {"match": {"type": "payload-hmac-sha1", "secret": "{{ getenv "DEPLOY_SECRET" | js }}{{ getenv "NOT_SET" }}",
                               "parameter": {"source": "header", "name": "X-Hub-Signature"}}},
    "idem": {"signature": {"scheme": "github", "secret_env": "GITHUB_WEBHOOK_SECRET"}}}])",
                               options);
  const WebhookHook& h = files.hooks[0];
  CHECK(h.response_message == "from-a-file");
  CHECK(h.trigger_rule->match.secret == "s3cr3t");
  CHECK(files.withheld_env ==
        std::vector<std::string>{"DEPLOY_SECRET", "NOT_SET", "GITHUB_WEBHOOK_SECRET"});
  CHECK(h.native.withheld_env == files.withheld_env);
  CHECK(files.warnings == std::vector<std::string>{"hooks.json: template: environment variable "
                                                   "'NOT_SET' is not set; it expanded to an "
                                                   "empty string"});
  // Without --template the braces are text.
  CHECK(error_of("hooks.json", R"([{"id": "{{ getenv "X" }}", "execute-command": "/x"}])") ==
        "hooks.json: not JSON: parse error at line 1, column 21: syntax error while parsing "
        "object - invalid literal; last read: '\"{{ getenv \"X'; expected '}'");
  CHECK(error_of("hooks.json", "[{{ nope }}]", options) ==
        "hooks.json: template: line 1: function 'nope' is not supported (use getenv, cat, "
        "credential, js, html, urlquery or print)");
}

TEST_CASE("webhook file: a template's js output loads whatever the variable holds",
          "[webhook_file]") {
  // As webhook (Go's js, then a YAML parser that takes \' for an apostrophe) loads it.
  HooksFileOptions options;
  options.as_template = true;
  const char* text = R"([{"id": "t", "execute-command": "/bin/echo",
    "response-message": "{{ getenv "V" | js }}|{{ getenv "V" | html | js }}|{{ getenv "V" | urlquery | js }}|{{ print "a" "b" }}|{{- "  x  " -}}  |  {{ "\u00e9\x41\101" }}"}])";
  std::string value = "a\"b'c\\d<e>f&g=h\ti\x01j\xc2\xa0k\xc3\xa9 /~";
  HooksFiles files = parse_hooks_files(
      {{"t.json", text}}, options,
      [&](const std::string& name) -> std::optional<std::string> {
        if (name == "V") return value;
        return std::nullopt;
      },
      fake_file);
  // What webhook 2.8 answered with this file and V.
  CHECK(files.hooks[0].response_message ==
        value +
            "|a&#34;b&#39;c\\d&lt;e&gt;f&amp;g=h\ti\x01j\xc2\xa0k\xc3\xa9 /~|"
            "a%22b%27c%5Cd%3Ce%3Ef%26g%3Dh%09i%01j%C2%A0k%C3%A9+%2F~|ab|  x  |  \xc3\xa9"
            "AA");
  // Outside strings, and in YAML, the text is left alone.
  CHECK(parse_one("t.yaml", "- {id: \"a\\'b\", execute-command: /x}").hooks[0].id == "a'b");
}

TEST_CASE("webhook file: property names are matched ignoring case, as Go's decoder does",
          "[webhook_file]") {
  HooksFiles files = parse_one("hooks.json", R"([{"ID": "h", "Execute-Command": "/bin/true",
    "trigger-rule": {"Match": {"type": "payload-hmac-sha1", "Secret": "k",
                               "parameter": {"Source": "header", "Name": "X-Hub-Signature"}}}}])");
  CHECK(files.hooks[0].id == "h");
  CHECK(files.hooks[0].trigger_rule->match.secret == "k");
  CHECK(files.hooks[0].trigger_rule->match.parameter.name == "X-Hub-Signature");
  CHECK(error_of("hooks.json", R"([{"id": "h", "ID": "i", "execute-command": "/x"}])") ==
        "hooks.json: hooks[0]: duplicate field 'id' (names are matched ignoring case)");
  CHECK(error_of("hooks.yaml",
                 "- id: h\n  execute-command: /x\n  trigger-rule:\n    match:\n"
                 "      type: value\n      Value: a\n      value: b\n") ==
        "hooks.yaml: hooks[0].trigger-rule.match: duplicate field 'value' (names are matched "
        "ignoring case)");
}

TEST_CASE("webhook file: mistakes in the file, one line each", "[webhook_file]") {
  const std::map<std::string, std::string> cases = {
      {R"("colour": 1)", "hooks[0] (h): unknown field 'colour'"},
      {R"("response-headers": [{"name": "Bad Name", "value": "x"}])",
       "hooks[0] (h): response-headers[0].name: 'Bad Name' is not a valid header name"},
      {R"("response-headers": [{"name": "X", "value": "a\nb"}])",
       "hooks[0] (h): response-headers[0].value: 'a\\nb' contains a line break or a NUL character"},
      {R"("response-headers": {"name": "X"})",
       "hooks[0] (h): response-headers: expected an array of {\"name\", \"value\"} objects, got an "
       "object"},
      {R"("http-methods": ["PO ST"])",
       "hooks[0] (h): http-methods[0]: 'PO ST' is not an HTTP method such as POST"},
      {R"("http-methods": ["  "])",
       "hooks[0] (h): http-methods[0]: '' is not an HTTP method such as POST"},
      {R"("success-http-response-code": 200.5)",
       "hooks[0] (h): success-http-response-code: expected an integer, got a number with a "
       "fraction or exponent"},
      {R"("trigger-rule-mismatch-http-response-code": true)",
       "hooks[0] (h): trigger-rule-mismatch-http-response-code: expected an integer, got true"},
      {R"("success-http-response-code": "200")",
       "hooks[0] (h): success-http-response-code: expected an integer, got a string"},
      {R"("pass-arguments-to-command": {"source": "payload"})",
       "hooks[0] (h): pass-arguments-to-command: expected an array of arguments, got an object"},
      {R"("pass-arguments-to-command": [{"source": "body"}])",
       "hooks[0] (h): pass-arguments-to-command[0].source: unknown source 'body' (use header, url, "
       "query, payload, request, raw-request-body, string, entire-payload, entire-query or "
       "entire-headers)"},
      {R"("pass-arguments-to-command": [{"name": "x"}])",
       "hooks[0] (h): pass-arguments-to-command[0]: missing field 'source'"},
      {R"("pass-arguments-to-command": [{"source": "payload"}])",
       "hooks[0] (h): pass-arguments-to-command[0].name: is empty; this source needs a name"},
      {R"("pass-arguments-to-command": [{"source": "header", "name": "X Y"}])",
       "hooks[0] (h): pass-arguments-to-command[0].name: 'X Y' is not a valid header name"},
      {R"("pass-arguments-to-command": [{"source": "request", "name": "path"}])",
       "hooks[0] (h): pass-arguments-to-command[0].name: unknown request attribute 'path' (use "
       "method or remote-addr)"},
      {R"("pass-environment-to-command": [{"source": "payload", "name": "a", "envname": "1X"}])",
       "hooks[0] (h): pass-environment-to-command[0].envname: '1X' is not an environment variable "
       "name (letters, digits and '_', not starting with a digit)"},
      {R"("pass-file-to-command": [{"source": "payload", "name": "a", "base64decode": 1}])",
       "hooks[0] (h): pass-file-to-command[0].base64decode: expected true or false, got an "
       "integer"},
      {R"("pass-file-to-command": [{"source": "payload", "name": "a", "mode": 1}])",
       "hooks[0] (h): pass-file-to-command[0]: unknown field 'mode'"},
      {R"("trigger-rule": {})",
       "hooks[0] (h): trigger-rule: give exactly one of and, or, not or match"},
      {R"("trigger-rule": {"and": [], "or": []})",
       "hooks[0] (h): trigger-rule: give exactly one of and, or, not or match"},
      {R"("trigger-rule": {"xor": []})", "hooks[0] (h): trigger-rule: unknown field 'xor'"},
      {R"("trigger-rule": {"and": {}})",
       "hooks[0] (h): trigger-rule.and: expected an array of rules, got an object"},
      {R"("trigger-rule": {"not": []})",
       "hooks[0] (h): trigger-rule.not: expected an object, got an array"},
      {R"("trigger-rule": {"match": {"type": "hmac-sha384"}})",
       "hooks[0] (h): trigger-rule.match.type: unknown type 'hmac-sha384' (use value, regex, "
       "payload-hmac-sha1, payload-hmac-sha256, payload-hmac-sha512, ip-whitelist or "
       "scalr-signature)"},
      {R"("trigger-rule": {"match": {"value": "x"}})",
       "hooks[0] (h): trigger-rule.match: missing field 'type'"},
      {R"("trigger-rule": {"match": {"type": "value", "parameter": {"source": "payload", "name": "a"}}})",
       "hooks[0] (h): trigger-rule.match: missing field 'value'"},
      {R"("trigger-rule": {"match": {"type": "value", "value": "x"}})",
       "hooks[0] (h): trigger-rule.match: missing field 'parameter'"},
      {R"("trigger-rule": {"match": {"type": "value", "value": "x", "regex": "y", "parameter": {"source": "payload", "name": "a"}}})",
       "hooks[0] (h): trigger-rule.match.regex: not used by type 'value'"},
      {R"("trigger-rule": {"or": [{"match": {"type": "regex", "regex": "(a", "parameter": {"source": "payload", "name": "a"}}}]})",
       "hooks[0] (h): trigger-rule.or[0].match.regex: bad regular expression '(a': missing ): "
       "(a"},
      // Back-references and lookaround are no part of Go's syntax; nor is RE2's \C (any byte).
      {R"("trigger-rule": {"match": {"type": "regex", "regex": "(a)\\1", "parameter": {"source": "payload", "name": "a"}}})",
       "hooks[0] (h): trigger-rule.match.regex: bad regular expression '(a)\\1': invalid escape "
       "sequence: \\1"},
      {R"("trigger-rule": {"match": {"type": "regex", "regex": "(?=b)a", "parameter": {"source": "payload", "name": "a"}}})",
       "hooks[0] (h): trigger-rule.match.regex: bad regular expression '(?=b)a': invalid perl "
       "operator: (?="},
      {R"("trigger-rule": {"match": {"type": "regex", "regex": "a\\C", "parameter": {"source": "payload", "name": "a"}}})",
       "hooks[0] (h): trigger-rule.match.regex: bad regular expression 'a\\C': invalid escape "
       "sequence: \\C"},
      {R"("trigger-rule": {"match": {"type": "regex", "regex": "a{1001}", "parameter": {"source": "payload", "name": "a"}}})",
       "hooks[0] (h): trigger-rule.match.regex: bad regular expression 'a{1001}': invalid "
       "repetition size: {1001}"},
      {R"("trigger-rule": {"match": {"type": "payload-hmac-sha256", "secret": "", "parameter": {"source": "header", "name": "X"}}})",
       "hooks[0] (h): trigger-rule.match.secret: is empty"},
      {R"("trigger-rule": {"match": {"type": "payload-hmac-sha256", "parameter": {"source": "header", "name": "X"}}})",
       "hooks[0] (h): trigger-rule.match: missing field 'secret'"},
      {R"("trigger-rule": {"match": {"type": "scalr-signature", "secret": ""}})",
       "hooks[0] (h): trigger-rule.match.secret: is empty"},
      {R"("trigger-rule": {"match": {"type": "ip-whitelist", "ip-range": "10.0.0.0/33"}})",
       "hooks[0] (h): trigger-rule.match.ip-range: '10.0.0.0/33' is not an address or CIDR range "
       "such as 10.0.0.0/8"},
      {R"("trigger-rule": {"match": {"type": "ip-whitelist", "ip-range": " "}})",
       "hooks[0] (h): trigger-rule.match.ip-range: is empty; list at least one address or CIDR "
       "range"},
      {R"("trigger-rule": {"match": {"type": "ip-whitelist", "ip-range": "::1", "parameter": {"source": "header", "name": "X"}}})",
       "hooks[0] (h): trigger-rule.match.parameter: not used by type 'ip-whitelist'"},
      {R"("idem": {"async": true})", "hooks[0] (h): idem: unknown field 'async'"},
      {R"("idem": {"ttl": "0s"})", "hooks[0] (h): idem.ttl: must be more than 0"},
      {R"("idem": {"timeout": "5x"})", "hooks[0] (h): idem.timeout: bad duration '5x'"},
      {R"("idem": {"max_body": "2GiB"})",
       "hooks[0] (h): idem.max_body: must be at most 1GiB, got 2GiB"},
      {R"("idem": {"max_concurrency": 0})",
       "hooks[0] (h): idem.max_concurrency: must be between 1 and 1024, got 0"},
      {R"("idem": {"key": {"header": "X-Id"}})", "hooks[0] (h): idem.key: unknown field 'header'"},
      {R"("idem": {"key": {"source": "header", "name": "X-Id", "envname": "K"}})",
       "hooks[0] (h): idem.key: unknown field 'envname'"},
      {R"("idem": {"key": {"source": "string", "name": "k"}})",
       "hooks[0] (h): idem.key.source: a constant cannot tell deliveries apart; use a header, the "
       "query or the payload"},
      {R"("idem": {"signature": {"scheme": "github", "secret_env": "UNSET_SECRET"}})",
       "hooks[0] (h): idem.signature.secret_env: environment variable UNSET_SECRET of hook "
       "/hooks/h is not set (or empty)"},
      {R"("idem": {"signature": {"scheme": "github", "secret": "x"}})",
       "hooks[0] (h): idem.signature.secret: secrets are not read from the config file; put the "
       "secret in an environment variable and name that variable in \"secret_env\""},
      {R"("idem": [])", "hooks[0] (h): idem: expected an object, got an array"},
  };
  for (const auto& [fields, message] : cases) {
    INFO(fields);
    CHECK(hook_error(fields) == "hooks.json: " + message);
  }
  // A pattern is bounded (4096 bytes) though RE2 needs no recursion for it: more is a mistake.
  CHECK(hook_error(R"("trigger-rule": {"match": {"type": "regex", "regex": ")" +
                   std::string(4097, 'a') +
                   R"(", "parameter": {"source": "payload", "name": "a"}}})") ==
        "hooks.json: hooks[0] (h): trigger-rule.match.regex: is 4097 bytes; the limit is 4096");
}

TEST_CASE("webhook file: mistakes in a hook's identity and the file's shape", "[webhook_file]") {
  const std::map<std::string, std::string> cases = {
      {R"([{"execute-command": "/x"}])", "hooks[0]: missing field 'id'"},
      {R"([{"id": "", "execute-command": "/x"}])", "hooks[0]: id: is empty"},
      {R"([{"id": [5], "execute-command": "/x"}])",
       "hooks[0]: id: expected a string, got an array"},
      {R"([{"id": "a"}])", "hooks[0] (a): missing field 'execute-command'"},
      {R"([{"id": "a", "execute-command": ""}])",
       "hooks[0] (a): execute-command: is empty; name the program to run"},
      {R"([{"id": "a", "execute-command": "/x"}, {"id": "a", "execute-command": "/y"}])",
       "hooks[1] (a): id: 'a' is used by hooks[0] too"},
      {R"([{"id": "a", "execute-command": "/x"}, 7])",
       "hooks[1]: expected an object, got an integer"},
      {R"({"id": "a"})", "expected an array of hooks, got an object"},
      {"[]", "lists no hooks"},
      {R"([{"id": "a", "id": "b"}])", "[0]: duplicate field 'id'"},
      {"[{",
       "not JSON: parse error at line 1, column 3: syntax error while parsing object key - "
       "unexpected end of input; expected string literal"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK(error_of("hooks.json", text) == "hooks.json: " + message);
  }
  // The limit of a record's path counts the id encoded: 7 + 246 + 3 bytes, its space as %20.
  CHECK_THAT(error_of("hooks.json",
                      R"([{"id": ")" + std::string(246, 'x') + R"( ", "execute-command": "/x"}])"),
             Catch::Matchers::EndsWith("' is 256 bytes; the limit is 255"));
}

TEST_CASE("webhook file: mistakes in YAML", "[webhook_file]") {
  const std::map<std::string, std::string> cases = {
      {"", "lists no hooks"},
      {"# nothing\n", "lists no hooks"},
      {"id: a\n", "expected an array of hooks, got an object"},
      {"- id: a\n  id: b\n", "line 2, column 3: duplicate field 'id'"},
      {"- id: [a\n", "not YAML: line 2, column 1: end of sequence flow not found"},
      {"- ? [a]\n  : b\n", "line 1, column 5: a mapping key must be a plain value"},
      {"- id: \"a\xff\"\n", "line 1, column 7: not valid UTF-8"},
      {"- id: a\xc3\n", "line 1, column 7: not valid UTF-8"},
      {"- \xed\xa0\x80: a\n", "line 1, column 3: not valid UTF-8"},
      {"- id: a\n  execute-command: /x\n  include-command-output-in-response: 'yes'\n",
       "hooks[0] (a): include-command-output-in-response: expected true or false, got a string"},
      {"- id: a\n  execute-command: /x\n  success-http-response-code: 2.5\n",
       "hooks[0] (a): success-http-response-code: expected an integer, got a number with a "
       "fraction or exponent"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK(error_of("hooks.yaml", text) == "hooks.yaml: " + message);
  }
}

TEST_CASE("webhook file: YAML's aliases cannot blow up", "[webhook_file]") {
  // Nine levels of ten aliases each: a billion values from a few hundred bytes.
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    std::string previous = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + previous;
    for (int k = 1; k < 10; ++k) text += ", " + previous;
    text += "]\n";
  }
  CHECK(error_of("hooks.yaml", text) == "hooks.yaml: aliases expand to more than 200000 values");
}

TEST_CASE("webhook file: a serial object in the idem object", "[webhook_file][serial]") {
  HooksFiles files = parse_one("hooks.json", R"([{"id": "q", "execute-command": "/bin/true",
      "idem": {"key": {"source": "header", "name": "X-Key"},
               "serial": {"group": {"header": "X-Repo"}, "mode": "latest"}}}])");
  const auto& serial = files.hooks[0].native.serial;
  REQUIRE(serial.has_value());
  REQUIRE(serial->source.has_value());
  CHECK(serial->source->name == "X-Repo");
  CHECK(serial->latest);
  // Without a key every delivery runs unstored: none could wait in a line.
  CHECK(error_of("hooks.json",
                 R"([{"id": "q", "execute-command": "/bin/true", "idem": {"serial": {}}}])")
            .find("idem.serial") != std::string::npos);
}

}  // namespace unit_webhook_file
