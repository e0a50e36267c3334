// The HTTP side of `idem serve`, on Debian's cpp-httplib: routing, limits, logs, metrics,
// signals. What a delivery means is in delivery.cpp.
#include "http/daemon.hpp"

#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/errors.hpp"
#include "http/config.hpp"
#include "http/connection_guard.hpp"
#include "http/delivery.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
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
  std::string render() {
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
        << "idem_connections_shed_total " << ConnectionGuard::shed_count() << "\n";
    out << "# HELP idem_in_flight Deliveries being handled now.\n# TYPE idem_in_flight gauge\n";
    for (const auto& [hook, n] : in_flight_)
      out << "idem_in_flight{hook=\"" << hook << "\"} " << n << "\n";
    out << "# HELP idem_delivery_duration_seconds Time to answer a delivery.\n"
           "# TYPE idem_delivery_duration_seconds summary\n";
    for (const auto& [hook, d] : durations_) {
      out << "idem_delivery_duration_seconds_sum{hook=\"" << hook << "\"} " << double(d.first) / 1000
          << "\n";
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
  std::lock_guard lock(g_log_mutex);
  std::cerr << line << "\n" << std::flush;
}

// Per-request facts the access log needs but httplib's Response does not carry.
struct RequestLog {
  int64_t start_ms = 0;
  std::string hook;
  std::string key;
  std::string outcome;
};
thread_local RequestLog t_log;

void answer(httplib::Response& res, const Answer& a) {
  res.status = a.status;
  for (const auto& [n, v] : a.headers) res.set_header(n, v);
  res.set_content(a.body, a.content_type.empty() ? "text/plain" : a.content_type);
  t_log.key = a.key;
  t_log.outcome = a.outcome;
}

std::pair<std::string, int> parse_listen(const std::string& listen, bool allow_remote) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw UsageError("bad --listen '" + listen + "': use HOST:PORT, e.g. 127.0.0.1:8787");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (...) {
  }
  if (port < 0 || port > 65535) throw UsageError("bad --listen '" + listen + "': bad port");
  bool loopback = host == "127.0.0.1" || host == "localhost" || host == "::1" ||
                  host.rfind("127.", 0) == 0;
  if (!loopback && !allow_remote)
    throw UsageError("--listen " + listen +
                     " is not a loopback address; add --allow-remote to accept other hosts");
  return {host, port};
}

}  // namespace

int run_daemon(const DaemonOptions& options) {
  auto [host, port] = parse_listen(options.listen, options.allow_remote);
  std::mutex state_mutex;
  std::shared_ptr<const State> state = load_state(options.config_path, nullptr);
  auto current = [&] {
    std::lock_guard lock(state_mutex);
    return state;
  };
  // Fail now, not at the first delivery, if the store cannot be used.
  store::open_sqlite_store(options.db_path);

  // Signals go to one thread (sigwait), never to a handler thread; commands get them reset.
  proc::install_child_handlers();
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  pthread_sigmask(SIG_BLOCK, &handled, nullptr);

  Metrics metrics;
  std::atomic<int> background{0};
  std::mutex drain_mutex;
  std::condition_variable drained;
  const core::Owner owner = proc::describe_owner();

  int64_t max_body = 1;
  for (const auto& h : state->config.hooks) max_body = std::max(max_body, h.max_body);

  httplib::Server server;
  const int workers = std::max(1, options.max_connections);
  const int64_t deadline_ms = options.request_timeout_ms;
  server.new_task_queue = [workers, deadline_ms] {
    return new ConnectionGuard(workers, workers, deadline_ms);
  };
  server.set_payload_max_length(size_t(max_body));
  const auto timeout = std::chrono::milliseconds(options.request_timeout_ms);
  server.set_read_timeout(timeout);
  server.set_write_timeout(timeout);
  server.set_keep_alive_timeout(5);
  server.set_keep_alive_max_count(100);

  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    t_log = RequestLog{util::monotonic_ms(), "", "", ""};
    if (req.path == "/healthz" || req.path == "/metrics") {
      if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("Allow", "GET, HEAD");
      answer(res, problem(405, "Method not allowed", req.method + " is not allowed on " + req.path));
      return httplib::Server::HandlerResponse::Handled;
    }
    auto s = current();
    const Hook* hook = s->find(req.path);
    if (!hook) {
      answer(res, problem(404, "No such hook", "no hook is configured at " + req.path));
      t_log.outcome = "not_found";
      return httplib::Server::HandlerResponse::Handled;
    }
    t_log.hook = hook->path;
    if (std::find(hook->methods.begin(), hook->methods.end(), req.method) == hook->methods.end()) {
      std::string allow;
      for (const auto& m : hook->methods) allow += (allow.empty() ? "" : ", ") + m;
      res.set_header("Allow", allow);
      answer(res, problem(405, "Method not allowed", req.method + " is not allowed on " + req.path));
      t_log.outcome = "bad_method";
      return httplib::Server::HandlerResponse::Handled;
    }
    // Refuse an announced oversize body before reading it.
    if (req.has_header("Content-Length")) {
      auto length = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
      if (length > uint64_t(hook->max_body)) {
        answer(res, problem(413, "Body too large",
                            "the body is " + std::to_string(length) + " bytes; hook " + hook->path +
                                " accepts at most " + std::to_string(hook->max_body)));
        t_log.outcome = "too_large";
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
    t_log.outcome = "health";
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(), "text/plain; version=0.0.4");
    t_log.outcome = "metrics";
  });

  auto handle = [&](const httplib::Request& req, httplib::Response& res) {
    ConnectionGuard::request_read();  // the whole request is in: its deadline no longer runs
    auto s = current();
    const Hook* hook = s->find(req.path);
    if (!hook) {  // reloaded away between routing and now
      answer(res, problem(404, "No such hook", "no hook is configured at " + req.path));
      return;
    }
    if (int64_t(req.body.size()) > hook->max_body) {
      answer(res, problem(413, "Body too large",
                          "hook " + hook->path + " accepts at most " + std::to_string(hook->max_body) +
                              " bytes"));
      t_log.outcome = "too_large";
      return;
    }
    Delivery d;
    d.method = req.method;
    d.path = req.path;
    for (const auto& [n, v] : req.headers)
      if (n != "REMOTE_ADDR" && n != "REMOTE_PORT" && n != "LOCAL_ADDR" && n != "LOCAL_PORT")
        d.headers.emplace_back(n, v);
    d.body = req.body;
    DeliveryServices services;
    services.db_path = options.db_path;
    services.owner = owner;
    services.spawn = [&, s, hook_path = hook->path](std::function<void()> fn) {
      ++background;
      metrics.in_flight(hook_path, 1);
      std::thread([&, s, hook_path, fn = std::move(fn)] {
        fn();
        metrics.in_flight(hook_path, -1);
        std::lock_guard lock(drain_mutex);
        --background;
        drained.notify_all();
      }).detach();
    };
    metrics.in_flight(hook->path, 1);
    Answer a = deliver(*hook, *s->slots.at(hook->path), d, services);
    metrics.in_flight(hook->path, -1);
    answer(res, a);
  };
  // Hooks may accept any of these methods ("methods" in the config); routing checked it above.
  server.Get(".*", handle);
  server.Options(".*", handle);
  server.Post(".*", handle);
  server.Put(".*", handle);
  server.Patch(".*", handle);
  server.Delete(".*", handle);

  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      Answer a = res.status == 413
                     ? problem(413, "Body too large", "the body is larger than any hook accepts")
                     : problem(res.status, "Request refused", "HTTP " + std::to_string(res.status));
      res.set_content(a.body, a.content_type);
    }
  });
  server.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    ConnectionGuard::response_written();
    // A request refused before routing (malformed, or cut off by the deadline) has no start.
    int64_t ms = t_log.start_ms != 0 ? util::monotonic_ms() - t_log.start_ms : 0;
    nlohmann::json line{{"time", util::iso8601_utc(util::SystemClock().now_ms())},
                        {"remote", req.remote_addr},
                        {"method", req.method},
                        {"path", req.path},
                        {"status", res.status},
                        {"duration_ms", ms}};
    if (!t_log.hook.empty()) line["hook"] = t_log.hook;
    if (!t_log.key.empty()) line["key"] = t_log.key;
    if (!t_log.outcome.empty()) line["outcome"] = t_log.outcome;
    log_line(line);
    if (!t_log.hook.empty())
      metrics.delivery(t_log.hook, t_log.outcome.empty() ? "other" : t_log.outcome, ms);
    t_log = RequestLog{};
  });

  int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) throw UsageError("cannot listen on " + options.listen + ": " + strerror(errno));
  log_line({{"time", util::iso8601_utc(util::SystemClock().now_ms())},
            {"event", "listening"},
            {"address", host + ":" + std::to_string(bound)},
            {"hooks", state->config.hooks.size()},
            {"store", options.db_path}});
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
          log_line({{"time", util::iso8601_utc(util::SystemClock().now_ms())},
                    {"event", "reloaded"},
                    {"hooks", next->config.hooks.size()}});
        } catch (const std::exception& e) {
          log_line({{"time", util::iso8601_utc(util::SystemClock().now_ms())},
                    {"event", "reload_failed"},
                    {"error", e.what()},
                    {"kept", "previous config"}});
        }
        continue;
      }
      stopping = true;
      log_line({{"time", util::iso8601_utc(util::SystemClock().now_ms())},
                {"event", "draining"},
                {"signal", sigabbrev_np(sig)},
                {"grace_ms", options.grace_ms}});
      // Past the grace period, leave: unfinished handlers show as abandoned, never as done.
      std::thread([grace = options.grace_ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(grace));
        log_line({{"time", util::iso8601_utc(util::SystemClock().now_ms())},
                  {"event", "grace_expired"}});
        _exit(1);
      }).detach();
      server.stop();  // stops accepting; waits for the requests being served
      return;
    }
  });

  server.listen_after_bind();
  if (!stopping) {
    // listen ended without a signal (socket error): stop the signal thread too.
    pthread_kill(signals.native_handle(), SIGTERM);
  }
  signals.join();
  {
    std::unique_lock lock(drain_mutex);
    drained.wait(lock, [&] { return background.load() == 0; });
  }
  log_line({{"time", util::iso8601_utc(util::SystemClock().now_ms())}, {"event", "stopped"}});
  return 0;
}

}  // namespace idem::http
