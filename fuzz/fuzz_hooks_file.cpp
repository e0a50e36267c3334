// Hooks files of the webhook server (webhook/file.hpp): whatever the file holds, JSON, YAML
// or a template of either, parse_hooks_files either returns hooks that keep every documented
// invariant or throws ConfigError with a one-line, UTF-8 message that starts with the file name.
// Nothing else may escape it. Read plainly, each input is parsed twice with different secrets in
// the environment: the outcome must not change, which is how a secret leaking into a message
// would show. Read as a template (where getenv may put the environment into the file), only the
// invariants are checked.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/key.hpp"
#include "fuzz_check.hpp"
#include "net/ip_range.hpp"
#include "utf8_oracle.hpp"
#include "webhook/file.hpp"

namespace {

using idem::webhook::Argument;
using idem::webhook::HooksFiles;
using idem::webhook::MatchRule;
using idem::webhook::Rule;
using idem::webhook::WebhookHook;

constexpr std::string_view k_file = "fuzz.hooks";

// UNSET* variables are not set, EMPTY* are empty, any other holds `salt` + its name.
std::optional<std::string> fake_secret(const std::string& salt, const std::string& name) {
  if (name.starts_with("UNSET")) return std::nullopt;
  if (name.starts_with("EMPTY")) return std::string();
  return salt + name;
}

std::optional<std::string> fake_file(const std::string& path) {
  if (path.starts_with("/missing")) return std::nullopt;
  return "content of " + path + "\n";
}

struct Outcome {
  std::optional<HooksFiles> files;
  std::string message;  // when files is nullopt
};

Outcome parse(const std::string& text, const std::string& salt, bool as_template) {
  idem::webhook::HooksFileOptions options;
  options.as_template = as_template;
  try {
    return {idem::webhook::parse_hooks_files(
                {{std::string(k_file), text}}, options,
                [&](const std::string& name) { return fake_secret(salt, name); }, fake_file),
            {}};
  } catch (const idem::front::ConfigError& e) {
    return {std::nullopt, e.what()};
  } catch (...) {
    FUZZ_CHECK(!"parse_hooks_files threw something other than ConfigError");
  }
  return {};
}

void check_line(std::string_view line) {
  FUZZ_CHECK(line.starts_with(std::string(k_file) + ": "));
  FUZZ_CHECK(line.size() > k_file.size() + 2);
  for (char c : line) FUZZ_CHECK(uint8_t(c) >= 0x20 && uint8_t(c) != 0x7f);
  FUZZ_CHECK(well_formed_utf8(line));
}

bool is_env_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

void check_argument(const Argument& argument) {
  using Source = Argument::Source;
  Source s = argument.source;
  if (s == Source::header || s == Source::url || s == Source::payload || s == Source::request)
    FUZZ_CHECK(!argument.name.empty());
  if (s == Source::request) FUZZ_CHECK(argument.name == "method" || argument.name == "remote-addr");
  FUZZ_CHECK(argument.envname.empty() || is_env_name(argument.envname));
}

void check_rule(const Rule& rule, int depth) {
  FUZZ_CHECK(depth <= 100);
  switch (rule.kind) {
    case Rule::Kind::negate:
      FUZZ_CHECK(rule.children.size() == 1);
      break;
    case Rule::Kind::match: {
      FUZZ_CHECK(rule.children.empty());
      const MatchRule& m = rule.match;
      FUZZ_CHECK((m.regex != nullptr) == (m.type == MatchRule::Type::regex));
      bool signed_type = m.type != MatchRule::Type::value && m.type != MatchRule::Type::regex &&
                         m.type != MatchRule::Type::ip_whitelist;
      FUZZ_CHECK(signed_type == !m.secret.empty());
      if (m.type == MatchRule::Type::ip_whitelist)
        FUZZ_CHECK(!idem::net::parse_ranges(m.ip_range).empty());
      else
        FUZZ_CHECK(m.ip_range.empty());
      if (m.type != MatchRule::Type::ip_whitelist && m.type != MatchRule::Type::scalr_signature)
        check_argument(m.parameter);
      break;
    }
    default:
      break;
  }
  for (const Rule& child : rule.children) check_rule(child, depth + 1);
}

void check_hook(const WebhookHook& hook, const HooksFiles& files) {
  FUZZ_CHECK(!hook.id.empty());
  FUZZ_CHECK(hook.file == k_file);
  // Served at its id; its records and route named by the id with the bytes a request target
  // cannot hold raw, and '%', '?' and '#', as %XX.
  FUZZ_CHECK(hook.served_path == "/hooks/" + hook.id);
  std::string encoded = "/hooks/";
  for (char c : hook.id) {
    auto b = uint8_t(c);
    if (b > 0x20 && b < 0x7f && c != '%' && c != '?' && c != '#') {
      encoded += c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", b);
      encoded += hex;
    }
  }
  FUZZ_CHECK(hook.native.path == encoded);
  FUZZ_CHECK(hook.native.path.size() <= idem::core::k_max_hook_path_bytes);
  for (char c : hook.native.path)
    FUZZ_CHECK(uint8_t(c) > 0x20 && uint8_t(c) < 0x7f && c != '?' && c != '#');
  FUZZ_CHECK(!hook.execute_command.empty());
  FUZZ_CHECK(hook.execute_command.find('\0') == std::string::npos);
  FUZZ_CHECK(hook.native.command == std::vector<std::string>{hook.execute_command});
  FUZZ_CHECK(hook.native.methods == hook.http_methods);
  std::set<std::string> methods;
  for (const std::string& method : hook.http_methods) {
    FUZZ_CHECK(!method.empty());
    for (char c : method)
      FUZZ_CHECK(!(c >= 'a' && c <= 'z') && uint8_t(c) > 0x20 && uint8_t(c) < 0x7f);
    FUZZ_CHECK(methods.insert(method).second);
  }
  for (int code : {hook.success_code, hook.mismatch_code})
    FUZZ_CHECK(code == 0 || (code >= 100 && code <= 599));
  for (const auto& [name, value] : hook.response_headers) {
    FUZZ_CHECK(!name.empty());
    FUZZ_CHECK(value.find_first_of(std::string("\r\n\0", 3)) == std::string::npos);
  }
  for (const auto* list :
       {&hook.pass_environment, &hook.pass_arguments, &hook.pass_file, &hook.parse_as_json})
    for (const Argument& argument : *list) check_argument(argument);
  if (hook.trigger_rule) check_rule(*hook.trigger_rule, 0);
  if (hook.key) {
    check_argument(*hook.key);
    FUZZ_CHECK(hook.key->source != Argument::Source::string);
  }
  FUZZ_CHECK(hook.native.ttl_ms > 0);
  FUZZ_CHECK(hook.native.timeout_ms >= 0);
  FUZZ_CHECK(hook.native.max_body > 0 && hook.native.max_body <= (int64_t(1) << 30));
  FUZZ_CHECK(hook.native.max_concurrency >= 1 && hook.native.max_concurrency <= 1024);
  FUZZ_CHECK(hook.native.max_queue >= 0 && hook.native.max_queue <= 100000);
  FUZZ_CHECK(hook.native.signature.has_value() == !hook.native.secret_env.empty());
  FUZZ_CHECK(hook.native.withheld_env == files.withheld_env);
  if (hook.native.signature) {
    FUZZ_CHECK(!hook.native.signature->secret.empty());
    bool withheld = false;
    for (const std::string& name : files.withheld_env) withheld |= name == hook.native.secret_env;
    FUZZ_CHECK(withheld);
  }
}

void check_files(const HooksFiles& files) {
  FUZZ_CHECK(!files.hooks.empty());
  std::set<std::string> ids;
  for (const WebhookHook& hook : files.hooks) {
    check_hook(hook, files);
    FUZZ_CHECK(ids.insert(hook.id).second);
  }
  std::set<std::string> withheld(files.withheld_env.begin(), files.withheld_env.end());
  FUZZ_CHECK(withheld.size() == files.withheld_env.size());
  for (const std::string& warning : files.warnings) check_line(warning);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // hooks files are small; larger inputs only slow the search
  std::string text(reinterpret_cast<const char*>(data), size);
  Outcome first = parse(text, "alpha:", false);
  Outcome second = parse(text, "omega:", false);
  FUZZ_CHECK(first.files.has_value() == second.files.has_value());
  if (first.files) {
    check_files(*first.files);
    check_files(*second.files);
    FUZZ_CHECK(first.files->hooks.size() == second.files->hooks.size());
    FUZZ_CHECK(first.files->warnings == second.files->warnings);
  } else {
    check_line(first.message);
    FUZZ_CHECK(first.message == second.message);
  }
  Outcome expanded = parse(text, "alpha:", true);
  if (expanded.files)
    check_files(*expanded.files);
  else
    check_line(expanded.message);
  return 0;
}
