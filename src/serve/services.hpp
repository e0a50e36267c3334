#pragma once
// What the daemon's routes use for as long as it runs: the store's connections, the owner it
// claims as, the metrics, the store's health, the background work the drain waits for.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/attempt.hpp"
#include "hooks/delivery.hpp"
#include "hooks/route.hpp"
#include "ledger/ledger.hpp"
#include "otel/exporter.hpp"
#include "proc/liveness.hpp"
#include "serve/background.hpp"
#include "serve/daemon.hpp"
#include "serve/health.hpp"
#include "serve/metrics.hpp"
#include "store/provider.hpp"
#include "ui/route.hpp"
#include "util/clock.hpp"
#include "util/random.hpp"

namespace idem::serve {

// The exporter of the daemon's spans that the OTEL_* variables ask for (null: none), its failures
// logged; throws UsageError for a variable that cannot be used, so the daemon does not start.
std::shared_ptr<otel::Exporter> daemon_exporter();

// The page's token file: a SQLite store's path + ".ui-token" (ledger_token_path's folder).
inline std::string ui_token_path(const store::StoreLocation& where) {
  return ledger::token_path_beside(where, ".ui-token");
}

// What the routes use, for as long as the daemon runs; a reload keeps it.
struct Services {
  // `unix_socket`: a Unix socket was passed in (socket activation) to serve as --socket's.
  Services(const DaemonOptions& options, bool unix_socket)
      // Deliveries lease connections from here, reused across deliveries and threads. Idle ones
      // are kept up to the connections served at once (at most 16): a burst reuses them, and a
      // quiet daemon holds only that many open.
      : traces(daemon_exporter()),
        stores(std::make_shared<store::StoreProvider>(
            options.store,
            store::StoreOptions{options.busy_timeout_ms, options.keep_attempts, true},
            size_t(std::clamp(options.max_connections, 1, 16)))),
        owner(proc::describe_owner()),
        health(options.store, options.busy_timeout_ms) {
    if (options.ledger || !options.socket_path.empty() || unix_socket)
      ledger = std::make_shared<const ledger::Ledger>(
          stores, ledger::Ledger::client_owner(owner.host), util::process_clock(), traces);
    // Made (or read) at start: a bad token file stops the daemon before it listens.
    if (options.ledger)
      ledger_token = ledger::load_ledger_token(ledger::ledger_token_path(options.store));
    if (options.ui) {
      ui = std::make_shared<ui::UiCredentials>();
      ui->token = ledger::load_token_file(ui_token_path(options.store), "UI token file");
      ui->secret = util::random_hex(32);
      ui->login_once = util::random_hex(16);
    }
  }

  // Where the attempts' spans go (SPEC §12; also in front.spans); null: traces are off.
  std::shared_ptr<otel::Exporter> traces;
  std::shared_ptr<store::StoreProvider> stores;
  const core::Owner owner;
  engine::Front front;  // DaemonOptions::lease_ms on a store shared by hosts
  Metrics metrics;
  StoreHealth health;
  Background background;
  // The proxy's keyed forwards under way (ProxyServices::forwards), across reloads.
  std::shared_ptr<std::atomic<int64_t>> proxy_forwards = std::make_shared<std::atomic<int64_t>>(0);
  std::function<int64_t()> shed_count;           // set once the server exists, before it serves
  std::shared_ptr<const ledger::Ledger> ledger;  // with --ledger or --socket
  std::optional<std::string> ledger_token;       // with --ledger: asked of the TCP listener's calls
  // With --ui: the page's token (its file's), session key and one-time login token.
  std::shared_ptr<ui::UiCredentials> ui;
  // With --ui: the page's re-run of several failed deliveries, across reloads.
  std::shared_ptr<ui::UiBulkRerun> ui_bulk = std::make_shared<ui::UiBulkRerun>();
  // Told when an attempt of a serial group ends (serve/turns.hpp); set before the daemon serves.
  std::function<void(const std::string& group)> turn_over;
  // Set by the drain: a serial line's run starts no further delivery.
  std::atomic<bool> turns_stopped{false};
  // Set when the drain begins: the page's event streams end (their clients reconnect).
  std::atomic<bool> streams_stopped{false};
};

// What a hook's deliveries use of the daemon. Background work counts as in flight for its hook,
// and keeps the slots it runs in: a reload may drop the hook's route meanwhile. `notify`: the
// hook's notify command (null: none).
hooks::DeliveryServices delivery_services(Services& all, const std::string& path,
                                          std::shared_ptr<hooks::HookSlots> slots,
                                          std::shared_ptr<const core::NotifySpec> notify = nullptr);

// What a hook's route uses of the daemon, made once when the hook is loaded: delivery_services's,
// and its deliveries being answered counted in flight.
hooks::RouteServices route_services(Services& all, const std::string& path,
                                    std::shared_ptr<hooks::HookSlots> slots,
                                    std::shared_ptr<const core::NotifySpec> notify = nullptr);

// The daemon's notifier: notify commands run in the background (the drain waits for them), each
// reported as one line of the log.
std::shared_ptr<engine::Notifier> daemon_notifier(Background& background);

}  // namespace idem::serve
