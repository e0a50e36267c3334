#pragma once
// The "hooks" section of the daemon's config (contract §6): native hooks, each a path, a command
// and its settings. Parsing is pure: secrets are read through the caller's environment lookup.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "front/config_fields.hpp"
#include "hooks/signature.hpp"
#include "net/ip_range.hpp"

namespace idem::hooks {

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

// A hook's serial groups (contract §9): deliveries of one group run one at a time, in the order
// they were accepted; the others wait in the store as `queued`.
struct SerialConfig {
  // Where a delivery's group comes from (a key source), or `literal`: the same group for every
  // delivery. Neither: the hook is one group (its path).
  std::optional<KeySource> source;
  std::string literal;
  bool latest = false;          // mode "latest": a newer delivery replaces the pending one
  int64_t max_pending = 10000;  // 1..1000000 waiting per group; over it: 503
};

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
  std::vector<net::IpRange> allow;
  // Every secret_env of the config, this hook's and the others': no handler gets them in its
  // environment, so a handler cannot read any sender's secret.
  std::vector<std::string> withheld_env;
  // "notify": run when a delivery fails, is found abandoned or (on "change") recovers; null:
  // none. Its withheld_env is the daemon's (serve/state.cpp).
  std::shared_ptr<core::NotifySpec> notify;
  std::optional<SerialConfig> serial;  // "serial"; none: deliveries of different keys overlap
};

// The "hooks" array, in the file's order; each hook's withheld_env holds the secret_env of all.
// Throws front::config_fields::Problem.
std::vector<Hook> read_hooks_section(const front::config_fields::Json& hooks,
                                     const front::EnvLookup& env);

namespace config_fields {

// A hook's path as a native hook's must be: starts with '/', printable ASCII without '?' or
// '#', short enough for record names, not one of the daemon's own endpoints.
void check_hook_path(const std::string& path, const std::string& where);

// A native hook's "signature" object, its secret read through `env` from the variable it names
// (returned in `secret_env`); `hook_path` names the hook in messages about the variable.
SignatureConfig read_signature(const front::config_fields::Json& value, const std::string& at,
                               const front::EnvLookup& env, const std::string& hook_path,
                               std::string& secret_env);

// The optional settings of a native hook's object, those present in `hook`: ttl, timeout,
// max_body, async, max_concurrency, max_queue, retry_abandoned; absent ones keep `out`'s values.
void read_limits(const front::config_fields::Json& hook, const std::string& at, Hook& out);

// A hook's "serial" object: {"group": SOURCE or "literal", "mode": "fifo" | "latest",
// "max_pending": N}, every member optional.
SerialConfig read_serial(const front::config_fields::Json& value, const std::string& at);

}  // namespace config_fields

}  // namespace idem::hooks
