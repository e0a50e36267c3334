#pragma once
// `idem begin` / `idem end`: a side effect inside a script (contract §5b).
#include <CLI/CLI.hpp>
#include <string>

#include "cli/common.hpp"

namespace idem::cli {

struct BeginOptions {
  std::string key;
  std::string ttl = "24h";
  std::string wait;
  int64_t owner_pid = 0;
  const CLI::Option* owner_pid_option = nullptr;  // tells a given --owner-pid from none
  std::string fingerprint;
  const CLI::Option* fingerprint_option = nullptr;  // tells a given --fingerprint from none
  bool hash_stdin = false;
  bool print = false;
  bool retry_abandoned = false;
  bool kill_stale = false;
  bool quiet = false;
};
CLI::App* register_begin(CLI::App& app, BeginOptions& options);
int run_begin(const GlobalOptions& global, const BeginOptions& options);

struct EndOptions {
  std::string key;
  int exit_code = 0;
  std::string stdout_file;
  std::string stderr_file;
  int64_t owner_pid = 0;
  const CLI::Option* owner_pid_option = nullptr;
};
CLI::App* register_end(CLI::App& app, EndOptions& options);
int run_end(const GlobalOptions& global, const EndOptions& options);

// The process a begin/end call acts for: --owner-pid (a positive pid of a live process, else a
// usage error), else the caller (idem's parent).
core::Owner script_owner(const CLI::Option* owner_pid_option, int64_t owner_pid);

}  // namespace idem::cli
