#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"

namespace idem::cli {

struct ServeOptions {
  std::string config;
  std::string upstream;
  std::vector<std::string> hooks;  // webhook hooks files
  std::string urlprefix = "hooks";
  bool hooks_template = false;
  std::vector<std::string> response_headers;  // NAME=VALUE
  std::string http_methods;
  bool ledger = false;
  bool ui = false;
  std::string ui_listen;
  std::string socket;
  std::string listen = "127.0.0.1:8787";
  bool allow_remote = false;
  std::string port_file;
  int max_connections = 64;
  std::string request_timeout = "10s";
  std::string grace = "30s";
  std::string busy_timeout = "3s";
  std::string keep_attempts;  // empty: $IDEM_KEEP_ATTEMPTS, else 100
  std::string lease;          // empty: $IDEM_LEASE, else 30s (stores shared by hosts only)
  std::string cert, key;
  std::string tls_min_version = "1.2";
  std::string pidfile;
};

CLI::App* register_serve(CLI::App& app, ServeOptions& options);
int run_serve(const GlobalOptions& global, const ServeOptions& options);

}  // namespace idem::cli
