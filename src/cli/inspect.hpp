#pragma once
// The inspecting and cleaning subcommands: ls, show, status, rm, gc.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"

namespace idem::cli {

struct LsOptions {
  std::vector<std::string> statuses;
  std::string prefix;
  std::string limit = "0";  // validated by ls itself, for a one-line message
  bool all = false;
  bool json = false;
  bool keys = false;
};
CLI::App* register_ls(CLI::App& app, LsOptions& options);
int run_ls(const GlobalOptions& global, const LsOptions& options);

struct ShowOptions {
  std::string key;
  bool json = false;
  bool stdout_raw = false;
  bool stderr_raw = false;
  bool request = false;
};
CLI::App* register_show(CLI::App& app, ShowOptions& options);
int run_show(const GlobalOptions& global, const ShowOptions& options);

struct StatusOptions {
  std::string key;
};
CLI::App* register_status(CLI::App& app, StatusOptions& options);
int run_status(const GlobalOptions& global, const StatusOptions& options);

struct RmOptions {
  std::vector<std::string> keys;
  bool force = false;
};
CLI::App* register_rm(CLI::App& app, RmOptions& options);
int run_rm(const GlobalOptions& global, const RmOptions& options);

struct GcOptions {
  bool dry_run = false;
  std::string older_than;
};
CLI::App* register_gc(CLI::App& app, GcOptions& options);
int run_gc(const GlobalOptions& global, const GcOptions& options);

}  // namespace idem::cli
