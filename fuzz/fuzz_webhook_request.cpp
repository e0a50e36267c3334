// The request side of webhook hooks (webhook/request.hpp): whatever a sender puts in the
// query, a header and the body, under any content type, make_request, evaluate and command_for
// answer without crashing or throwing; a rule that needs an HMAC under a secret the fuzzer cannot
// know never holds; errors are one line; rendered values are valid JSON where they are JSON.
//
// Input layout: the first byte picks the content type and the hook's options; then the query up
// to the first newline, a header value (sent as X-Signature, X-Meta and Date) up to the next, a
// payload path up to the next, and the rest is the body.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "webhook/payload.hpp"
#include "webhook/request.hpp"

using namespace idem::webhook;
using Source = Argument::Source;

namespace {

Argument arg(Source source, std::string name) {
  Argument a;
  a.source = source;
  a.name = std::move(name);
  return a;
}

Rule match(MatchRule::Type type, Argument parameter) {
  Rule rule;
  rule.match.type = type;
  rule.match.parameter = std::move(parameter);
  rule.match.secret = "secret-nobody-knows";
  return rule;
}

Rule group(Rule::Kind kind, std::vector<Rule> children) {
  Rule rule;
  rule.kind = kind;
  rule.children = std::move(children);
  return rule;
}

WebhookHook make_hook(uint8_t options, const std::string& path) {
  WebhookHook hook;
  hook.execute_command = "/bin/true";
  hook.signature_soft_failures = (options & 0x08) != 0;
  Rule regex = match(MatchRule::Type::regex, arg(Source::payload, path));
  regex.match.regex_text = "^[a-z]+/[0-9]+$";
  regex.match.regex = compile_regex(regex.match.regex_text);
  Rule value = match(MatchRule::Type::value, arg(Source::url, path));
  value.match.value = "x";
  Rule whitelist = match(MatchRule::Type::ip_whitelist, {});
  whitelist.match.ip_range = "10.0.0.0/8 ::1";
  Rule other = group(Rule::Kind::any, {regex, group(Rule::Kind::negate, {value}), whitelist,
                                       match(MatchRule::Type::scalr_signature, {})});
  Rule hmac = match(
      (options & 0x10) ? MatchRule::Type::payload_hmac_sha1 : MatchRule::Type::payload_hmac_sha512,
      arg(Source::header, "X-Signature"));
  // Every path to "ok" goes through the HMAC.
  hook.trigger_rule = group(Rule::Kind::all, {hmac, other});
  hook.parse_as_json = {arg(Source::payload, path), arg(Source::header, "X-Meta")};
  hook.pass_arguments = {arg(Source::payload, path), arg(Source::entire_payload, ""),
                         arg(Source::entire_headers, ""), arg(Source::entire_query, ""),
                         arg(Source::header, "X-Meta." + path)};
  hook.pass_environment = {arg(Source::url, path)};
  Argument file = arg(Source::payload, path);
  file.base64decode = (options & 0x20) != 0;
  hook.pass_file = {file};
  return hook;
}

bool valid_json(const std::string& text) { return nlohmann::json::accept(text); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr const char* k_types[] = {"application/json",
                                            "application/x-www-form-urlencoded",
                                            "text/xml",
                                            "text/plain",
                                            "",
                                            "multipart/form-data; boundary=XB"};
  const uint8_t options = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  auto take_line = [&rest] {
    auto nl = rest.find('\n');
    std::string line(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    return line;
  };
  const std::string query = take_line();
  const std::string header = take_line();
  const std::string path = take_line();
  WebhookHook hook = make_hook(options, path);
  std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Type", k_types[options % 6]},
      {"X-Signature", header},
      {"x-meta", header},
      {"Date", header}};
  Request request = make_request(hook, "POST", (options & 0x40) ? "[::1]:1" : "10.1.2.3:4", headers,
                                 query, std::string(rest), 1'700'000'000);
  FUZZ_CHECK(request.payload.is_null() || request.payload.is_object());
  FUZZ_CHECK(valid_json(go_json(request.payload)));
  FUZZ_CHECK(valid_json(go_json(request.header_values)));
  FUZZ_CHECK(valid_json(go_json(request.query_values)));
  RuleResult result = evaluate(hook, request);
  FUZZ_CHECK(!result.ok);
  if (result.error) FUZZ_CHECK(result.error->find('\n') == std::string::npos);
  Command command = command_for(hook, request);
  FUZZ_CHECK(command.argv.size() == 1 + hook.pass_arguments.size());
  FUZZ_CHECK(valid_json(command.argv[2]) && valid_json(command.argv[3]) &&
             valid_json(command.argv[4]));
  return 0;
}
