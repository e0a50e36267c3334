#pragma once
// The readers of the daemon's config files for one field each, shared by every front's section
// of the config (hooks/config.cpp, proxy/config.cpp) and the other file formats the daemon reads
// (webhook/file.cpp's hooks files), so that a duration, a size, a limit or a signature is read,
// checked and explained the same way wherever it is written. Each throws Problem: what is
// wrong and where; the caller adds the file name (and, for a hooks file, the hook).
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.hpp"
#include "core/notify.hpp"
#include "net/ip_range.hpp"

namespace idem::front {

// Returns the value of an environment variable, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// A config that cannot be used. The message is one line: the file name, the field's path when
// there is one, and what is wrong, e.g. "serve.json: hooks[0].ttl: bad duration '5x'".
class ConfigError : public UsageError {
 public:
  using UsageError::UsageError;
};

namespace config_fields {

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

// What nlohmann's exception says, without its "[json.exception...] " prefix, made printable.
std::string without_exception_prefix(const Json::exception& e);

// A user's value in single quotes, shortened and with control characters escaped.
std::string quote(std::string_view text);
// Text made fit for a one-line message (see config_fields.cpp).
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

// An array of HTTP methods: upper-case, distinct, at least one.
std::vector<std::string> read_methods(const Json& value, const std::string& at);
// "allow": the peers whose requests are served; every entry an address or a CIDR block.
std::vector<net::IpRange> read_allow(const Json& value, const std::string& at);

// "notify" of a hook or the proxy: {"command": LINE or [PROGRAM, ARG...], "on": "failure" or
// "change", "timeout": DURATION, "output_bytes": SIZE}. A string is a shell command line
// (/bin/sh -c), an array is run as is; "on" defaults to "failure", "timeout" to 30s,
// "output_bytes" (how much of each stream's start and end the document carries) to 64KiB, at most
// k_max_notify_stream_bytes.
std::shared_ptr<core::NotifySpec> read_notify(const Json& value, const std::string& at);
inline constexpr int64_t k_max_notify_stream_bytes = int64_t(64) << 20;

// The config's "notifications" object, the daemon's limits on notify commands:
// {"max_running": 1..1024, "max_queue": 0..100000}.
core::NotifyLimits read_notify_limits(const Json& value, const std::string& at);

// The largest body limit a hook or a proxy route may set.
inline constexpr int64_t k_max_body_limit = int64_t(1) << 30;  // 1 GiB

}  // namespace config_fields

}  // namespace idem::front
