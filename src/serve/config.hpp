#pragma once
// The configuration of `idem serve` (SPEC §6, §7): a JSON object of sections, "hooks" and "proxy"
// (the ledger API is to be one beside them). Each section is optional; together they must
// configure at least one route. Parsing is pure: the caller reads the file and supplies the
// environment lookup, so tests need neither.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "hooks/signature.hpp"
#include "net/ip_range.hpp"
#include "proxy/rules.hpp"

namespace idem::http {

// Where a delivery's idempotency key comes from; without one the scheme's default applies.
struct KeySource {
  enum Kind { header, json, form } kind = header;
  // A header name, a JSON Pointer ("" or starting with '/') into the body, or the name of a field
  // of an application/x-www-form-urlencoded body (non-empty).
  std::string name;
};

// What a hook does with a delivery that carries no key (its header or field is absent, the body
// is not JSON or the pointer finds nothing, or the hook has no key source at all): refuse it with
// 400, or run the handler without dedupe (nothing is stored; every such delivery runs). A key
// that is there but unusable (too long, control characters) is refused either way.
enum class NoKey { refuse, run };

struct Hook {
  std::string path;                  // starts with '/', unique across hooks
  std::vector<std::string> command;  // argv, never empty
  std::optional<SignatureConfig> signature;
  std::string secret_env;  // the variable signature->secret came from, for messages
  std::optional<KeySource> key;
  int64_t ttl_ms = 24 * 3600 * 1000;  // how long a finished outcome is replayed, > 0
  int64_t timeout_ms = 30 * 1000;     // > 0
  int64_t max_body = 1 << 20;         // bytes, 1..1GiB
  bool async = false;
  int max_concurrency = 4;  // 1..1024 handlers of this hook at once
  int max_queue = 64;       // 0..100000 deliveries waiting for a handler slot
  bool retry_abandoned = false;
  std::vector<std::string> methods = {"POST"};  // upper-case, distinct, at least one
  NoKey no_key = NoKey::refuse;
  // The peers whose deliveries are served (their address in one of the ranges); others get 403
  // before the body is read. Empty: every peer.
  std::vector<IpRange> allow;
  // Every secret_env of the config, this hook's and the others': no handler gets them in its
  // environment, so a handler cannot read any sender's secret.
  std::vector<std::string> withheld_env;
};

struct Config {
  // In the file's order. At least one unless another section configures a route.
  std::vector<Hook> hooks;
  // The "proxy" section: every request no other route takes goes to its upstream.
  std::optional<ProxyConfig> proxy;
};

// Returns the value of an environment variable, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// A config that cannot be used. The message is one line: the file name, the field's path when
// there is one, and what is wrong, e.g. "serve.json: hooks[0].ttl: bad duration '5x'".
class ConfigError : public UsageError {
 public:
  using UsageError::UsageError;
};

// Parses and validates the whole config, reading each signature's secret through `env`. Throws
// ConfigError for anything wrong in `text` (or a secret that is unset, empty, or cannot be used
// by its scheme: see signature.hpp's secret_problem), and nothing else of its own; `env` may
// throw what it likes.
Config parse_config(const std::string& file_name, const std::string& text, const EnvLookup& env);

}  // namespace idem::http
