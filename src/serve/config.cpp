#include "serve/config.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "core/duration.hpp"
#include "core/key.hpp"
#include "core/output.hpp"
#include "net/upstream.hpp"
#include "serve/config_fields.hpp"

namespace idem::http {

// The readers config_fields.hpp declares, and the helpers they share with this file.
namespace config_fields {

constexpr int64_t k_max_body_limit = int64_t(1) << 30;  // 1 GiB
constexpr size_t k_max_quoted_bytes = 100;              // of a user's value in a message
constexpr size_t k_max_reason_bytes = 300;              // of nlohmann's parse error
constexpr size_t k_max_path_bytes = 200;                // of a field path in a message

[[noreturn]] void fail(const std::string& at, std::string what) {
  throw Problem{at, std::move(what)};
}

// Text from the file made fit for a one-line message: at most `max_bytes` (then "…"), control
// characters escaped, and with `ascii_only` every byte above 0x7f too (nlohmann quotes the
// bytes it choked on, which need not be UTF-8).
std::string printable(std::string_view text, size_t max_bytes, bool ascii_only) {
  bool shortened = text.size() > max_bytes;
  if (shortened) {
    size_t end = max_bytes;
    // Not in the middle of a UTF-8 sequence.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text = text.substr(0, end);
  }
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f || (ascii_only && byte > 0x7f)) {
      const char* digits = "0123456789abcdef";
      out += "\\x";
      out += digits[byte >> 4];
      out += digits[byte & 0xf];
    } else {
      out += c;
    }
  }
  if (shortened) out += "…";
  return out;
}

// A user's value in single quotes. Strings from the parsed document are valid UTF-8.
std::string quote(std::string_view text) {
  return "'" + printable(text, k_max_quoted_bytes, false) + "'";
}

std::string describe(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number with a fraction or exponent";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    default:
      return std::string("a ") + value.type_name();
  }
}

[[noreturn]] void wrong_type(const std::string& at, const std::string& expected,
                             const Json& value) {
  fail(at, "expected " + expected + ", got " + describe(value));
}

std::string member(const std::string& at, const std::string& name) {
  return at.empty() ? name : at + "." + name;
}

std::string element(const std::string& at, size_t index) {
  return at + "[" + std::to_string(index) + "]";
}

// A member name as a path component: plain names as they are, others quoted.
std::string member_any(const std::string& at, const std::string& name) {
  bool plain = !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
               std::all_of(name.begin(), name.end(), [](char c) {
                 return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '-';
               });
  return plain ? member(at, name) : at + "[" + quote(name) + "]";
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; users need only what
// follows, which says where ("parse error at line 3, column 5: ...").
std::string without_exception_prefix(const Json::exception& e) {
  std::string_view text = e.what();
  if (auto end = text.find("] "); text.starts_with("[json.exception.") && end != text.npos)
    text.remove_prefix(end + 2);
  return printable(text, k_max_reason_bytes, true);
}

// nlohmann keeps the last of two members with the same name; a field given twice is as likely
// a mistake as a typo, so it is refused like one. A SAX pass over the (already valid) text
// finds them with their path.
class DuplicateFinder : public nlohmann::json_sax<Json> {
 public:
  std::optional<Problem> found;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    value();
    frames_.push_back(Frame{});
    return true;
  }
  bool key(string_t& name) override {
    Frame& frame = frames_.back();
    if (!frame.names.insert(name).second) {
      found = Problem{path_to_top(), "duplicate field " + quote(name)};
      return false;
    }
    frame.current = name;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    frames_.emplace_back().is_array = true;
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Frame {
    bool is_array = false;
    size_t elements = 0;  // arrays: how many values have started
    std::string current;  // objects: the member being read
    std::set<std::string> names;
  };
  std::vector<Frame> frames_;

  bool value() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().elements;
    return true;
  }

  // The path of the innermost open object or array, shortened when the nesting is deep.
  std::string path_to_top() const {
    std::string at;
    for (size_t i = 0; i + 1 < frames_.size() && at.size() <= k_max_path_bytes; ++i) {
      const Frame& frame = frames_[i];
      at = frame.is_array ? element(at, frame.elements - 1) : member_any(at, frame.current);
    }
    return printable(at, k_max_path_bytes, false);
  }
};

Json parse_json(const std::string& text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {
    fail("", "not JSON: " + without_exception_prefix(e));
  }
  DuplicateFinder finder;
  Json::sax_parse(text, &finder);
  if (finder.found) throw *finder.found;
  return doc;
}

// Refuses any member not in `known`. A "secret" gets its own answer: secrets never live in the
// file, where they would end up in backups and version control.
void check_fields(const Json& object, const std::string& at,
                  const std::vector<std::string_view>& known) {
  for (const auto& [name, value] : object.items()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (name == "secret")
      fail(member(at, name),
           "secrets are not read from the config file; put the secret in an environment "
           "variable and name that variable in \"secret_env\"");
    fail(at, "unknown field " + quote(name));
  }
}

const Json& required(const Json& object, const std::string& at, const std::string& name) {
  auto it = object.find(name);
  if (it == object.end()) fail(at, "missing field " + quote(name));
  return *it;
}

const Json* optional_field(const Json& object, const std::string& name) {
  auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

void expect_object(const Json& value, const std::string& at) {
  if (!value.is_object()) wrong_type(at, "an object", value);
}

std::string read_string(const Json& value, const std::string& at) {
  if (!value.is_string()) wrong_type(at, "a string", value);
  return value.get<std::string>();
}

bool read_bool(const Json& value, const std::string& at) {
  if (!value.is_boolean()) wrong_type(at, "true or false", value);
  return value.get<bool>();
}

int read_int(const Json& value, const std::string& at, int low, int high) {
  if (!value.is_number_integer()) wrong_type(at, "an integer", value);
  // Above INT64_MAX only an unsigned value can be, and that is out of range anyway.
  bool fits = !value.is_number_unsigned() ||
              value.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max());
  int64_t n = fits ? value.get<int64_t>() : std::numeric_limits<int64_t>::max();
  if (n < low || n > high)
    fail(at, "must be between " + std::to_string(low) + " and " + std::to_string(high) + ", got " +
                 value.dump());
  return static_cast<int>(n);
}

// A duration or a size: a string in the units core/duration.hpp reads, or a non-negative
// integer given to that parser as a bare number (seconds, bytes).
template <typename Parse>
int64_t read_quantity(const Json& value, const std::string& at, const std::string& kind,
                      const std::string& expected, Parse parse) {
  std::string text;
  if (value.is_string())
    text = value.get<std::string>();
  else if (value.is_number_integer())
    text = value.dump();  // a negative number fails to parse, as it should
  else
    wrong_type(at, expected, value);
  auto parsed = parse(text);
  if (!parsed) fail(at, "bad " + kind + " " + quote(text));
  return *parsed;
}

int64_t read_duration_ms(const Json& value, const std::string& at) {
  return read_quantity(value, at, "duration", "a duration such as \"30s\" or whole seconds",
                       core::parse_duration_ms);
}

int64_t read_size(const Json& value, const std::string& at) {
  return read_quantity(value, at, "size", "a size such as \"1MiB\" or bytes", core::parse_size);
}

bool is_env_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// RFC 9110 token characters: what a header field name may contain.
bool is_token(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

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
  // The daemon answers these itself (SPEC §6); a hook there would be unreachable or shadow them.
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

std::vector<std::string> read_methods(const Json& value, const std::string& at) {
  if (!value.is_array()) wrong_type(at, "an array of HTTP methods such as [\"POST\"]", value);
  if (value.empty()) fail(at, "is empty; list at least one method, such as \"POST\"");
  std::vector<std::string> methods;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string where = element(at, i);
    std::string method = read_string(value[i], where);
    // Methods are case-sensitive (RFC 9110): "post" would never match a request.
    bool upper = !method.empty() && std::all_of(method.begin(), method.end(),
                                                [](char c) { return c >= 'A' && c <= 'Z'; });
    if (!upper)
      fail(where, quote(method) + " is not an upper-case HTTP method such as POST or PUT");
    if (std::find(methods.begin(), methods.end(), method) != methods.end())
      fail(where, quote(method) + " is listed twice");
    methods.push_back(std::move(method));
  }
  return methods;
}

KeySource read_key(const Json& value, const std::string& at) {
  expect_object(value, at);
  check_fields(value, at, {"header", "json", "form"});
  if (value.size() != 1)
    fail(at,
         "give exactly one of {\"header\": NAME}, {\"json\": POINTER} or {\"form\": FIELD}");
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

std::string read_secret(const Json& value, const std::string& at, const EnvLookup& env,
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
    fail(where, "environment variable " + variable + " of hook " + hook_path +
                    " is not set (or empty)");
  // Refused now rather than at every delivery. The message names the variable, never its value.
  if (auto why = secret_problem(scheme, *secret))
    fail(where, "environment variable " + variable + " of hook " + hook_path + ": " + *why);
  return *secret;
}

SignatureConfig read_signature(const Json& value, const std::string& at, const EnvLookup& env,
                               const std::string& hook_path, std::string& secret_env) {
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

// "allow": the peers whose requests are served; every entry an address or a CIDR block.
std::vector<IpRange> read_allow(const Json& value, const std::string& at) {
  if (!value.is_array()) wrong_type(at, "an array of addresses and CIDR ranges", value);
  // An empty list would refuse everyone: surely a mistake, since dropping the field serves all.
  if (value.empty()) fail(at, "is empty (without \"allow\", every peer is served)");
  std::vector<IpRange> ranges;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string where = element(at, i);
    const std::string text = read_string(value[i], where);
    std::optional<IpRange> range = parse_range(text);
    if (!range)
      fail(where, quote(text) + " is not an address or a CIDR range (e.g. 10.0.0.0/8, ::1)");
    ranges.push_back(*range);
  }
  return ranges;
}

}  // namespace config_fields

namespace {

using namespace config_fields;

// Paths seen so far, each with the index of the hook that has it.
using PathOwners = std::map<std::string, size_t>;

Hook read_hook(const Json& value, size_t index, PathOwners& owners, const EnvLookup& env) {
  std::string at = element("hooks", index);
  expect_object(value, at);
  check_fields(value, at,
               {"path", "command", "signature", "key", "ttl", "timeout", "max_body", "async",
                "max_concurrency", "max_queue", "retry_abandoned", "methods", "no_key", "allow"});
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
  if (const Json* v = optional_field(value, "signature"))
    hook.signature =
        read_signature(*v, member(at, "signature"), env, hook.path, hook.secret_env);
  return hook;
}

void read_hooks(const Json& hooks, const EnvLookup& env, Config& config) {
  if (!hooks.is_array()) wrong_type("hooks", "an array of hooks", hooks);
  PathOwners owners;
  for (size_t i = 0; i < hooks.size(); ++i)
    config.hooks.push_back(read_hook(hooks[i], i, owners, env));
  std::vector<std::string> secrets;
  for (const Hook& hook : config.hooks)
    if (!hook.secret_env.empty() &&
        std::find(secrets.begin(), secrets.end(), hook.secret_env) == secrets.end())
      secrets.push_back(hook.secret_env);
  for (Hook& hook : config.hooks) hook.withheld_env = secrets;
}

// One method list of the proxy: keyed methods, which never include the safe ones.
std::vector<std::string> read_keyed_methods(const Json& value, const std::string& at) {
  std::vector<std::string> methods = read_methods(value, at);
  for (size_t i = 0; i < methods.size(); ++i)
    if (methods[i] == "GET" || methods[i] == "HEAD" || methods[i] == "OPTIONS")
      fail(element(at, i), quote(methods[i]) +
                               " is never keyed: safe methods are passed through untouched");
  return methods;
}

// store_statuses: a non-empty array of statuses and classes (StatusSet), some taken.
StatusSet read_store_statuses(const Json& value, const std::string& at) {
  if (!value.is_array() || value.empty())
    wrong_type(at, "a non-empty array of statuses and classes (\"2xx\", 404, \"!429\")", value);
  StatusSet set;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string where = element(at, i);
    std::optional<StatusSet::Item> item;
    if (value[i].is_number_integer())
      item = StatusSet::read_item(std::to_string(value[i].get<int64_t>()));
    else if (value[i].is_string())
      item = StatusSet::read_item(value[i].get<std::string>());
    else
      wrong_type(where, "a status or a class", value[i]);
    if (!item)
      fail(where, (value[i].is_string() ? quote(value[i].get<std::string>()) : value[i].dump()) +
                      " is neither a status (200 to 599) nor a class (2xx to 5xx), with or "
                      "without a leading '!'");
    set.items.push_back(*item);
  }
  if (std::all_of(set.items.begin(), set.items.end(),
                  [](const StatusSet::Item& item) { return item.refuses; }))
    fail(at, "only refuses statuses ('!'): name at least one status or class to store");
  return set;
}

// The settings a proxy route may override; absent ones keep what `out` holds.
void read_proxy_settings(const Json& value, const std::string& at, ProxySettings& out) {
  if (const Json* v = optional_field(value, "methods"))
    out.methods = read_keyed_methods(*v, member(at, "methods"));
  if (const Json* v = optional_field(value, "ttl")) {
    out.ttl_ms = read_duration_ms(*v, member(at, "ttl"));
    if (out.ttl_ms == 0) fail(member(at, "ttl"), "must be more than 0");
  }
  if (const Json* v = optional_field(value, "timeout")) {
    out.timeout_ms = read_duration_ms(*v, member(at, "timeout"));
    if (out.timeout_ms == 0) fail(member(at, "timeout"), "must be more than 0");
  }
  if (const Json* v = optional_field(value, "late_answer"))
    out.late_answer_ms = read_duration_ms(*v, member(at, "late_answer"));
  if (const Json* v = optional_field(value, "max_body")) {
    out.max_body = read_size(*v, member(at, "max_body"));
    if (out.max_body == 0) fail(member(at, "max_body"), "must be more than 0");
    if (out.max_body > k_max_body_limit)
      fail(member(at, "max_body"), "must be at most 1GiB, got " + core::format_size(out.max_body));
  }
  if (const Json* v = optional_field(value, "store_server_errors"))
    out.store_server_errors = read_bool(*v, member(at, "store_server_errors"));
  if (const Json* v = optional_field(value, "store_statuses"))
    out.store_statuses = read_store_statuses(*v, member(at, "store_statuses"));
}

std::string read_prefix(const Json& route, const std::string& at) {
  std::string where = member(at, "prefix");
  std::string prefix = read_string(required(route, at, "prefix"), where);
  if (!prefix.starts_with('/')) fail(where, quote(prefix) + " must start with '/'");
  for (char c : prefix) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f)
      fail(where, quote(prefix) + " contains whitespace, a control or a non-ASCII character");
    if (c == '?' || c == '#')
      fail(where, quote(prefix) + " contains '" + std::string(1, c) +
                      "' (routes are matched on the path alone)");
  }
  return prefix;
}

std::vector<ProxyRouteSettings> read_proxy_routes(const Json& value, const std::string& at,
                                                  const ProxySettings& inherited) {
  if (!value.is_array()) wrong_type(at, "an array of routes", value);
  std::vector<ProxyRouteSettings> routes;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string where = element(at, i);
    expect_object(value[i], where);
    check_fields(value[i], where,
                 {"prefix", "methods", "ttl", "timeout", "late_answer", "store_server_errors",
                  "store_statuses", "max_body"});
    ProxyRouteSettings route{read_prefix(value[i], where), inherited};
    for (size_t j = 0; j < routes.size(); ++j)
      if (routes[j].prefix == route.prefix)
        fail(member(where, "prefix"), quote(route.prefix) + " is used by " + element(at, j) + " too");
    read_proxy_settings(value[i], where, route.settings);
    routes.push_back(std::move(route));
  }
  return routes;
}

// parse_upstream_url names its source; the config's message names the field once.
void read_upstream(const Json& value, const std::string& at, ProxyConfig& out) {
  std::string where = member(at, "upstream");
  out.upstream = read_string(required(value, at, "upstream"), where);
  try {
    out.target = parse_upstream_url(where, out.upstream);
  } catch (const UsageError& e) {
    std::string_view why = e.what();
    if (why.starts_with(where + ": ")) why.remove_prefix(where.size() + 2);
    fail(where, std::string(why));
  }
}

void read_proxy(const Json& value, const EnvLookup&, Config& config) {
  const std::string at = "proxy";
  expect_object(value, at);
  check_fields(value, at,
               {"upstream", "methods", "ttl", "timeout", "late_answer", "max_body", "max_response",
                "scope_header", "store_server_errors", "store_statuses", "routes", "allow"});
  ProxyConfig proxy;
  read_upstream(value, at, proxy);
  if (const Json* v = optional_field(value, "allow"))
    proxy.allow = read_allow(*v, member(at, "allow"));
  read_proxy_settings(value, at, proxy.settings);
  if (const Json* v = optional_field(value, "max_response")) {
    proxy.max_response = read_size(*v, member(at, "max_response"));
    if (proxy.max_response == 0) fail(member(at, "max_response"), "must be more than 0");
    // The store keeps an output of up to this size (core/output.hpp).
    if (proxy.max_response > core::k_max_output_cap)
      fail(member(at, "max_response"), "must be at most " +
                                           core::format_size(core::k_max_output_cap) + ", got " +
                                           core::format_size(proxy.max_response));
  }
  if (const Json* v = optional_field(value, "scope_header")) {
    std::string where = member(at, "scope_header");
    proxy.scope_header = read_string(*v, where);
    if (!is_token(proxy.scope_header))
      fail(where, quote(proxy.scope_header) + " is not a valid header name");
  }
  // Routes inherit the section's settings, whatever the order of the fields in the file.
  if (const Json* v = optional_field(value, "routes"))
    proxy.routes = read_proxy_routes(*v, member(at, "routes"), proxy.settings);
  config.proxy = std::move(proxy);
}

// A member of the top level. Each is optional, but together they must configure at least one
// route (require_a_route). The ledger API is to be a section beside "hooks" and "proxy".
struct Section {
  std::string_view name;
  void (*read)(const Json& value, const EnvLookup& env, Config& config);
  size_t (*routes)(const Config& config);  // how many routes the section configured
  std::string_view when_empty;             // what to say when it is there but configures none
};

const Section k_sections[] = {
    {"hooks", read_hooks, [](const Config& c) { return c.hooks.size(); },
     "is empty; list at least one hook"},
    {"proxy", read_proxy, [](const Config& c) { return size_t(c.proxy ? 1 : 0); }, ""},
};

// A config that would serve nothing is refused: at the first section present (each of them
// configures nothing), or, when there is none, by naming the sections that could be added.
void require_a_route(const Json& doc, const Config& config) {
  for (const Section& section : k_sections)
    if (section.routes(config) > 0) return;
  for (const Section& section : k_sections)
    if (doc.contains(section.name))
      fail(std::string(section.name), std::string(section.when_empty));
  std::string names;
  for (const Section& section : k_sections)
    names += (names.empty() ? "" : " or ") + quote(section.name);
  fail("", "missing field " + names);
}

Config read_config(const Json& doc, const EnvLookup& env) {
  if (!doc.is_object()) wrong_type("", "an object with a \"hooks\" array at the top level", doc);
  std::vector<std::string_view> names;
  for (const Section& section : k_sections) names.push_back(section.name);
  check_fields(doc, "", names);
  Config config;
  for (const Section& section : k_sections)
    if (const Json* value = optional_field(doc, std::string(section.name)))
      section.read(*value, env, config);
  require_a_route(doc, config);
  return config;
}

}  // namespace

Config parse_config(const std::string& file_name, const std::string& text, const EnvLookup& env) {
  try {
    return read_config(config_fields::parse_json(text), env);
  } catch (const config_fields::Problem& p) {
    throw ConfigError(file_name + ": " + (p.at.empty() ? "" : p.at + ": ") + p.what);
  }
}

}  // namespace idem::http
