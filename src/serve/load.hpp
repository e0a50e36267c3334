#pragma once
// What the daemon serves, read from its files: the config (its --upstream beside it) and the
// hooks files; read at start and again on SIGHUP.
#include "serve/config.hpp"
#include "serve/daemon.hpp"
#include "webhook/file.hpp"

namespace idem::serve {

// What the daemon serves: the config, and the hooks of its hooks files.
struct Loaded {
  Config config;
  webhook::HooksFiles webhooks;
};

// Throws UsageError (ConfigError) for a file that cannot be read or used.
Loaded load_all(const DaemonOptions& options);

}  // namespace idem::serve
