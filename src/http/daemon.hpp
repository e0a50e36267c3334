#pragma once
// `idem serve`: the webhook daemon (SPEC §6). Each delivery is verified, deduplicated through the
// store, and run once; duplicates get the stored answer.
#include <cstdint>
#include <string>

#include "http/webhook_route.hpp"
#include "store/store.hpp"

namespace idem::http {

struct DaemonOptions {
  std::string config_path;  // "" when there is none (--upstream or the ledger alone)
  std::string upstream;     // --upstream URL: a proxy section with only its upstream
  // --hooks FILE...: hooks files of webhook (SPEC §6b), with --urlprefix, --template,
  // --response-header and --http-methods; no files: none.
  webhook::ServeOptions hooks;
  // The ledger API (SPEC §7b) on the TCP listener, behind the bearer token of its token file.
  bool ledger = false;
  // If set, the ledger API (with /healthz and /metrics) also on a Unix socket there, created 0600;
  // no token is asked for on it.
  std::string socket_path;
  std::string listen = "127.0.0.1:8787";
  bool allow_remote = false;
  store::StoreLocation store;     // resolved (--store, IDEM_STORE, --db, IDEM_DB, default)
  std::string port_file;          // if set, the bound port is written there once listening
  int max_connections = 64;  // connections served at once; as many more may wait; beyond, closed
  int64_t request_timeout_ms = 10000;  // whole-request deadline (headers and body)
  int64_t grace_ms = 30000;       // SIGTERM: how long in-flight handlers may finish
  int64_t busy_timeout_ms = 3000;  // how long a delivery (or /healthz) waits for a locked store
  // The lease of a delivery's claim on a store shared by hosts (PostgreSQL), renewed while its
  // handler runs; ignored on a store of one host.
  int64_t lease_ms = 30000;
};

// Runs until SIGTERM or SIGINT (drains in-flight handlers within the grace period). SIGHUP reloads
// the config and the hooks files; a broken reload keeps the old set. Throws UsageError for a bad config or listen
// address at start, StoreError if the store cannot be opened, ListenError (exit 71) if the
// address cannot be listened on (another process has it).
int run_daemon(const DaemonOptions& options);

}  // namespace idem::http
