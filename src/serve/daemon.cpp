// `idem serve`'s lifecycle: start (the store, TLS, the listeners), the signal thread (SIGHUP
// reloads, SIGTERM and SIGINT drain), stop. What it serves is built by state.cpp, routed by
// router.cpp; framing and connections are net/server.cpp's.
#include "serve/daemon.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "engine/notify.hpp"
#include "ledger/ledger.hpp"
#include "net/resolve.hpp"
#include "otel/setup.hpp"
#include "proc/runner.hpp"
#include "serve/listen.hpp"
#include "serve/load.hpp"
#include "serve/log.hpp"
#include "serve/pidfile.hpp"
#include "serve/router.hpp"
#include "serve/schedules.hpp"
#include "serve/services.hpp"
#include "serve/signals.hpp"
#include "serve/state.hpp"
#include "serve/systemd.hpp"
#include "serve/turns.hpp"
#include "util/clock.hpp"

namespace idem::serve {

namespace {

// Set once the drain is done and "stopped" is logged: what is left (closing the store, freeing
// memory) loses nothing, so a grace running out during it is not reported as one.
std::atomic<bool> g_drained{false};

class Daemon {
 public:
  // Makes sure the store can be used: a bad store fails now, not at the first delivery; so do
  // bad TLS files.
  Daemon(const DaemonOptions& options, Loaded loaded, Passed passed)
      : options_(options),
        passed_(std::move(passed)),
        services_(options, passed_.unix_socket.has_value()),
        tls_(load_tls(options)) {
    services_.front = engine::make_front(*services_.stores->lease(), options.lease_ms);
    services_.front.notifier = daemon_notifier(services_.background);
    services_.front.replays = std::make_shared<store::ReplayTally>();
    services_.front.spans = services_.traces;
    services_.turn_over = [this](const std::string& group) { turns_.turn_over(group); };
    state_ = build_state(std::move(loaded), nullptr, services_, options);
    log_warnings(*state_);
  }

  int run(const std::string& host, int port) {
    const sigset_t handled = block_signals();
    auto router = make_router([this] { return current(); }, services_.metrics);
    auto socket_router =
        make_router([this] { return current(); }, services_.metrics, Listener::socket);
    auto ui_router = make_router([this] { return current(); }, services_.metrics, Listener::ui);
    net::Server server(server_options(options_), *router);
    services_.shed_count = [&server] { return server.shed_count(); };
    if (tls_) server.use_tls(tls_);
    auto [address, bound] = open_listeners(server, host, port, *socket_router);
    std::optional<std::string> ui_url;
    if (options_.ui) ui_url = open_ui_listener(*ui_router, bound);
    nlohmann::json listening{{"time", now_iso()},
                             {"event", "listening"},
                             {"hooks", current()->config.hooks.size()},
                             {"webhook_hooks", current()->webhooks.hooks.size()},
                             {"store", options_.store.display()}};
    // No TCP listener when socket activation passed a Unix socket alone.
    if (bound != 0) listening["address"] = net::host_port(address, bound);
    if (current()->config.proxy) listening["proxy"] = current()->config.proxy->upstream;
    if (options_.ledger) listening["ledger"] = ledger::ledger_token_path(options_.store);
    if (!options_.socket_path.empty()) listening["socket"] = options_.socket_path;
    if (tls_) listening["tls"] = true;
    if (passed_.tcp || passed_.unix_socket) listening["socket_activation"] = true;
    if (ui_url) listening["ui"] = *ui_url;
    log_line(listening);
    // The page's address with its one-time login token, as Jupyter prints its own: whoever can
    // read this log can log in once; the token file serves every later login.
    if (ui_url)
      log_line({{"time", now_iso()},
                {"event", "ui_login"},
                {"url", *ui_url + "login?token=" + services_.ui->login_once},
                {"token_file", ui_token_path(options_.store)}});
    if (bound != 0) write_port_file(options_.port_file, bound);
    std::optional<PidFile> pidfile;
    if (!options_.pidfile.empty()) pidfile.emplace(options_.pidfile).write();
    notifier_.ready();
    turns_.start();
    schedules_.start();

    std::thread signals([&] { watch_signals(handled, server); });
    std::thread replays([&] { flush_replays_until_stopped(); });
    std::thread ui;
    if (ui_server_) ui = std::thread([&] { ui_server_->run(); });
    server.run();
    if (ui_server_) {
      services_.streams_stopped = true;
      ui_server_->stop();  // run ended without a signal: the page's listener ends with it
      ui.join();
    }
    // run ended without a signal (a socket error): stop the signal thread too.
    if (!stopping_) pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    // No queued delivery starts once the drain has begun: they wait in the store.
    services_.turns_stopped = true;
    turns_.stop();
    schedules_.stop();
    services_.background.wait();
    {
      std::lock_guard lock(flush_mutex_);
      flushing_ = false;
    }
    flush_wake_.notify_all();
    replays.join();
    flush_replays();  // what the last requests counted
    // The last spans, waited for no longer than the CLI waits for its own.
    if (services_.traces)
      services_.traces->shutdown(util::monotonic_ms() + otel::k_final_export_wait_ms);
    g_drained = true;
    log_line({{"time", now_iso()}, {"event", "stopped"}});
    return 0;
  }

 private:
  // What a hooks file's load found worth saying (an unset variable a template read, ...).
  static void log_warnings(const State& state) {
    for (const auto& warning : state.webhooks.warnings)
      log_line({{"time", now_iso()}, {"event", "warning"}, {"warning", warning}});
  }

  // Replays are counted in memory (engine::Front::replays) and written every
  // k_replay_flush_interval, in one unsynced transaction, so that a duplicate delivery stays a
  // read; the last counts are written once the daemon has stopped serving.
  static constexpr auto k_replay_flush_interval = std::chrono::seconds(1);

  void flush_replays_until_stopped() {
    std::unique_lock lock(flush_mutex_);
    while (flushing_) {
      flush_wake_.wait_for(lock, k_replay_flush_interval);
      if (!flushing_) return;
      lock.unlock();
      flush_replays();
      lock.lock();
    }
  }

  void flush_replays() {
    if (services_.front.replays->empty()) return;
    try {
      services_.front.replays->flush(*services_.stores->lease());
    } catch (const std::exception& e) {
      // Kept for the next flush; a statistic, never an outcome.
      log_line({{"time", now_iso()}, {"event", "replay_count_failed"}, {"error", e.what()}});
    }
  }

  std::shared_ptr<const State> current() {
    std::lock_guard lock(state_mutex_);
    return state_;
  }

  // The passed sockets, else --listen and --socket. Returns the TCP address and port.
  std::pair<std::string, int> open_listeners(net::Server& server, const std::string& host, int port,
                                             net::Handler& socket_router) {
    std::pair<std::string, int> bound{host, 0};
    if (passed_.tcp)
      bound = server.adopt(std::move(passed_.tcp->fd));
    else if (!passed_.unix_socket)
      bound.second = server.listen(host, port, options_.listen);
    if (passed_.unix_socket)
      server.adopt_unix(std::move(passed_.unix_socket->fd), socket_router);
    else if (!options_.socket_path.empty())
      server.listen_unix(options_.socket_path, socket_router);
    return bound;
  }

  // The page's listener, a server of its own: --ui-listen, else the first free loopback port
  // after the main listener's (any free one when that is 0 or passed in). Returns its URL.
  std::string open_ui_listener(net::Handler& ui_router, int main_port) {
    net::ServerOptions o = server_options(options_);
    o.max_connections = std::min(o.max_connections, k_ui_max_connections);
    ui_server_ = std::make_unique<net::Server>(o, ui_router);
    if (tls_) ui_server_->use_tls(tls_);
    std::string host = "127.0.0.1";
    int bound = 0;
    if (!options_.ui_listen.empty()) {
      int port = 0;
      std::tie(host, port) = parse_listen(options_.ui_listen, options_.allow_remote, "--ui-listen");
      bound = ui_server_->listen(host, port, options_.ui_listen);
    } else {
      for (int port = main_port + 1; main_port > 0 && port <= std::min(main_port + 16, 65535);
           ++port) {
        try {
          bound = ui_server_->listen(host, port, host + ":" + std::to_string(port));
          break;
        } catch (const net::ListenError&) {
        }
      }
      if (bound == 0) bound = ui_server_->listen(host, 0, host + ":0");
    }
    const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return std::string(tls_ ? "https" : "http") + "://" + shown + ":" + std::to_string(bound) +
           "/ui/";
  }

  // The signal thread: SIGHUP reloads; SIGTERM or SIGINT starts the drain and ends it.
  void watch_signals(const sigset_t& handled, net::Server& server) {
    for (;;) {
      int sig = 0;
      if (sigwait(&handled, &sig) != 0) continue;
      if (sig == SIGHUP) {
        notifier_.reloading();
        reload();
        reload_tls(server);
        notifier_.ready();
        continue;
      }
      drain(sig, server);
      return;
    }
  }

  // A new table swapped in whole; a config that cannot be used keeps the one in force.
  void reload() {
    try {
      auto next = build_state(load_all(options_), current().get(), services_, options_);
      log_warnings(*next);
      {
        std::lock_guard lock(state_mutex_);
        state_ = next;
      }
      log_line({{"time", now_iso()},
                {"event", "reloaded"},
                {"hooks", next->config.hooks.size()},
                {"webhook_hooks", next->webhooks.hooks.size()}});
    } catch (const std::exception& e) {
      log_line({{"time", now_iso()},
                {"event", "reload_failed"},
                {"error", e.what()},
                {"kept", "previous config"}});
    }
  }

  // The certificate and key read again (a renewed certificate); unusable ones keep the old.
  void reload_tls(net::Server& server) {
    if (!tls_) return;
    try {
      auto context = load_tls(options_);
      server.use_tls(context);
      if (ui_server_) ui_server_->use_tls(context);
      log_line({{"time", now_iso()}, {"event", "tls_reloaded"}});
    } catch (const std::exception& e) {
      log_line({{"time", now_iso()},
                {"event", "reload_failed"},
                {"error", e.what()},
                {"kept", "previous certificate"}});
    }
  }

  void drain(int sig, net::Server& server) {
    stopping_ = true;
    notifier_.stopping();
    log_line({{"time", now_iso()},
              {"event", "draining"},
              {"signal", proc::signal_name(sig)},
              {"grace_ms", options_.grace_ms}});
    // Notify commands end before then, each with its log line.
    const int64_t reserve =
        std::clamp<int64_t>(options_.grace_ms / 5, k_notify_report_min_ms, k_notify_report_max_ms);
    services_.front.notifier->finish_by(util::monotonic_ms() + options_.grace_ms - reserve);
    // Past the grace period, leave: unfinished handlers show as abandoned, never as done.
    std::thread([grace = options_.grace_ms, pidfile = options_.pidfile] {
      std::this_thread::sleep_for(std::chrono::milliseconds(grace));
      if (g_drained) _exit(0);  // the drain ended in time; only the teardown was slow
      log_line({{"time", now_iso()}, {"event", "grace_expired"}});
      if (!pidfile.empty()) remove_pid_file(pidfile);
      _exit(1);
    }).detach();
    services_.streams_stopped = true;
    server.stop();  // stops accepting; run() returns once the requests being served are done
    if (ui_server_) ui_server_->stop();
  }

  // Connections the page's listener serves at once: a page, its script and a few tabs.
  static constexpr int k_ui_max_connections = 16;
  // What the drain keeps, at the end of its grace, for the notify commands it stopped to be
  // killed (their whole groups), reaped and logged, and for the daemon to exit: a fifth of the
  // grace, within these bounds (250 ms was too little under a sanitizer on a busy machine).
  static constexpr int64_t k_notify_report_min_ms = 250;
  static constexpr int64_t k_notify_report_max_ms = 2000;

  const DaemonOptions& options_;
  Passed passed_;
  Services services_;
  const std::shared_ptr<const net::TlsContext> tls_;  // the first; reloads hand the server new ones
  const Notifier notifier_;
  std::unique_ptr<net::Server> ui_server_;  // with --ui
  std::mutex state_mutex_;
  std::shared_ptr<const State> state_;
  std::atomic<bool> stopping_{false};
  Turns turns_{[this] { return current(); }, services_.metrics};
  Schedules schedules_{[this] { return current(); }, services_};
  std::mutex flush_mutex_;
  std::condition_variable flush_wake_;
  bool flushing_ = true;  // the replay flusher runs until the daemon stops serving
};

}  // namespace

int run_daemon(const DaemonOptions& options) {
  // Taken first: the passed descriptors become close-on-exec before anything could spawn.
  Passed passed = sort_passed(take_passed_sockets());
  std::string host;
  int port = 0;
  // A passed socket's address is the service manager's to choose (its unit file).
  if (!passed.tcp) std::tie(host, port) = parse_listen(options.listen, options.allow_remote);
  DaemonOptions opts = options;
  opts.tcp_loopback = !passed.tcp && is_loopback_address(host);
  // Checked now, before anything starts: a bad --ui-listen is a usage error.
  opts.ui_loopback =
      opts.ui_listen.empty() ||
      is_loopback_address(parse_listen(opts.ui_listen, opts.allow_remote, "--ui-listen").first);
  if (!opts.pidfile.empty()) PidFile::check(opts.pidfile);
  Daemon daemon(opts, load_all(opts), std::move(passed));
  return daemon.run(host, port);
}

}  // namespace idem::serve
