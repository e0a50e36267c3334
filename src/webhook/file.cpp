#include "webhook/file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string_view>

#include "front/config_fields.hpp"
#include "net/ip_range.hpp"
#include "util/hex.hpp"
#include "webhook/template.hpp"
#include "webhook/yaml.hpp"

namespace idem::webhook {

namespace {

using namespace front::config_fields;

constexpr int64_t k_default_max_body = int64_t(10) << 20;  // 10 MiB
constexpr int k_max_rule_depth = 64;  // nested and/or/not: more is a mistake, or an attack
// RE2 compiles in linear time and bounded memory (webhook/regex.cpp), but a pattern longer than
// this in a hooks file is a mistake, not a rule.
constexpr size_t k_max_regex_bytes = 4096;

// How one file is read: the environment of idem's signatures, and where warnings go.
struct Reader {
  const front::EnvLookup& env;
  std::vector<std::string>& warnings;
  bool templated = false;  // the file was expanded as a template (--template)
};

// A signature rule's secret that is still a template action ("{{ getenv "X" | js }}") in a file
// served without --template: its literal text would be the HMAC key, so a request signed with
// that text (which anyone reading the file knows) would pass. Refused, naming the variable.
void refuse_unexpanded_secret(const std::string& secret, const std::string& at,
                              const Reader& reader) {
  if (reader.templated || secret.find("{{") == std::string::npos) return;
  std::string variable;
  if (size_t g = secret.find("getenv"); g != std::string::npos) {
    const size_t open = secret.find('"', g),
                 close = open == std::string::npos ? std::string::npos : secret.find('"', open + 1);
    if (close != std::string::npos) variable = secret.substr(open + 1, close - open - 1);
  }
  fail(at,
       "is a template action" +
           (variable.empty() ? std::string() : " (environment variable " + quote(variable) + ")") +
           " but the file is not served with --template: its text would be the secret; add "
           "--template");
}

// A member that is there and not null: webhook's loader treats a null as absent.
const Json* present(const Json& object, const std::string& name) {
  const Json* value = optional_field(object, name);
  return value && !value->is_null() ? value : nullptr;
}

const Json& needed(const Json& object, const std::string& at, const std::string& name) {
  const Json* value = present(object, name);
  if (!value) fail(at, "missing field " + quote(name));
  return *value;
}

// A number as Go's strconv.FormatFloat(f, 'g', -1, 32) writes it, which is how webhook's YAML
// loader turns a float into a string: the fewest digits that read back as the same float32, in
// exponent form when the exponent is below -4 or at least 6 ("1e+07", "1000", "0.0001").
std::string go_float_text(double value) {
  if (value != value) return ".nan";
  auto single = static_cast<float>(value);
  if (single > std::numeric_limits<float>::max()) return ".inf";
  if (single < -std::numeric_limits<float>::max()) return "-.inf";
  char text[64];
  int digits = 1;
  for (; digits < 9; ++digits) {  // 9 digits always read back
    std::snprintf(text, sizeof text, "%.*e", digits - 1, double(single));
    if (std::strtof(text, nullptr) == single) break;
  }
  int n = std::snprintf(text, sizeof text, "%.*e", digits - 1, double(single));
  const int exponent = std::atoi(std::strchr(text, 'e') + 1);
  if (exponent >= -4 && exponent < 6)
    n = std::snprintf(text, sizeof text, "%.*f", std::max(digits - 1 - exponent, 0),
                      double(single));
  return std::string(text, size_t(n));
}

// webhook's loader turns a number or a boolean into its text where it expects a string (`"value":
// 1` is "1", `id: 7` is "7"), in JSON files as in YAML ones: it reads both as YAML.
std::string read_text(const Json& value, const std::string& at, const Reader&) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return value.dump();
  if (value.is_number_float()) return go_float_text(value.get<double>());
  wrong_type(at, "a string", value);
}

std::string optional_text(const Json& object, const std::string& at, const std::string& name,
                          const Reader& reader) {
  const Json* value = present(object, name);
  return value ? read_text(*value, member(at, name), reader) : std::string();
}

bool optional_bool(const Json& object, const std::string& at, const std::string& name) {
  const Json* value = present(object, name);
  return value && read_bool(*value, member(at, name));
}

void no_nul(const std::string& text, const std::string& at) {
  if (text.find('\0') != std::string::npos) fail(at, quote(text) + " contains a NUL character");
}

const std::pair<std::string_view, Argument::Source> k_sources[] = {
    {"header", Argument::Source::header},
    {"url", Argument::Source::url},
    {"query", Argument::Source::url},
    {"payload", Argument::Source::payload},
    {"request", Argument::Source::request},
    {"raw-request-body", Argument::Source::raw_request_body},
    {"string", Argument::Source::string},
    {"entire-payload", Argument::Source::entire_payload},
    {"entire-query", Argument::Source::entire_query},
    {"entire-headers", Argument::Source::entire_headers},
};

Argument::Source read_source(const Json& object, const std::string& at, const Reader& reader) {
  std::string where = member(at, "source");
  std::string name = read_text(needed(object, at, "source"), where, reader);
  for (const auto& [text, source] : k_sources)
    if (name == text) return source;
  fail(where, "unknown source " + quote(name) +
                  " (use header, url, query, payload, request, raw-request-body, string, "
                  "entire-payload, entire-query or entire-headers)");
}

// The name an argument's source needs: a header, a query field, a payload path, a request
// attribute. The other sources ignore it (but pass-environment-to-command names its variable
// after it).
void check_argument_name(Argument& argument, const std::string& at) {
  using Source = Argument::Source;
  Source s = argument.source;
  if (s != Source::header && s != Source::url && s != Source::payload && s != Source::request)
    return;
  if (argument.name.empty()) fail(at, "is empty; this source needs a name");
  if (s == Source::header && !is_token(argument.name))
    fail(at, quote(argument.name) + " is not a valid header name");
  if (s == Source::request) {
    std::string lower = argument.name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (lower != "method" && lower != "remote-addr")
      fail(at,
           "unknown request attribute " + quote(argument.name) + " (use method or remote-addr)");
    argument.name = lower;
  }
}

// `for_key`: idem's key, a source and a name only.
Argument read_argument(const Json& value, const std::string& at, const Reader& reader,
                       bool for_key = false) {
  expect_object(value, at);
  if (for_key)
    check_fields(value, at, {"source", "name"});
  else
    check_fields(value, at, {"source", "name", "envname", "base64decode"});
  Argument argument;
  argument.source = read_source(value, at, reader);
  argument.name = optional_text(value, at, "name", reader);
  check_argument_name(argument, member(at, "name"));
  argument.envname = optional_text(value, at, "envname", reader);
  if (!argument.envname.empty() && !is_env_name(argument.envname))
    fail(member(at, "envname"), quote(argument.envname) +
                                    " is not an environment variable name (letters, digits and "
                                    "'_', not starting with a digit)");
  argument.base64decode = optional_bool(value, at, "base64decode");
  return argument;
}

std::vector<Argument> read_arguments(const Json& hook, const std::string& name,
                                     const Reader& reader) {
  const Json* value = present(hook, name);
  if (!value) return {};
  if (!value->is_array()) wrong_type(name, "an array of arguments", *value);
  std::vector<Argument> arguments;
  for (size_t i = 0; i < value->size(); ++i)
    arguments.push_back(read_argument((*value)[i], element(name, i), reader));
  return arguments;
}

// --- trigger rules ---------------------------------------------------------------------------

struct MatchType {
  std::string_view name;
  MatchRule::Type type;
  std::vector<std::string_view> fields;  // besides "type"
  bool deprecated = false;
};

const MatchType k_match_types[] = {
    {"value", MatchRule::Type::value, {"value", "parameter"}},
    {"regex", MatchRule::Type::regex, {"regex", "parameter"}},
    {"payload-hmac-sha1", MatchRule::Type::payload_hmac_sha1, {"secret", "parameter"}},
    {"payload-hmac-sha256", MatchRule::Type::payload_hmac_sha256, {"secret", "parameter"}},
    {"payload-hmac-sha512", MatchRule::Type::payload_hmac_sha512, {"secret", "parameter"}},
    {"payload-hash-sha1", MatchRule::Type::payload_hmac_sha1, {"secret", "parameter"}, true},
    {"payload-hash-sha256", MatchRule::Type::payload_hmac_sha256, {"secret", "parameter"}, true},
    {"payload-hash-sha512", MatchRule::Type::payload_hmac_sha512, {"secret", "parameter"}, true},
    {"ip-whitelist", MatchRule::Type::ip_whitelist, {"ip-range"}},
    {"scalr-signature", MatchRule::Type::scalr_signature, {"secret"}},
};

const MatchType& read_match_type(const Json& match, const std::string& at, const Reader& reader) {
  std::string where = member(at, "type");
  std::string name = read_text(needed(match, at, "type"), where, reader);
  for (const MatchType& type : k_match_types) {
    if (name != type.name) continue;
    if (type.deprecated)
      reader.warnings.push_back(where + ": " + quote(name) + " is deprecated; use " +
                                "payload-hmac-" + name.substr(std::string("payload-hash-").size()));
    return type;
  }
  fail(where, "unknown type " + quote(name) +
                  " (use value, regex, payload-hmac-sha1, payload-hmac-sha256, "
                  "payload-hmac-sha512, ip-whitelist or scalr-signature)");
}

// webhook compiles a rule's pattern at every request and answers 500 when it does not compile;
// here it is compiled once, and a pattern Go refuses (or RE2 cannot fit in its memory budget) is
// refused at load.
std::shared_ptr<const Regex> read_regex(const std::string& text, const std::string& at) {
  if (text.size() > k_max_regex_bytes)
    fail(at, "is " + std::to_string(text.size()) + " bytes; the limit is " +
                 std::to_string(k_max_regex_bytes));
  try {
    return compile_regex(text);
  } catch (const std::invalid_argument& e) {
    fail(at, "bad regular expression " + quote(text) + ": " + printable(e.what(), 200, true));
  }
}

void read_match_fields(const Json& match, const std::string& at, const Reader& reader,
                       MatchRule& rule) {
  using Type = MatchRule::Type;
  switch (rule.type) {
    case Type::value:
      rule.value = read_text(needed(match, at, "value"), member(at, "value"), reader);
      break;
    case Type::regex:
      rule.regex_text = read_text(needed(match, at, "regex"), member(at, "regex"), reader);
      rule.regex = read_regex(rule.regex_text, member(at, "regex"));
      break;
    case Type::ip_whitelist:
      rule.ip_range = read_text(needed(match, at, "ip-range"), member(at, "ip-range"), reader);
      try {
        if (net::parse_ranges(rule.ip_range).empty())
          fail(member(at, "ip-range"), "is empty; list at least one address or CIDR range");
      } catch (const std::invalid_argument& e) {
        fail(member(at, "ip-range"), printable(e.what(), 200, false));
      }
      return;
    default:  // the signature types
      rule.secret = read_text(needed(match, at, "secret"), member(at, "secret"), reader);
      // An empty secret would make every signature trivially forgeable.
      if (rule.secret.empty()) fail(member(at, "secret"), "is empty");
      refuse_unexpanded_secret(rule.secret, member(at, "secret"), reader);
      if (rule.type == Type::scalr_signature) return;
  }
  rule.parameter = read_argument(needed(match, at, "parameter"), member(at, "parameter"), reader);
}

MatchRule read_match(const Json& match, const std::string& at, const Reader& reader) {
  expect_object(match, at);
  check_fields(match, at, {"type", "regex", "secret", "value", "parameter", "ip-range"});
  const MatchType& type = read_match_type(match, at, reader);
  for (const auto& [name, value] : match.items())
    if (name != "type" && !value.is_null() &&
        std::find(type.fields.begin(), type.fields.end(), name) == type.fields.end())
      fail(member(at, name), "not used by type " + quote(type.name));
  MatchRule rule;
  rule.type = type.type;
  read_match_fields(match, at, reader, rule);
  return rule;
}

Rule read_rule(const Json& value, const std::string& at, const Reader& reader, int depth) {
  expect_object(value, at);
  check_fields(value, at, {"and", "or", "not", "match"});
  if (value.size() != 1) fail(at, "give exactly one of and, or, not or match");
  if (depth > k_max_rule_depth)
    fail(at, "rules nested more than " + std::to_string(k_max_rule_depth) + " deep");
  Rule rule;
  auto only = value.begin();
  const std::string& name = only.key();
  const Json& inner = only.value();
  std::string where = member(at, name);
  if (name == "match") {
    rule.kind = Rule::Kind::match;
    rule.match = read_match(inner, where, reader);
  } else if (name == "not") {
    rule.kind = Rule::Kind::negate;
    rule.children.push_back(read_rule(inner, where, reader, depth + 1));
  } else {
    rule.kind = name == "and" ? Rule::Kind::all : Rule::Kind::any;
    if (!inner.is_array()) wrong_type(where, "an array of rules", inner);
    for (size_t i = 0; i < inner.size(); ++i)
      rule.children.push_back(read_rule(inner[i], element(where, i), reader, depth + 1));
  }
  return rule;
}

// --- a hook ----------------------------------------------------------------------------------

// success-http-response-code and trigger-rule-mismatch-http-response-code: any integer, as
// webhook's loader reads an int (a float without a fraction too: its YAML-to-JSON step writes
// 201.0 as 201). 0 (or absent) is webhook's "not set"; a code Go does not know answers 200, as
// in webhook, with a warning at load (-1 stands for one beyond int's range).
int read_status(const Json& hook, const std::string& name, const Reader& reader) {
  const Json* value = present(hook, name);
  if (!value) return 0;
  constexpr double k_int64_bound = 9223372036854775808.0;  // 2^63
  double number = 0;
  if (value->is_number_integer() && !value->is_number_unsigned())
    number = double(value->get<int64_t>());
  else if (value->is_number_unsigned())
    number = double(value->get<uint64_t>());
  else if (value->is_number_float())
    number = value->get<double>();
  else
    wrong_type(name, "an integer", *value);
  if (number != std::floor(number) || number >= k_int64_bound || number < -k_int64_bound)
    wrong_type(name, "an integer", *value);
  const bool fits = number >= double(std::numeric_limits<int>::min()) &&
                    number <= double(std::numeric_limits<int>::max());
  const int code = fits ? int(number) : -1;
  if (code != 0 && !known_status(code))
    reader.warnings.push_back(name + ": " + value->dump() +
                              " is not an HTTP status webhook knows; it answers 200 instead");
  return code;
}

std::vector<std::pair<std::string, std::string>> read_response_headers(const Json& hook,
                                                                       const Reader& reader) {
  const std::string at = "response-headers";
  const Json* value = present(hook, at);
  if (!value) return {};
  if (!value->is_array()) wrong_type(at, "an array of {\"name\", \"value\"} objects", *value);
  std::vector<std::pair<std::string, std::string>> headers;
  for (size_t i = 0; i < value->size(); ++i) {
    std::string where = element(at, i);
    const Json& header = (*value)[i];
    expect_object(header, where);
    check_fields(header, where, {"name", "value"});
    std::string name = read_text(needed(header, where, "name"), member(where, "name"), reader);
    if (!is_token(name)) fail(member(where, "name"), quote(name) + " is not a valid header name");
    std::string text = optional_text(header, where, "value", reader);
    if (text.find_first_of("\r\n", 0) != std::string::npos || text.find('\0') != std::string::npos)
      fail(member(where, "value"), quote(text) + " contains a line break or a NUL character");
    headers.emplace_back(std::move(name), std::move(text));
  }
  return headers;
}

// Trimmed and upper-cased, as webhook compares them; each one once.
std::vector<std::string> read_http_methods(const Json& hook, const Reader& reader) {
  const std::string at = "http-methods";
  const Json* value = present(hook, at);
  if (!value) return {};
  if (!value->is_array()) wrong_type(at, "an array of HTTP methods such as [\"POST\"]", *value);
  std::vector<std::string> methods;
  for (size_t i = 0; i < value->size(); ++i) {
    std::string where = element(at, i);
    std::string method = read_text((*value)[i], where, reader);
    size_t begin = method.find_first_not_of(" \t\r\n");
    size_t end = method.find_last_not_of(" \t\r\n");
    method = begin == std::string::npos ? "" : method.substr(begin, end - begin + 1);
    std::transform(method.begin(), method.end(), method.begin(),
                   [](unsigned char c) { return char(std::toupper(c)); });
    if (!is_token(method)) fail(where, quote(method) + " is not an HTTP method such as POST");
    if (std::find(methods.begin(), methods.end(), method) == methods.end())
      methods.push_back(std::move(method));
  }
  return methods;
}

// idem's own properties, in the hook's "idem" object; `hook.native` already has its path.
void read_idem(const Json& value, const Reader& reader, WebhookHook& hook) {
  const std::string at = "idem";
  expect_object(value, at);
  check_fields(value, at,
               {"key", "ttl", "timeout", "max_body", "max_concurrency", "max_queue",
                "retry_abandoned", "signature", "serial"});
  if (const Json* key = present(value, "key")) {
    hook.key = read_argument(*key, member(at, "key"), reader, true);
    // A constant would make every delivery after the first a replay of it.
    if (hook.key->source == Argument::Source::string)
      fail(member(at, "key.source"),
           "a constant cannot tell deliveries apart; use a header, "
           "the query or the payload");
  }
  hooks::config_fields::read_limits(value, at, hook.native);
  if (const Json* serial = present(value, "serial")) {
    // A delivery without a key is stored nowhere, so it could not wait in a line.
    if (!hook.key) fail(member(at, "serial"), "needs a key: add \"key\" to the idem object");
    hook.native.serial = hooks::config_fields::read_serial(*serial, member(at, "serial"));
  }
  if (const Json* signature = present(value, "signature"))
    hook.native.signature = hooks::config_fields::read_signature(
        *signature, member(at, "signature"), reader.env, hook.native.path, hook.native.secret_env);
}

void read_behaviour(const Json& value, const Reader& reader, WebhookHook& hook) {
  hook.execute_command = read_text(needed(value, "", "execute-command"), "execute-command", reader);
  if (hook.execute_command.empty()) fail("execute-command", "is empty; name the program to run");
  no_nul(hook.execute_command, "execute-command");
  hook.working_directory = optional_text(value, "", "command-working-directory", reader);
  no_nul(hook.working_directory, "command-working-directory");
  hook.response_message = optional_text(value, "", "response-message", reader);
  hook.response_headers = read_response_headers(value, reader);
  hook.capture_output = optional_bool(value, "", "include-command-output-in-response");
  hook.capture_output_on_error =
      optional_bool(value, "", "include-command-output-in-response-on-error");
  hook.pass_environment = read_arguments(value, "pass-environment-to-command", reader);
  hook.pass_arguments = read_arguments(value, "pass-arguments-to-command", reader);
  hook.pass_file = read_arguments(value, "pass-file-to-command", reader);
  hook.parse_as_json = read_arguments(value, "parse-parameters-as-json", reader);
  if (const Json* rule = present(value, "trigger-rule"))
    hook.trigger_rule = read_rule(*rule, "trigger-rule", reader, 0);
  hook.mismatch_code = read_status(value, "trigger-rule-mismatch-http-response-code", reader);
  hook.signature_soft_failures = optional_bool(value, "", "trigger-signature-soft-failures");
  hook.incoming_content_type = optional_text(value, "", "incoming-payload-content-type", reader);
  hook.success_code = read_status(value, "success-http-response-code", reader);
  hook.http_methods = read_http_methods(value, reader);
}

// `text` with every byte `keep` refuses as %XX (upper-case hex, as Go writes it).
std::string percent_encoded(std::string_view text, bool (*keep)(unsigned char)) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (keep(byte)) {
      out += c;
    } else {
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 0xF];
    }
  }
  return out;
}

// A served path as a record's and a route's name: the bytes a request target cannot hold raw
// (controls, space, non-ASCII) and '%', '?' and '#' percent-encoded, everything else as is (a
// hook "a b" has its records under "/hooks/a%20b", a hook "deploy!" under "/hooks/deploy!").
std::string record_path(std::string_view served) {
  return percent_encoded(served, [](unsigned char c) {
    return c > 0x20 && c < 0x7f && c != '%' && c != '?' && c != '#';
  });
}

// The native hook the daemon serves it as: webhook's defaults where idem's differ (no timeout,
// a 10 MiB body limit), then what the "idem" object sets.
void fill_native(const Json& value, const HooksFileOptions& options, const Reader& reader,
                 WebhookHook& hook) {
  hooks::Hook& native = hook.native;
  hook.served_path =
      "/" + (options.urlprefix.empty() ? hook.id : options.urlprefix + "/" + hook.id);
  native.path = record_path(hook.served_path);
  hooks::config_fields::check_hook_path(native.path, "id");
  if (std::string clean = cleaned_path(hook.served_path); clean != hook.served_path)
    reader.warnings.push_back("id: " + quote(hook.served_path) +
                              " is never served: webhook's router redirects it to " + quote(clean));
  native.command = {hook.execute_command};
  native.methods = hook.http_methods;
  native.timeout_ms = 0;
  native.max_body = k_default_max_body;
  if (const Json* idem = present(value, "idem")) read_idem(*idem, reader, hook);
}

const std::vector<std::string_view> k_hook_fields = {"id",
                                                     "execute-command",
                                                     "command-working-directory",
                                                     "response-message",
                                                     "response-headers",
                                                     "include-command-output-in-response",
                                                     "include-command-output-in-response-on-error",
                                                     "pass-environment-to-command",
                                                     "pass-arguments-to-command",
                                                     "pass-file-to-command",
                                                     "parse-parameters-as-json",
                                                     "trigger-rule",
                                                     "trigger-rule-mismatch-http-response-code",
                                                     "trigger-signature-soft-failures",
                                                     "incoming-payload-content-type",
                                                     "success-http-response-code",
                                                     "http-methods",
                                                     "idem"};

// Where each id was first seen: its file and index.
using IdOwners = std::map<std::string, std::pair<std::string, size_t>>;

WebhookHook read_hook(const Json& value, const std::string& file, size_t index,
                      const HooksFileOptions& options, const Reader& reader, IdOwners& owners) {
  std::string label = element("hooks", index);
  try {
    expect_object(value, "");
    WebhookHook hook;
    hook.file = file;
    hook.id = read_text(needed(value, "", "id"), "id", reader);
    if (hook.id.empty()) fail("id", "is empty");
    label += " (" + printable(hook.id, 100, false) + ")";
    check_fields(value, "", k_hook_fields);
    if (auto [it, fresh] = owners.try_emplace(hook.id, file, index); !fresh)
      fail("id", quote(hook.id) + " is used by " +
                     (it->second.first == file ? "" : it->second.first + ": ") +
                     element("hooks", it->second.second) + " too");
    read_behaviour(value, reader, hook);
    fill_native(value, options, reader, hook);
    return hook;
  } catch (const Problem& p) {
    throw Problem{p.at.empty() ? label : label + ": " + p.at, p.what};
  }
}

bool looks_like_json(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '[' || text[first] == '{');
}

// webhook reads its JSON files with a YAML parser, which takes \' in a double-quoted string for
// an apostrophe, and Go's js template function writes one that way: a file such as
// "secret": "{{ getenv "S" | js }}" loads there whatever the secret holds. JSON has no such
// escape, so it becomes the apostrophe itself before the JSON parser sees it.
std::string with_plain_apostrophes(const std::string& text) {
  if (text.find("\\'") == std::string::npos) return text;
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string && c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] != '\'') out += c;
      out += text[++i];
      continue;
    }
    if (c == '"') in_string = !in_string;
    out += c;
  }
  return out;
}

// webhook reads every hooks file with a YAML parser, JSON included: a JSON file may hold what
// only YAML allows (a trailing comma, a key: value pair as an element of an array, a comment),
// and its plain numbers and booleans resolve as YAML's. Where yaml-cpp cannot read a file that
// looks like JSON, JSON's parser reads it, and its message names the mistake.
Json parse_file_text(const std::string& text) {
  if (!looks_like_json(text)) return parse_yaml(text);
  const std::string plain = with_plain_apostrophes(text);
  try {
    return parse_yaml(plain);
  } catch (const Problem&) {
    return parse_json(plain);
  }
}

void add_once(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

// Go's JSON decoder, which webhook reads its files with, matches a member to a property whatever
// the case of its letters ("Secret" in webhook's own template example): every member name is
// lower-cased, and two that differ in case alone are a duplicate.
Json with_folded_names(const Json& value, const std::string& at, int depth = 0) {
  if (depth > 256) fail(at, "nested too deeply");
  if (value.is_array()) {
    Json out = Json::array();
    for (size_t i = 0; i < value.size(); ++i)
      out.push_back(with_folded_names(value[i], element(at.empty() ? "hooks" : at, i), depth + 1));
    return out;
  }
  if (!value.is_object()) return value;
  Json out = Json::object();
  for (const auto& [name, member_value] : value.items()) {
    std::string folded = name;
    std::transform(folded.begin(), folded.end(), folded.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (out.contains(folded))
      fail(at, "duplicate field " + quote(folded) + " (names are matched ignoring case)");
    out[folded] = with_folded_names(member_value, member(at, folded), depth + 1);
  }
  return out;
}

// One file: expanded when it is a template, parsed, every hook read.
void read_file(const HooksFileText& file, const HooksFileOptions& options,
               const front::EnvLookup& env, const FileLookup& lookup, IdOwners& owners,
               HooksFiles& out) {
  std::string text = file.text;
  if (options.as_template) {
    TemplateOutput expanded;
    try {
      expanded = expand_template(text, env, lookup);
    } catch (const TemplateError& e) {
      fail("", std::string("template: ") + e.what());
    }
    text = std::move(expanded.text);
    for (const std::string& name : expanded.read_env) add_once(out.withheld_env, name);
    for (const std::string& name : expanded.unset_env)
      out.warnings.push_back(file.name + ": template: environment variable " + quote(name) +
                             " is not set; it expanded to an empty string");
    for (const std::string& path : expanded.unreadable_files)
      out.warnings.push_back(file.name + ": template: cannot read " + quote(path) +
                             "; it expanded to an empty string");
  }
  Reader reader{env, out.warnings, options.as_template};
  Json doc = parse_file_text(text);
  if (doc.is_null() || (doc.is_array() && doc.empty())) fail("", "lists no hooks");
  doc = with_folded_names(doc, "");
  if (!doc.is_array()) wrong_type("", "an array of hooks", doc);
  size_t first_warning = out.warnings.size();
  for (size_t i = 0; i < doc.size(); ++i) {
    out.hooks.push_back(read_hook(doc[i], file.name, i, options, reader, owners));
    for (size_t w = first_warning; w < out.warnings.size(); ++w)
      out.warnings[w] = file.name + ": " + element("hooks", i) + " (" +
                        printable(out.hooks.back().id, 100, false) + "): " + out.warnings[w];
    first_warning = out.warnings.size();
  }
}

}  // namespace

std::optional<std::string> decoded_path(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%') {
      out += path[i];
      continue;
    }
    int high = i + 2 < path.size() ? util::hex_digit(path[i + 1]) : -1;
    int low = i + 2 < path.size() ? util::hex_digit(path[i + 2]) : -1;
    if (high < 0 || low < 0) return std::nullopt;
    out += char(high * 16 + low);
    i += 2;
  }
  return out;
}

std::string cleaned_path(std::string_view path) {
  // Go's path.Clean on a rooted path: the segments left after dropping empty ones and "." and
  // applying "..", joined under "/".
  std::vector<std::string_view> kept;
  for (size_t at = 0; at <= path.size();) {
    size_t slash = std::min(path.find('/', at), path.size());
    std::string_view segment = path.substr(at, slash - at);
    at = slash + 1;
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") {
      if (!kept.empty()) kept.pop_back();
      continue;
    }
    kept.push_back(segment);
  }
  std::string out;
  for (std::string_view segment : kept) {
    out += '/';
    out += segment;
  }
  if (out.empty()) return "/";
  if (path.ends_with('/')) out += '/';
  return out;
}

std::string go_escaped_path(std::string_view path) {
  return percent_encoded(path, [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("-._~$&+,/:;=@").find(char(c)) != std::string_view::npos;
  });
}

bool known_status(int status) {
  static const int known[] = {100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208,
                              226, 300, 301, 302, 303, 304, 305, 307, 308, 400, 401, 402, 403,
                              404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416,
                              417, 418, 421, 422, 423, 424, 425, 426, 428, 429, 431, 451, 500,
                              501, 502, 503, 504, 505, 506, 507, 508, 510, 511};
  return std::find(std::begin(known), std::end(known), status) != std::end(known);
}

HooksFiles parse_hooks_files(const std::vector<HooksFileText>& files,
                             const HooksFileOptions& options, const front::EnvLookup& env,
                             const FileLookup& read_file_text) {
  HooksFiles out;
  IdOwners owners;
  for (const HooksFileText& file : files) {
    try {
      read_file(file, options, env, read_file_text, owners, out);
    } catch (const Problem& p) {
      throw front::ConfigError(file.name + ": " + (p.at.empty() ? "" : p.at + ": ") + p.what);
    }
  }
  for (const WebhookHook& hook : out.hooks)
    if (!hook.native.secret_env.empty()) add_once(out.withheld_env, hook.native.secret_env);
  for (WebhookHook& hook : out.hooks) hook.native.withheld_env = out.withheld_env;
  return out;
}

}  // namespace idem::webhook
