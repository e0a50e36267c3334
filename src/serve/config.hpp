#pragma once
// The configuration of `idem serve` (contract §6, §7): a JSON object of sections, "hooks" and
// "proxy" (the ledger API is to be one beside them), each read by its front (hooks/config.hpp,
// proxy/config.hpp). Each section is optional; together they must
// configure at least one route. Parsing is pure: the caller reads the file and supplies the
// environment lookup, so tests need neither.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "front/config_fields.hpp"
#include "hooks/config.hpp"
#include "proxy/rules.hpp"

namespace idem::serve {

struct Config {
  // In the file's order. At least one unless another section configures a route.
  std::vector<hooks::Hook> hooks;
  // The "proxy" section: every request no other route takes goes to its upstream.
  std::optional<proxy::ProxyConfig> proxy;
  // The "notifications" section: the daemon's limits on notify commands.
  core::NotifyLimits notifications;
  // The "schedules" section's "notify": the command told each finding of the store's
  // expectations (contract §11); null: findings are only logged.
  std::shared_ptr<const core::NotifySpec> schedule_notify;
};

// Parses and validates the whole config, reading each signature's secret through `env`. Throws
// ConfigError for anything wrong in `text` (or a secret that is unset, empty, or cannot be used
// by its scheme: see signature.hpp's secret_problem), and nothing else of its own; `env` may
// throw what it likes.
Config parse_config(const std::string& file_name, const std::string& text,
                    const front::EnvLookup& env);

}  // namespace idem::serve
