#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"

namespace idem::cli {

struct RunOptions {
  std::string key;
  std::string ttl = "24h";
  std::string wait;
  std::string timeout;
  std::string kill_after = "10s";
  std::string drain = "5s";
  std::string lease;        // empty: $IDEM_LEASE, else 30s (stores shared by hosts only)
  std::string serial;       // --serial GROUP: empty, none
  std::string serial_wait;  // empty: wait for the turn without a limit
  bool replay_failures = false;
  bool retry_abandoned = false;
  bool kill_stale = false;
  bool hash_stdin = false;
  std::string max_output = "16MiB";
  bool quiet_replay = false;
  bool quiet = false;
  bool verbose = false;
  bool pty = false;
  NotifyOptions notify;
  std::vector<std::string> command;
  const CLI::Option* key_option = nullptr;  // tells `-k ""` (an error) from no -k (derived)
};

CLI::App* register_run(CLI::App& app, RunOptions& options);
int run_run(const GlobalOptions& global, RunOptions& options);

}  // namespace idem::cli
