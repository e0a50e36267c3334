#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"

namespace idem::cli {

struct EachOptions {
  std::string key_field;
  std::string ttl = "24h";
  int jobs = 1;
  std::string lease;    // empty: $IDEM_LEASE, else 30s (stores shared by hosts only)
  std::string timeout;  // empty: none
  std::string kill_after = "10s";
  std::string max_output = "16MiB";
  bool replay_failures = false;
  bool retry_abandoned = false;
  bool quiet = false;
  bool verbose = false;
  NotifyOptions notify;
  std::vector<std::string> command;
};

CLI::App* register_each(CLI::App& app, EachOptions& options);
int run_each(const GlobalOptions& global, const EachOptions& options);

}  // namespace idem::cli
