#include "serve/load.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/errors.hpp"
#include "net/upstream.hpp"
#include "webhook/route.hpp"

namespace idem::serve {

namespace {

std::string config_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(path + ": cannot read the config file");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Config read_config_file(const std::string& path) {
  return parse_config(path, config_file_text(path), [](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  });
}

// The config file's, with --upstream's proxy beside its hooks; either may be absent.
Config load_config(const DaemonOptions& options) {
  Config config;
  if (!options.config_path.empty()) config = read_config_file(options.config_path);
  if (!options.upstream.empty()) {
    if (config.proxy)
      throw UsageError(options.config_path +
                       ": has a \"proxy\" section; give it or --upstream, not both");
    proxy::ProxyConfig proxy;
    proxy.upstream = options.upstream;
    proxy.target = net::parse_upstream_url("--upstream", options.upstream);
    config.proxy = std::move(proxy);
  }
  return config;
}

}  // namespace

Loaded load_all(const DaemonOptions& options) {
  Loaded loaded{load_config(options), {}};
  if (!options.hooks.files.empty()) loaded.webhooks = webhook::load_hooks_files(options.hooks);
  return loaded;
}

ConfigReport check_config(const DaemonOptions& options) {
  ConfigReport report;
  if (!options.config_path.empty()) {
    // What an unset secret reads as here, so that the rest of the config is still checked: a
    // value every scheme takes (standard-webhooks asks for whsec_ and base64).
    static const std::string k_stand_in = "whsec_c3RhbmQtaW4gZm9yIGFuIHVuc2V0IHNlY3JldA==";
    auto env = [&](const std::string& name) -> std::optional<std::string> {
      const char* v = std::getenv(name.c_str());
      if (v != nullptr && *v != '\0') return std::string(v);
      auto& unset = report.unset_secrets;
      if (std::find(unset.begin(), unset.end(), name) == unset.end()) unset.push_back(name);
      return k_stand_in;
    };
    try {
      parse_config(options.config_path, config_file_text(options.config_path), env);
    } catch (const Error& e) {
      report.errors.push_back(e.what());
    }
  }
  if (!options.hooks.files.empty()) {
    try {
      report.warnings = webhook::load_hooks_files(options.hooks).warnings;
    } catch (const Error& e) {
      report.errors.push_back(e.what());
    }
  }
  return report;
}

}  // namespace idem::serve
