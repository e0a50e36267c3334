#pragma once
// The readers of config.cpp for one field each, shared with the other file formats the daemon
// reads (webhook_file.cpp's hooks files), so that a duration, a size, a limit or a signature is
// read, checked and explained the same way wherever it is written. Each throws Problem: what is
// wrong and where; the caller adds the file name (and, for a hooks file, the hook).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "serve/config.hpp"

namespace idem::http::config_fields {

using Json = nlohmann::json;

// What is wrong and where: a field path such as "hooks[1].signature.scheme", empty for the top
// level of the file.
struct Problem {
  std::string at;
  std::string what;
};

[[noreturn]] void fail(const std::string& at, std::string what);
[[noreturn]] void wrong_type(const std::string& at, const std::string& expected, const Json& value);
// How a value of the wrong type is named in a message: "a string", "an integer", "null"...
std::string describe(const Json& value);

// A user's value in single quotes, shortened and with control characters escaped.
std::string quote(std::string_view text);
// Text made fit for a one-line message (see config.cpp).
std::string printable(std::string_view text, size_t max_bytes, bool ascii_only);
// Field paths: member("a", "b") is "a.b" ("b" at the top), element("a", 2) is "a[2]".
std::string member(const std::string& at, const std::string& name);
std::string element(const std::string& at, size_t index);

// The JSON document in `text`; a member given twice in one object is refused like a typo.
Json parse_json(const std::string& text);

// Refuses any member of `object` not in `known` ("secret" with its own explanation: secrets are
// read from the environment, never from the file).
void check_fields(const Json& object, const std::string& at,
                  const std::vector<std::string_view>& known);
const Json& required(const Json& object, const std::string& at, const std::string& name);
const Json* optional_field(const Json& object, const std::string& name);  // nullptr: absent
void expect_object(const Json& value, const std::string& at);
std::string read_string(const Json& value, const std::string& at);
bool read_bool(const Json& value, const std::string& at);
int read_int(const Json& value, const std::string& at, int low, int high);
// A duration ("30s", or whole seconds) and a size ("1MiB", or bytes), as core/duration.hpp reads.
int64_t read_duration_ms(const Json& value, const std::string& at);
int64_t read_size(const Json& value, const std::string& at);

bool is_env_name(const std::string& name);  // letters, digits, '_', not starting with a digit
bool is_token(const std::string& name);     // RFC 9110 token: a header field name

// A hook's path as a native hook's must be: starts with '/', printable ASCII without '?' or
// '#', short enough for record names, not one of the daemon's own endpoints.
void check_hook_path(const std::string& path, const std::string& where);

// A native hook's "signature" object, its secret read through `env` from the variable it names
// (returned in `secret_env`); `hook_path` names the hook in messages about the variable.
SignatureConfig read_signature(const Json& value, const std::string& at, const EnvLookup& env,
                               const std::string& hook_path, std::string& secret_env);

// The optional settings of a native hook's object, those present in `hook`: ttl, timeout,
// max_body, async, max_concurrency, max_queue, retry_abandoned; absent ones keep `out`'s values.
void read_limits(const Json& hook, const std::string& at, Hook& out);

}  // namespace idem::http::config_fields
