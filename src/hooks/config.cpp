#include "hooks/config.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/duration.hpp"
#include "core/key.hpp"
#include "core/output.hpp"

namespace idem::hooks {

// The readers of a native hook's fields hooks/config.hpp declares; the hooks files' hooks
// (webhook/file.cpp) read their native settings with them too.
namespace config_fields {

using namespace front::config_fields;

void check_hook_path(const std::string& path, const std::string& where) {
  if (!path.starts_with('/')) fail(where, quote(path) + " must start with '/'");
  for (char c : path) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f)
      fail(where, quote(path) + " contains whitespace or a control character");
    if (byte >= 0x80)
      fail(where, quote(path) + " contains a non-ASCII character (a request path cannot)");
    if (c == '?' || c == '#')
      fail(where, quote(path) + " contains '" + std::string(1, c) +
                      "' (a hook is matched on the path alone, without query or fragment)");
  }
  // Records are named PATH#KEY; the inspecting commands accept names up to this path length.
  if (path.size() > core::k_max_hook_path_bytes)
    fail(where, quote(path) + " is " + std::to_string(path.size()) + " bytes; the limit is " +
                    std::to_string(core::k_max_hook_path_bytes));
  // The daemon answers these itself (contract §6); a hook there would be unreachable or shadow
  // them.
  if (path == "/healthz" || path == "/metrics")
    fail(where, quote(path) + " is the daemon's own endpoint");
}

std::string read_path(const Json& hook, const std::string& at) {
  std::string where = member(at, "path");
  std::string path = read_string(required(hook, at, "path"), where);
  check_hook_path(path, where);
  return path;
}

std::vector<std::string> read_command(const Json& hook, const std::string& at) {
  std::string where = member(at, "command");
  const Json& value = required(hook, at, "command");
  if (!value.is_array())
    wrong_type(where, "an array of strings (the program and its arguments)", value);
  if (value.empty()) fail(where, "is empty; it must name at least the program to run");
  std::vector<std::string> argv;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string arg = read_string(value[i], element(where, i));
    // execve takes C strings: a NUL would silently cut the argument short.
    if (arg.find('\0') != std::string::npos)
      fail(element(where, i), quote(arg) + " contains a NUL character");
    argv.push_back(std::move(arg));
  }
  if (argv[0].empty()) fail(element(where, 0), "the program name is empty");
  return argv;
}

KeySource read_key(const Json& value, const std::string& at) {
  expect_object(value, at);
  check_fields(value, at, {"header", "json", "form"});
  if (value.size() != 1)
    fail(at, "give exactly one of {\"header\": NAME}, {\"json\": POINTER} or {\"form\": FIELD}");
  KeySource key;
  if (const Json* header = optional_field(value, "header")) {
    std::string where = member(at, "header");
    key.kind = KeySource::header;
    key.name = read_string(*header, where);
    if (!is_token(key.name)) fail(where, quote(key.name) + " is not a valid header name");
  } else if (const Json* form = optional_field(value, "form")) {
    std::string where = member(at, "form");
    key.kind = KeySource::form;
    key.name = read_string(*form, where);
    if (key.name.empty()) fail(where, "is empty; name the form field that holds the key");
  } else {
    std::string where = member(at, "json");
    key.kind = KeySource::json;
    key.name = read_string(*optional_field(value, "json"), where);
    // The same check key_from_json makes per request, made once here so a typo fails at start.
    try {
      Json::json_pointer pointer(key.name);
    } catch (const Json::exception& e) {
      if (e.id == 107)
        fail(where, "bad JSON pointer " + quote(key.name) + ": it must be empty or start with '/'");
      fail(where, "bad JSON pointer " + quote(key.name) + ": " + without_exception_prefix(e));
    }
  }
  return key;
}

SerialConfig read_serial(const Json& value, const std::string& at) {
  expect_object(value, at);
  check_fields(value, at, {"group", "mode", "max_pending"});
  SerialConfig serial;
  if (const Json* group = optional_field(value, "group")) {
    const std::string where = member(at, "group");
    if (group->is_string()) {
      serial.literal = group->get<std::string>();
      std::string why;
      if (!core::Key::parse(serial.literal, why)) fail(where, "not a usable group name: " + why);
    } else {
      serial.source = read_key(*group, where);
    }
  }
  if (const Json* mode = optional_field(value, "mode")) {
    const std::string where = member(at, "mode");
    const std::string text = read_string(*mode, where);
    if (text != "fifo" && text != "latest")
      fail(where, "unknown mode " + quote(text) + " (use fifo or latest)");
    serial.latest = text == "latest";
  }
  if (const Json* v = optional_field(value, "max_pending"))
    serial.max_pending = read_int(*v, member(at, "max_pending"), 1, 1000000);
  return serial;
}

NoKey read_no_key(const Json& value, const std::string& at) {
  std::string text = read_string(value, at);
  if (text == "refuse") return NoKey::refuse;
  if (text == "run") return NoKey::run;
  fail(at, "unknown policy " + quote(text) + " (use refuse or run)");
}

// Which signature fields belong to which schemes: a field the scheme would ignore is refused,
// so that a misplaced setting cannot look like it took effect.
bool has_timestamp(Scheme scheme) {
  return scheme == Scheme::stripe || scheme == Scheme::standard_webhooks || scheme == Scheme::slack;
}

void read_generic_hmac_fields(const Json& value, const std::string& at, SignatureConfig& config) {
  std::string where = member(at, "header");
  config.header = read_string(required(value, at, "header"), where);
  if (!is_token(config.header)) fail(where, quote(config.header) + " is not a valid header name");
  if (const Json* encoding = optional_field(value, "encoding")) {
    std::string text = read_string(*encoding, member(at, "encoding"));
    if (text == "hex")
      config.encoding = SignatureConfig::Encoding::hex;
    else if (text == "base64")
      config.encoding = SignatureConfig::Encoding::base64;
    else
      fail(member(at, "encoding"), "unknown encoding " + quote(text) + " (use hex or base64)");
  }
  if (const Json* prefix = optional_field(value, "prefix"))
    config.prefix = read_string(*prefix, member(at, "prefix"));
}

std::string read_secret(const Json& value, const std::string& at, const front::EnvLookup& env,
                        Scheme scheme, const std::string& hook_path, std::string& variable) {
  std::string where = member(at, "secret_env");
  variable = read_string(required(value, at, "secret_env"), where);
  if (!is_env_name(variable))
    fail(where, quote(variable) +
                    " is not an environment variable name (letters, digits and '_', not "
                    "starting with a digit)");
  std::optional<std::string> secret = env(variable);
  // An empty secret would make every signature trivially forgeable.
  if (!secret || secret->empty())
    fail(where,
         "environment variable " + variable + " of hook " + hook_path + " is not set (or empty)");
  // Refused now rather than at every delivery. The message names the variable, never its value.
  if (auto why = secret_problem(scheme, *secret))
    fail(where, "environment variable " + variable + " of hook " + hook_path + ": " + *why);
  return *secret;
}

SignatureConfig read_signature(const Json& value, const std::string& at,
                               const front::EnvLookup& env, const std::string& hook_path,
                               std::string& secret_env) {
  expect_object(value, at);
  check_fields(value, at, {"scheme", "secret_env", "header", "encoding", "prefix", "tolerance"});
  std::string scheme_at = member(at, "scheme");
  std::string name = read_string(required(value, at, "scheme"), scheme_at);
  std::optional<Scheme> scheme = scheme_from_string(name);
  if (!scheme)
    fail(scheme_at, "unknown scheme " + quote(name) +
                        " (use github, stripe, standard-webhooks, shopify, slack or hmac-sha256)");
  SignatureConfig config{};
  config.scheme = *scheme;

  if (*scheme == Scheme::hmac_sha256) {
    read_generic_hmac_fields(value, at, config);
  } else {
    for (const char* field : {"header", "encoding", "prefix"})
      if (value.contains(field))
        fail(member(at, field), "only for scheme hmac-sha256 (" + name +
                                    " signatures have a fixed header and encoding)");
  }
  if (const Json* tolerance = optional_field(value, "tolerance")) {
    std::string where = member(at, "tolerance");
    if (!has_timestamp(*scheme))
      fail(where, name + " signatures carry no timestamp to check a tolerance against");
    int64_t ms = read_duration_ms(*tolerance, where);
    if (ms < 1000 || ms % 1000 != 0) fail(where, "must be a whole number of seconds, at least 1s");
    config.tolerance_s = ms / 1000;
  }
  // Last, so that mistakes in the file are reported before a missing variable.
  config.secret = read_secret(value, at, env, config.scheme, hook_path, secret_env);
  return config;
}

// The optional settings, each with its own limits; absent ones keep Hook's defaults.
void read_limits(const Json& hook, const std::string& at, Hook& out) {
  if (const Json* v = optional_field(hook, "ttl")) {
    out.ttl_ms = read_duration_ms(*v, member(at, "ttl"));
    // A zero ttl would forget each outcome at once: every retry would run the command again.
    if (out.ttl_ms == 0) fail(member(at, "ttl"), "must be more than 0");
  }
  if (const Json* v = optional_field(hook, "timeout")) {
    out.timeout_ms = read_duration_ms(*v, member(at, "timeout"));
    if (out.timeout_ms == 0) fail(member(at, "timeout"), "must be more than 0");
  }
  if (const Json* v = optional_field(hook, "max_body")) {
    out.max_body = read_size(*v, member(at, "max_body"));
    if (out.max_body == 0) fail(member(at, "max_body"), "must be more than 0");
    if (out.max_body > k_max_body_limit)
      fail(member(at, "max_body"), "must be at most 1GiB, got " + core::format_size(out.max_body));
  }
  if (const Json* v = optional_field(hook, "async")) out.async = read_bool(*v, member(at, "async"));
  if (const Json* v = optional_field(hook, "max_concurrency"))
    out.max_concurrency = read_int(*v, member(at, "max_concurrency"), 1, 1024);
  if (const Json* v = optional_field(hook, "max_queue"))
    out.max_queue = read_int(*v, member(at, "max_queue"), 0, 100000);
  if (const Json* v = optional_field(hook, "retry_abandoned"))
    out.retry_abandoned = read_bool(*v, member(at, "retry_abandoned"));
}

}  // namespace config_fields

namespace {

using namespace front::config_fields;
using namespace config_fields;

// Paths seen so far, each with the index of the hook that has it.
using PathOwners = std::map<std::string, size_t>;

Hook read_hook(const Json& value, size_t index, PathOwners& owners, const front::EnvLookup& env) {
  std::string at = element("hooks", index);
  expect_object(value, at);
  check_fields(value, at,
               {"path", "command", "signature", "key", "ttl", "timeout", "max_body", "async",
                "max_concurrency", "max_queue", "retry_abandoned", "methods", "no_key", "allow",
                "notify", "serial"});
  Hook hook;
  hook.path = read_path(value, at);
  if (auto [it, fresh] = owners.emplace(hook.path, index); !fresh)
    fail(member(at, "path"),
         quote(hook.path) + " is used by " + element("hooks", it->second) + " too");
  hook.command = read_command(value, at);
  if (const Json* v = optional_field(value, "methods"))
    hook.methods = read_methods(*v, member(at, "methods"));
  if (const Json* v = optional_field(value, "key")) hook.key = read_key(*v, member(at, "key"));
  if (const Json* v = optional_field(value, "no_key"))
    hook.no_key = read_no_key(*v, member(at, "no_key"));
  if (const Json* v = optional_field(value, "allow"))
    hook.allow = read_allow(*v, member(at, "allow"));
  read_limits(value, at, hook);
  if (const Json* v = optional_field(value, "notify"))
    hook.notify = read_notify(*v, member(at, "notify"));
  if (const Json* v = optional_field(value, "serial"))
    hook.serial = read_serial(*v, member(at, "serial"));
  // A delivery without a key is stored nowhere, so it could not wait in a line.
  if (hook.serial && hook.no_key == NoKey::run)
    fail(member(at, "serial"), "needs every delivery to carry a key; \"no_key\": \"run\" cannot");
  if (const Json* v = optional_field(value, "signature"))
    hook.signature = read_signature(*v, member(at, "signature"), env, hook.path, hook.secret_env);
  return hook;
}

}  // namespace

std::vector<Hook> read_hooks_section(const front::config_fields::Json& hooks,
                                     const front::EnvLookup& env) {
  using namespace front::config_fields;
  if (!hooks.is_array()) wrong_type("hooks", "an array of hooks", hooks);
  PathOwners owners;
  std::vector<Hook> out;
  for (size_t i = 0; i < hooks.size(); ++i) out.push_back(read_hook(hooks[i], i, owners, env));
  std::vector<std::string> secrets;
  for (const Hook& hook : out)
    if (!hook.secret_env.empty() &&
        std::find(secrets.begin(), secrets.end(), hook.secret_env) == secrets.end())
      secrets.push_back(hook.secret_env);
  for (Hook& hook : out) hook.withheld_env = secrets;
  return out;
}

}  // namespace idem::hooks
