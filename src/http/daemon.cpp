// The HTTP side of `idem serve`: routing, limits, logs, metrics, the store's health, signals.
// Framing and connections are server.cpp's; what a delivery means is delivery.cpp's.
#include "http/daemon.hpp"

#include <arpa/inet.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "core/errors.hpp"
#include "http/config.hpp"
#include "http/delivery.hpp"
#include "http/server.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "store/provider.hpp"
#include "util/clock.hpp"

namespace idem::http {

namespace {

// What a reload replaces as a whole. Deliveries in flight keep the state they started with.
struct State {
  Config config;
  std::map<std::string, std::shared_ptr<HookSlots>> slots;  // by hook path
  const Hook* find(const std::string& path) const {
    for (const auto& h : config.hooks)
      if (h.path == path) return &h;
    return nullptr;
  }
};

std::shared_ptr<const State> load_state(const std::string& path,
                                        const std::shared_ptr<const State>& previous) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(path + ": cannot read the config file");
  std::stringstream text;
  text << in.rdbuf();
  auto state = std::make_shared<State>();
  state->config = parse_config(path, text.str(), [](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  });
  for (const auto& h : state->config.hooks) {
    // A reload keeps a hook's slots (its running handlers still count) unless its limits changed.
    if (previous) {
      auto it = previous->slots.find(h.path);
      const Hook* old = previous->find(h.path);
      if (it != previous->slots.end() && old && old->max_concurrency == h.max_concurrency &&
          old->max_queue == h.max_queue) {
        state->slots[h.path] = it->second;
        continue;
      }
    }
    state->slots[h.path] = std::make_shared<HookSlots>(h.max_concurrency, h.max_queue);
  }
  return state;
}

class Metrics {
 public:
  void delivery(const std::string& hook, const std::string& outcome, int64_t ms) {
    std::lock_guard lock(mutex_);
    ++deliveries_[{hook, outcome}];
    auto& d = durations_[hook];
    d.first += ms;
    ++d.second;
  }
  void in_flight(const std::string& hook, int delta) {
    std::lock_guard lock(mutex_);
    in_flight_[hook] += delta;
  }
  std::string render(int64_t shed) {
    std::lock_guard lock(mutex_);
    std::ostringstream out;
    out << "# HELP idem_deliveries_total Deliveries by hook and outcome.\n"
           "# TYPE idem_deliveries_total counter\n";
    for (const auto& [k, n] : deliveries_)
      out << "idem_deliveries_total{hook=\"" << k.first << "\",outcome=\"" << k.second << "\"} "
          << n << "\n";
    out << "# HELP idem_replays_total Duplicate deliveries answered from the store.\n"
           "# TYPE idem_replays_total counter\n";
    for (const auto& [k, n] : deliveries_)
      if (k.second == "replayed")
        out << "idem_replays_total{hook=\"" << k.first << "\"} " << n << "\n";
    out << "# HELP idem_connections_shed_total Connections closed at once: over the cap.\n"
           "# TYPE idem_connections_shed_total counter\n"
        << "idem_connections_shed_total " << shed << "\n";
    out << "# HELP idem_in_flight Deliveries being handled now.\n# TYPE idem_in_flight gauge\n";
    for (const auto& [hook, n] : in_flight_)
      out << "idem_in_flight{hook=\"" << hook << "\"} " << n << "\n";
    out << "# HELP idem_delivery_duration_seconds Time to answer a delivery.\n"
           "# TYPE idem_delivery_duration_seconds summary\n";
    for (const auto& [hook, d] : durations_) {
      out << "idem_delivery_duration_seconds_sum{hook=\"" << hook << "\"} "
          << double(d.first) / 1000 << "\n";
      out << "idem_delivery_duration_seconds_count{hook=\"" << hook << "\"} " << d.second << "\n";
    }
    return out.str();
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int64_t> deliveries_;
  std::map<std::string, int64_t> in_flight_;
  std::map<std::string, std::pair<int64_t, int64_t>> durations_;
};

std::mutex g_log_mutex;
void log_line(const nlohmann::json& j) {
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  std::lock_guard lock(g_log_mutex);
  std::cerr << line << std::flush;
}

std::string now_iso() { return util::iso8601_utc(util::SystemClock().now_ms()); }

Response to_response(Answer a, const std::string& hook = "") {
  Response r;
  r.status = a.status;
  r.content_type = a.content_type.empty() ? "text/plain" : std::move(a.content_type);
  r.body = std::move(a.body);
  r.headers = std::move(a.headers);
  if (!hook.empty()) r.log_fields.emplace_back("hook", hook);
  if (!a.key.empty()) r.log_fields.emplace_back("key", a.key);
  if (!a.outcome.empty()) r.log_fields.emplace_back("outcome", a.outcome);
  if (!a.error.empty()) r.log_fields.emplace_back("error", a.error);
  return r;
}

// Whether deliveries could use the store now. Checked at most once a second, so /healthz stays
// cheap at any request rate and is at most that stale; while one check waits on a locked store,
// other probes get the previous result at once.
class StoreHealth {
 public:
  // Its own connection, reused from check to check: a probe waits at most a second for a locked
  // store, less than a delivery's --busy-timeout may allow, and a connection's busy timeout is
  // fixed when it is opened.
  StoreHealth(const store::StoreLocation& where, int64_t busy_timeout_ms)
      : stores_(where, store::StoreOptions{std::min<int64_t>(busy_timeout_ms, 1000)}, 1) {}

  // Why the store cannot be used (for the log; it names the file), or nothing when it can.
  std::optional<std::string> problem() {
    {
      std::unique_lock checking(check_mutex_, std::try_to_lock);
      if (checking.owns_lock() && util::monotonic_ms() - checked_at() >= k_recheck_ms) {
        std::optional<std::string> why;
        try {
          stores_.lease()->check_writable();
        } catch (const std::exception& e) {
          why = e.what();
        }
        std::lock_guard lock(mutex_);
        problem_ = why;
        checked_ms_ = util::monotonic_ms();
      }
    }
    std::lock_guard lock(mutex_);
    return problem_;
  }

 private:
  static constexpr int64_t k_recheck_ms = 1000;
  int64_t checked_at() {
    std::lock_guard lock(mutex_);
    return checked_ms_;
  }
  store::StoreProvider stores_;
  std::mutex check_mutex_;  // held by the one check in progress
  std::mutex mutex_;
  int64_t checked_ms_ = INT64_MIN / 2;
  std::optional<std::string> problem_;
};

std::pair<std::string, int> parse_listen(const std::string& listen, bool allow_remote) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw UsageError("bad --listen '" + listen + "': use HOST:PORT, e.g. 127.0.0.1:8787");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (...) {
  }
  if (port < 0 || port > 65535) throw UsageError("bad --listen '" + listen + "': bad port");
  // A numeric 127.0.0.0/8 or ::1 address, or localhost; never a name that merely starts "127.".
  in_addr v4{};
  bool loopback = host == "localhost" || host == "::1" ||
                  (::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127);
  if (!loopback && !allow_remote)
    throw UsageError("--listen " + listen +
                     " is not a loopback address; add --allow-remote to accept other hosts");
  return {host, port};
}

// Routes requests to the built-ins and the hooks, and logs and counts every answer.
class Routes final : public Handler {
 public:
  Routes(const DaemonOptions& options, std::function<std::shared_ptr<const State>()> current,
         const core::Owner& owner, Metrics& metrics,
         std::function<void(std::function<void()>)> spawn,
         std::shared_ptr<store::StoreProvider> stores)
      : options_(options),
        current_(std::move(current)),
        owner_(owner),
        metrics_(metrics),
        spawn_(std::move(spawn)),
        stores_(std::move(stores)),
        health_(options.store, options.busy_timeout_ms) {}

  std::function<int64_t()> shed_count;

  Admission admit(const RequestHead& head) override {
    if (head.path == "/healthz" || head.path == "/metrics") {
      if (head.method == "GET" || head.method == "HEAD")
        return Admission{std::nullopt, k_builtin_max_body};
      Response r = to_response(
          problem(405, "Method not allowed", head.method + " is not allowed on " + head.path));
      r.headers.emplace_back("Allow", "GET, HEAD");
      return Admission{std::move(r), 0};
    }
    auto s = current_();
    const Hook* hook = s->find(head.path);
    if (!hook) {
      Answer a = problem(404, "No such hook", "no hook is configured at " + head.path);
      a.outcome = "not_found";
      return Admission{to_response(a), 0};
    }
    if (std::find(hook->methods.begin(), hook->methods.end(), head.method) == hook->methods.end()) {
      std::string allow;
      for (const auto& m : hook->methods) allow += (allow.empty() ? "" : ", ") + m;
      Answer a =
          problem(405, "Method not allowed", head.method + " is not allowed on " + head.path);
      a.outcome = "bad_method";
      Response r = to_response(a, hook->path);
      r.headers.emplace_back("Allow", allow);
      return Admission{std::move(r), 0};
    }
    // An announced oversize body is refused before it is read.
    if (!head.chunked && head.content_length > uint64_t(hook->max_body))
      return Admission{too_large(*hook, std::to_string(head.content_length)), 0};
    return Admission{std::nullopt, uint64_t(hook->max_body)};
  }

  Response refused(const RequestHead& head, const ParseError& error) override {
    Answer a;
    // clang-format off
    switch (error.status) {
      case 408: a = problem(408, "Request timeout", error.reason); break;
      case 413: a = problem(413, "Body too large", error.reason); break;
      case 414: a = problem(414, "Request line too long", error.reason); break;
      case 431: a = problem(431, "Header fields too large", error.reason); break;
      case 417: a = problem(417, "Expectation not supported", error.reason); break;
      case 501: a = problem(501, "Transfer coding not supported", error.reason); break;
      case 505: a = problem(505, "HTTP version not supported", error.reason); break;
      case 500:  // the handler failed: its reason goes to the log only
        a = problem(500, "Internal error", "the daemon failed to handle the request");
        a.error = error.reason;
        break;
      default: a = problem(error.status, "Bad request", error.reason); break;
    }
    // clang-format on
    // A refusal of a request whose head named a hook counts for that hook.
    std::string hook;
    if (!head.method.empty()) {
      auto s = current_();
      if (const Hook* h = s->find(head.path)) {
        hook = h->path;
        a.outcome = error.status == 413   ? "too_large"
                    : error.status == 408 ? "request_timeout"
                    : error.status == 500 ? "error"
                                          : "bad_request";
      }
    }
    return to_response(a, hook);
  }

  Response handle(Request& req) override {
    if (req.head.path == "/healthz") {
      Response r;
      if (auto why = health_.problem()) {
        Answer a = problem(503, "Store unavailable", "the store cannot be used now");
        a.error = *why;
        a.headers.emplace_back("Retry-After", "5");
        r = to_response(a);
      } else {
        r.content_type = "text/plain";
        r.body = "ok\n";
      }
      r.log_fields.emplace_back("outcome", "health");
      return r;
    }
    if (req.head.path == "/metrics") {
      Response r;
      r.content_type = "text/plain; version=0.0.4";
      r.body = metrics_.render(shed_count ? shed_count() : 0);
      r.body +=
          "# HELP idem_store_connections_opened_total Store connections opened for deliveries, "
          "each reused by later ones.\n"
          "# TYPE idem_store_connections_opened_total counter\n"
          "idem_store_connections_opened_total " + std::to_string(stores_->opened()) + "\n";
      r.log_fields.emplace_back("outcome", "metrics");
      return r;
    }
    auto s = current_();
    const Hook* hook = s->find(req.head.path);
    if (!hook)  // reloaded away between routing and now
      return to_response(problem(404, "No such hook", "no hook is configured at " + req.head.path));
    if (int64_t(req.body.size()) > hook->max_body)  // a reload lowered the limit meanwhile
      return too_large(*hook, std::to_string(req.body.size()));
    Delivery d;
    d.method = req.head.method;
    d.path = req.head.path;
    d.headers = req.head.headers.fields();
    d.body = std::move(req.body);
    DeliveryServices services;
    services.stores = stores_;
    services.owner = owner_;
    services.spawn = [this, hook_path = hook->path](std::function<void()> fn) {
      metrics_.in_flight(hook_path, 1);
      spawn_([this, hook_path, fn = std::move(fn)] {
        fn();
        metrics_.in_flight(hook_path, -1);
      });
    };
    metrics_.in_flight(hook->path, 1);
    Answer a = deliver(*hook, *s->slots.at(hook->path), d, services);
    metrics_.in_flight(hook->path, -1);
    return to_response(std::move(a), hook->path);
  }

  void answered(const RequestHead& head, const std::string& remote, const Response& response,
                int64_t duration_ms) override {
    nlohmann::json line{{"time", now_iso()},         {"remote", remote},
                        {"method", head.method},     {"path", head.path},
                        {"status", response.status}, {"duration_ms", duration_ms}};
    std::string hook, outcome;
    for (const auto& [name, value] : response.log_fields) {
      line[name] = value;
      if (name == "hook") hook = value;
      if (name == "outcome") outcome = value;
    }
    log_line(line);
    if (!hook.empty()) metrics_.delivery(hook, outcome.empty() ? "other" : outcome, duration_ms);
  }

 private:
  static constexpr uint64_t k_builtin_max_body = 64 * 1024;  // read and ignored

  static Response too_large(const Hook& hook, const std::string& size) {
    Answer a = problem(413, "Body too large",
                       "the body is " + size + " bytes; hook " + hook.path + " accepts at most " +
                           std::to_string(hook.max_body));
    a.outcome = "too_large";
    return to_response(a, hook.path);
  }

  const DaemonOptions& options_;
  std::function<std::shared_ptr<const State>()> current_;
  const core::Owner& owner_;
  Metrics& metrics_;
  std::function<void(std::function<void()>)> spawn_;
  std::shared_ptr<store::StoreProvider> stores_;
  StoreHealth health_;
};

}  // namespace

int run_daemon(const DaemonOptions& options) {
  auto [host, port] = parse_listen(options.listen, options.allow_remote);
  std::mutex state_mutex;
  std::shared_ptr<const State> state = load_state(options.config_path, nullptr);
  auto current = [&] {
    std::lock_guard lock(state_mutex);
    return state;
  };
  // Deliveries lease connections from here, reused across deliveries and threads. Idle ones are
  // kept up to the connections served at once (at most 16): a burst reuses them, and a quiet
  // daemon holds only that many open.
  auto stores = std::make_shared<store::StoreProvider>(
      options.store, store::StoreOptions{options.busy_timeout_ms},
      size_t(std::clamp(options.max_connections, 1, 16)));
  // Fail now, not at the first delivery, if the store cannot be used.
  stores->lease();

  // Signals go to one thread (sigwait), never to a handler thread; commands get them reset.
  proc::install_child_handlers();
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  pthread_sigmask(SIG_BLOCK, &handled, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // sends use MSG_NOSIGNAL; this covers any other write

  Metrics metrics;
  std::atomic<int> background{0};
  std::mutex drain_mutex;
  std::condition_variable drained;
  const core::Owner owner = proc::describe_owner();
  auto spawn = [&](std::function<void()> fn) {
    ++background;
    std::thread([&, fn = std::move(fn)] {
      fn();
      std::lock_guard lock(drain_mutex);
      --background;
      drained.notify_all();
    }).detach();
  };

  Routes routes(options, current, owner, metrics, spawn, stores);
  ServerOptions server_options;
  server_options.max_connections = std::max(1, options.max_connections);
  server_options.request_timeout_ms = options.request_timeout_ms;
  server_options.idle_timeout_ms = 5000;
  Server server(server_options, routes);
  routes.shed_count = [&server] { return server.shed_count(); };

  const int bound = server.listen(host, port, options.listen);
  log_line({{"time", now_iso()},
            {"event", "listening"},
            {"address", host + ":" + std::to_string(bound)},
            {"hooks", state->config.hooks.size()},
            {"store", options.store.display()}});
  if (!options.port_file.empty()) {
    std::string tmp = options.port_file + ".tmp";
    std::ofstream(tmp) << bound << "\n";
    std::rename(tmp.c_str(), options.port_file.c_str());
  }

  std::atomic<bool> stopping{false};
  std::thread signals([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&handled, &sig) != 0) continue;
      if (sig == SIGHUP) {
        try {
          auto next = load_state(options.config_path, current());
          {
            std::lock_guard lock(state_mutex);
            state = next;
          }
          log_line(
              {{"time", now_iso()}, {"event", "reloaded"}, {"hooks", next->config.hooks.size()}});
        } catch (const std::exception& e) {
          log_line({{"time", now_iso()},
                    {"event", "reload_failed"},
                    {"error", e.what()},
                    {"kept", "previous config"}});
        }
        continue;
      }
      stopping = true;
      log_line({{"time", now_iso()},
                {"event", "draining"},
                {"signal", sigabbrev_np(sig)},
                {"grace_ms", options.grace_ms}});
      // Past the grace period, leave: unfinished handlers show as abandoned, never as done.
      std::thread([grace = options.grace_ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(grace));
        log_line({{"time", now_iso()}, {"event", "grace_expired"}});
        _exit(1);
      }).detach();
      server.stop();  // stops accepting; run() returns once the requests being served are done
      return;
    }
  });

  server.run();
  if (!stopping) {
    // run ended without a signal (a socket error): stop the signal thread too.
    pthread_kill(signals.native_handle(), SIGTERM);
  }
  signals.join();
  {
    std::unique_lock lock(drain_mutex);
    drained.wait(lock, [&] { return background.load() == 0; });
  }
  log_line({{"time", now_iso()}, {"event", "stopped"}});
  return 0;
}

}  // namespace idem::http
