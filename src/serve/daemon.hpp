#pragma once
// `idem serve`: the webhook daemon (contract §6). Each delivery is verified, deduplicated through
// the store, and run once; duplicates get the stored answer.
#include <cstdint>
#include <string>
#include <vector>

#include "store/store.hpp"
#include "webhook/route.hpp"

namespace idem::serve {

struct DaemonOptions {
  std::string config_path;  // "" when there is none (--upstream or the ledger alone)
  std::string upstream;     // --upstream URL: a proxy section with only its upstream
  // --hooks FILE...: hooks files of webhook (contract §6b), with --urlprefix, --template,
  // --response-header and --http-methods; no files: none.
  webhook::ServeOptions hooks;
  // The ledger API (contract §7b) on the TCP listener, behind the bearer token of its token file.
  bool ledger = false;
  // If set, the ledger API (with /healthz and /metrics) also on a Unix socket there, created 0600;
  // no token is asked for on it.
  std::string socket_path;
  // The delivery-log page under /ui/, on a listener of its own (never the hooks' and proxy's, so
  // that no hook answer or proxied page shares its origin) at `ui_listen`; empty: a free loopback
  // port, the first after --listen's. It always asks for a login (the UI token's file beside the
  // store, or the one-time link the daemon prints at start).
  bool ui = false;
  std::string ui_listen;
  // Set by run_daemon: whether the page's listener is on a loopback address (its Host is then
  // checked), and the main TCP listener's (/healthz's and /metrics' Host likewise).
  bool ui_loopback = true;
  bool tcp_loopback = true;
  std::string listen = "127.0.0.1:8787";
  bool allow_remote = false;
  store::StoreLocation store;  // resolved (--store, IDEM_STORE, --db, IDEM_DB, default)
  std::string port_file;       // if set, the bound port is written there once listening
  int max_connections = 64;    // connections served at once; as many more may wait; beyond, closed
  int64_t request_timeout_ms = 10000;  // whole-request deadline (headers and body)
  int64_t grace_ms = 30000;            // SIGTERM: how long in-flight handlers may finish
  int64_t busy_timeout_ms = 3000;      // how long a delivery (or /healthz) waits for a locked store
  // Attempts of a key its history keeps (store::StoreOptions); nothing: $IDEM_KEEP_ATTEMPTS,
  // else 100.
  std::optional<int64_t> keep_attempts;
  // The lease of a delivery's claim on a store shared by hosts (PostgreSQL), renewed while its
  // handler runs; ignored on a store of one host.
  int64_t lease_ms = 30000;
  // TLS on the TCP listener (both set, PEM files; SIGHUP reads them again), and its lowest
  // version, "1.2" or "1.3".
  std::string tls_cert, tls_key;
  std::string tls_min_version = "1.2";
  std::string pidfile;  // if set, the daemon's pid is written there once listening
};

// Runs until SIGTERM or SIGINT (drains in-flight handlers within the grace period). SIGHUP reloads
// the config, the hooks files and the TLS files; a broken reload keeps the old set. Sockets passed
// by systemd's socket activation (LISTEN_FDS) replace --listen (a TCP one) and --socket (a Unix
// one); with $NOTIFY_SOCKET the daemon says READY=1 once listening, RELOADING=1 and READY=1 around
// a reload, STOPPING=1 when it drains. Throws UsageError for a bad config or listen
// address at start, StoreError if the store cannot be opened, ListenError (exit 71) if the
// address cannot be listened on (another process has it).
int run_daemon(const DaemonOptions& options);

// What `idem doctor` learns of a daemon's configuration: whether its config file and hooks files
// (DaemonOptions::config_path, hooks; nothing else is read) load as `idem serve` loads them, with
// the variables of the process's environment.
struct ConfigReport {
  std::vector<std::string> errors;    // one line each: what keeps serve from starting
  std::vector<std::string> warnings;  // one line each: it loads, but deserves a look
  // The config's secret_env variables that are unset or empty (each once, in the file's order):
  // serve refuses to start without them. Its other problems are found as if they were set.
  std::vector<std::string> unset_secrets;
};
ConfigReport check_config(const DaemonOptions& options);

}  // namespace idem::serve
