// The HTTP side of `idem serve`: the route table, limits, logs, metrics, the store's health,
// signals. Framing and connections are server.cpp's; what a delivery means is delivery.cpp's.
#include "http/daemon.hpp"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "core/errors.hpp"
#include "http/config.hpp"
#include "http/delivery.hpp"
#include "http/store_failure.hpp"
#include "http/proxy_route.hpp"
#include "http/ledger.hpp"
#include "http/pidfile.hpp"
#include "http/routes.hpp"
#include "http/upstream.hpp"
#include "http/webhook_route.hpp"
#include "http/server.hpp"
#include "http/systemd.hpp"
#include "http/tls.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "store/provider.hpp"
#include "util/clock.hpp"

namespace idem::http {

namespace {

std::string config_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(path + ": cannot read the config file");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Config read_config_file(const std::string& path) {
  return parse_config(path, config_file_text(path), [](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  });
}

// The config file's, with --upstream's proxy beside its hooks; either may be absent.
Config load_config(const DaemonOptions& options) {
  Config config;
  if (!options.config_path.empty()) config = read_config_file(options.config_path);
  if (!options.upstream.empty()) {
    if (config.proxy)
      throw UsageError(options.config_path +
                       ": has a \"proxy\" section; give it or --upstream, not both");
    ProxyConfig proxy;
    proxy.upstream = options.upstream;
    proxy.target = parse_upstream_url("--upstream", options.upstream);
    config.proxy = std::move(proxy);
  }
  return config;
}

// What the daemon serves: the config, and the hooks of its hooks files.
struct Loaded {
  Config config;
  webhook::HooksFiles webhooks;
};

Loaded load_all(const DaemonOptions& options) {
  Loaded loaded{load_config(options), {}};
  if (!options.hooks.files.empty()) loaded.webhooks = webhook::load_hooks_files(options.hooks);
  return loaded;
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
  // An answer of a route that is not a hook (the proxy, the ledger): counted in
  // idem_<family>_requests_total by outcome.
  void count(const std::string& family, const std::string& outcome) {
    std::lock_guard lock(mutex_);
    ++families_[{family, outcome}];
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
    std::string family;
    for (const auto& [k, n] : families_) {
      if (k.first != family) {
        family = k.first;
        out << "# HELP idem_" << family << "_requests_total Requests to the " << family
            << " by outcome.\n# TYPE idem_" << family << "_requests_total counter\n";
      }
      out << "idem_" << family << "_requests_total{outcome=\"" << k.second << "\"} " << n << "\n";
    }
    return out.str();
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int64_t> deliveries_;
  std::map<std::string, int64_t> in_flight_;
  std::map<std::string, std::pair<int64_t, int64_t>> durations_;
  std::map<std::pair<std::string, std::string>, int64_t> families_;  // (family, outcome)
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

// Work that outlives the request that started it (async handlers); the drain waits for it. Its
// threads are joined, never detached: a thread's own exit (the thread-local state libraries such
// as libcrypto clean up then) must be over before the process exits and runs their global
// clean-up, or the two race.
class Background {
 public:
  void spawn(std::function<void()> fn) {
    std::lock_guard lock(mutex_);
    join_finished();
    ++running_;
    threads_.emplace_back([this, fn = std::move(fn)] {
      // Nobody waits for background work's answer: what it throws is logged, never lost.
      try {
        fn();
      } catch (const std::exception& e) {
        log_line({{"time", now_iso()}, {"event", "background_failed"}, {"error", e.what()}});
      }
      std::lock_guard done(mutex_);
      --running_;
      finished_.push_back(std::this_thread::get_id());
      done_.notify_all();
    });
  }
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
    std::list<std::thread> all = std::move(threads_);
    threads_.clear();
    finished_.clear();
    lock.unlock();
    for (auto& t : all) t.join();
  }

 private:
  // Joins the threads whose work is done (they hold no lock any more: each ends within moments).
  void join_finished() {
    for (auto id : finished_) {
      auto it = std::find_if(threads_.begin(), threads_.end(),
                             [&](const std::thread& t) { return t.get_id() == id; });
      if (it == threads_.end()) continue;
      it->join();
      threads_.erase(it);
    }
    finished_.clear();
  }

  std::mutex mutex_;
  std::condition_variable done_;
  int running_ = 0;
  std::list<std::thread> threads_;
  std::vector<std::thread::id> finished_;  // of threads_, whose work is done
};

// What the routes use, for as long as the daemon runs; a reload keeps it.
struct Services {
  // `unix_socket`: a Unix socket was passed in (socket activation) to serve as --socket's.
  Services(const DaemonOptions& options, bool unix_socket)
      // Deliveries lease connections from here, reused across deliveries and threads. Idle ones
      // are kept up to the connections served at once (at most 16): a burst reuses them, and a
      // quiet daemon holds only that many open.
      : stores(std::make_shared<store::StoreProvider>(
            options.store, store::StoreOptions{options.busy_timeout_ms},
            size_t(std::clamp(options.max_connections, 1, 16)))),
        owner(proc::describe_owner()),
        health(options.store, options.busy_timeout_ms) {
    if (options.ledger || !options.socket_path.empty() || unix_socket)
      ledger = std::make_shared<const Ledger>(stores, Ledger::client_owner(owner.host),
                                              util::process_clock());
    // Made (or read) at start: a bad token file stops the daemon before it listens.
    if (options.ledger) ledger_token = load_ledger_token(ledger_token_path(options.store));
  }

  std::shared_ptr<store::StoreProvider> stores;
  const core::Owner owner;
  engine::Front front;  // DaemonOptions::lease_ms on a store shared by hosts
  Metrics metrics;
  StoreHealth health;
  Background background;
  std::function<int64_t()> shed_count;  // set once the server exists, before it serves
  std::shared_ptr<const Ledger> ledger;  // with --ledger or --socket
  std::optional<std::string> ledger_token;  // with --ledger: asked of the TCP listener's calls
};

const std::string k_not_a_hook;

// What a hook's deliveries use of the daemon. Background work counts as in flight for its hook,
// and keeps the slots it runs in: a reload may drop the hook's route meanwhile.
DeliveryServices delivery_services(Services& all, const std::string& path,
                                   std::shared_ptr<HookSlots> slots) {
  DeliveryServices services;
  services.stores = all.stores;
  services.owner = all.owner;
  services.front = all.front;
  services.spawn = [&all, path, slots](std::function<void()> fn) {
    all.metrics.in_flight(path, 1);
    all.background.spawn([&all, path, slots, fn = std::move(fn)] {
      fn();
      all.metrics.in_flight(path, -1);
    });
  };
  return services;
}

// /healthz and /metrics: GET or HEAD only; a body is read and ignored.
class BuiltinRoute : public Route {
 public:
  explicit BuiltinRoute(std::string path) : path_(std::move(path)) {}
  bool matches(std::string_view path) const override { return path == path_; }
  Admission admit(const RequestHead& head) const override {
    if (head.method == "GET" || head.method == "HEAD") return Admission{std::nullopt, k_max_body};
    Response r = to_response(
        problem(405, "Method not allowed", head.method + " is not allowed on " + head.path));
    r.headers.emplace_back("Allow", "GET, HEAD");
    return Admission{std::move(r), 0};
  }
  const std::string& hook() const override { return k_not_a_hook; }

 private:
  static constexpr uint64_t k_max_body = 64 * 1024;
  std::string path_;
};

class HealthRoute final : public BuiltinRoute {
 public:
  explicit HealthRoute(StoreHealth& health) : BuiltinRoute("/healthz"), health_(health) {}
  Response handle(Request&) const override {
    Response r;
    if (auto why = health_.problem()) {
      StoreFailureAnswer s = store_unavailable_answer();
      Answer a = problem(s.status, s.title, s.detail);
      a.headers = std::move(s.headers);
      a.error = *why;
      r = to_response(a);
    } else {
      r.content_type = "text/plain";
      r.body = "ok\n";
    }
    r.log_fields.emplace_back("outcome", "health");
    return r;
  }

 private:
  StoreHealth& health_;
};

class MetricsRoute final : public BuiltinRoute {
 public:
  explicit MetricsRoute(Services& services) : BuiltinRoute("/metrics"), services_(services) {}
  Response handle(Request&) const override {
    Response r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = services_.metrics.render(services_.shed_count ? services_.shed_count() : 0);
    r.body +=
        "# HELP idem_store_connections_opened_total Store connections opened for deliveries, "
        "each reused by later ones.\n"
        "# TYPE idem_store_connections_opened_total counter\n"
        "idem_store_connections_opened_total " +
        std::to_string(services_.stores->opened()) + "\n";
    r.log_fields.emplace_back("outcome", "metrics");
    return r;
  }

 private:
  Services& services_;
};

// One configured hook: its methods and body limit, then deliver() (SPEC §6's table).
class HookRoute final : public Route {
 public:
  HookRoute(Hook hook, std::shared_ptr<HookSlots> slots, Services& services)
      : hook_(std::move(hook)), slots_(std::move(slots)), services_(services) {}

  bool matches(std::string_view path) const override { return path == hook_.path; }

  Admission admit(const RequestHead& head) const override {
    if (!allows(hook_.allow, head.remote)) {
      Answer a = problem(403, "Forbidden", "hook " + hook_.path + " does not serve " + head.remote);
      a.outcome = "forbidden";
      return Admission{to_response(a, hook_.path), 0};
    }
    const auto& methods = hook_.methods;
    if (std::find(methods.begin(), methods.end(), head.method) == methods.end()) {
      std::string allow;
      for (const auto& m : methods) allow += (allow.empty() ? "" : ", ") + m;
      Answer a =
          problem(405, "Method not allowed", head.method + " is not allowed on " + head.path);
      a.outcome = "bad_method";
      Response r = to_response(a, hook_.path);
      r.headers.emplace_back("Allow", allow);
      return Admission{std::move(r), 0};
    }
    // An announced oversize body is refused before it is read.
    if (!head.chunked && head.content_length > uint64_t(hook_.max_body))
      return Admission{too_large(std::to_string(head.content_length)), 0};
    return Admission{std::nullopt, uint64_t(hook_.max_body)};
  }

  Response handle(Request& req) const override {
    if (int64_t(req.body.size()) > hook_.max_body)  // a reload lowered the limit meanwhile
      return too_large(std::to_string(req.body.size()));
    Delivery d;
    d.method = req.head.method;
    d.path = req.head.path;
    d.headers = req.head.headers.fields();
    d.body = std::move(req.body);
    services_.metrics.in_flight(hook_.path, 1);
    Answer a = deliver(hook_, *slots_, d, delivery_services(services_, hook_.path, slots_));
    services_.metrics.in_flight(hook_.path, -1);
    return to_response(std::move(a), hook_.path);
  }

  const std::string& hook() const override { return hook_.path; }

 private:

  Response too_large(const std::string& size) const {
    Answer a = problem(413, "Body too large",
                       "the body is " + size + " bytes; hook " + hook_.path + " accepts at most " +
                           std::to_string(hook_.max_body));
    a.outcome = "too_large";
    return to_response(a, hook_.path);
  }

  const Hook hook_;
  const std::shared_ptr<HookSlots> slots_;
  Services& services_;
};

// What a reload replaces as a whole: the config and the route table built from it. Requests in
// flight keep the state they started with.
struct State {
  Config config;
  webhook::HooksFiles webhooks;
  std::map<std::string, std::shared_ptr<HookSlots>> slots;  // by hook path
  RouteTable routes;
  RouteTable socket_routes;  // the Unix socket's: the built-ins and the ledger
};

// A hook's slots: its previous ones (its running handlers still count) unless its limits changed.
std::shared_ptr<HookSlots> slots_for(const Hook& hook, const State* previous) {
  if (previous) {
    auto it = previous->slots.find(hook.path);
    if (it != previous->slots.end() && it->second->max_running() == hook.max_concurrency &&
        it->second->max_waiting() == hook.max_queue)
      return it->second;
  }
  return std::make_shared<HookSlots>(hook.max_concurrency, hook.max_queue);
}

// Every secret of every hook, native or webhook's, is kept from every handler; a hooks file's
// hook may not take a path the config's hooks or the ledger have.
void join_hooks(State& state, bool ledger) {
  std::vector<std::string> withheld = state.webhooks.withheld_env;
  for (const Hook& hook : state.config.hooks)
    withheld.insert(withheld.end(), hook.withheld_env.begin(), hook.withheld_env.end());
  std::sort(withheld.begin(), withheld.end());
  withheld.erase(std::unique(withheld.begin(), withheld.end()), withheld.end());
  for (Hook& hook : state.config.hooks) hook.withheld_env = withheld;
  for (webhook::WebhookHook& hook : state.webhooks.hooks) {
    hook.native.withheld_env = withheld;
    const std::string& path = hook.native.path;
    if (ledger && is_ledger_path(path))
      throw UsageError(hook.file + ": hook " + hook.id + " is served at " + path +
                       ", a path of the ledger API (--ledger)");
    for (const Hook& native : state.config.hooks)
      if (native.path == path)
        throw UsageError(hook.file + ": hook " + hook.id + " is served at " + path +
                         ", which a hook of the config has too");
  }
}

// The table, in the order routes.hpp describes: the built-ins, then the hooks in config order,
// then the hooks files' in theirs.
std::shared_ptr<const State> build_state(Loaded loaded, const State* previous, Services& services,
                                         const DaemonOptions& options) {
  auto state = std::make_shared<State>();
  state->config = std::move(loaded.config);
  state->webhooks = std::move(loaded.webhooks);
  join_hooks(*state, services.ledger_token.has_value());
  state->routes.add(std::make_shared<HealthRoute>(services.health));
  state->routes.add(std::make_shared<MetricsRoute>(services));
  if (services.ledger_token)
    state->routes.add(ledger_route(services.ledger, services.ledger_token));
  if (services.ledger) {
    state->socket_routes.add(std::make_shared<HealthRoute>(services.health));
    state->socket_routes.add(std::make_shared<MetricsRoute>(services));
    state->socket_routes.add(ledger_route(services.ledger, std::nullopt));
  }
  for (const Hook& hook : state->config.hooks) {
    if (services.ledger_token && is_ledger_path(hook.path))
      throw UsageError("hook " + hook.path + " is a path of the ledger API (--ledger)");
    auto slots = slots_for(hook, previous);
    state->slots[hook.path] = slots;
    state->routes.add(std::make_shared<HookRoute>(hook, std::move(slots), services));
  }
  for (const webhook::WebhookHook& hook : state->webhooks.hooks) {
    const std::string& path = hook.native.path;
    auto slots = slots_for(hook.native, previous);
    state->slots[path] = slots;
    webhook::RouteServices route_services{
        delivery_services(services, path, slots),
        [&metrics = services.metrics, path](int delta) { metrics.in_flight(path, delta); }};
    state->routes.add(webhook::hook_route(hook, options.hooks, std::move(slots),
                                          std::move(route_services)));
  }
  // Last: the proxy takes every path; without one, webhook's prefix answers its own 404s.
  if (state->config.proxy)
    state->routes.add(make_proxy_route(
        *state->config.proxy, ProxyServices{services.stores, services.owner, services.front,
                                            [&services](std::function<void()> fn) {
                                              services.background.spawn(std::move(fn));
                                            }}));
  else if (!options.hooks.files.empty())
    state->routes.add(webhook::not_found_route(options.hooks.file_options.urlprefix));
  return state;
}

// The title of the answer to a request the transport refused (see Handler::refused).
std::string refusal_title(int status) {
  // clang-format off
  switch (status) {
    case 408: return "Request timeout";
    case 413: return "Body too large";
    case 414: return "Request line too long";
    case 431: return "Header fields too large";
    case 417: return "Expectation not supported";
    case 501: return "Transfer coding not supported";
    case 505: return "HTTP version not supported";
    case 500: return "Internal error";
    default: return "Bad request";
  }
  // clang-format on
}

// What a refusal says: the parser's reason; when the handler failed (500), its reason goes to
// the log only.
std::string refusal_detail(const ParseError& error) {
  return error.status == 500 ? "the daemon failed to handle the request" : error.reason;
}

Answer refusal(const ParseError& error) {
  Answer a = problem(error.status, refusal_title(error.status), refusal_detail(error));
  if (error.status == 500) a.error = error.reason;
  return a;
}

std::string refusal_outcome(int status) {
  return status == 413   ? "too_large"
         : status == 408 ? "request_timeout"
         : status == 500 ? "error"
                         : "bad_request";
}

// The Handler: each call takes the table in force, looks the route up once and delegates to it;
// then logs and counts every answer.
class Router final : public Handler {
 public:
  // `socket`: the Unix socket's router, which routes through State::socket_routes.
  Router(std::function<std::shared_ptr<const State>()> current, Metrics& metrics,
         bool socket = false)
      : current_(std::move(current)), metrics_(metrics), socket_(socket) {}

  Admission admit(const RequestHead& head) override {
    auto state = current_();
    if (const Route* route = routes(*state).find(head.path)) return route->admit(head);
    Answer a = problem(404, "No such hook", "no hook is configured at " + head.path);
    a.outcome = "not_found";
    return Admission{to_response(a), 0};
  }

  Response refused(const RequestHead& head, const ParseError& error) override {
    auto state = current_();
    // The proxy's paths are every path, "" too (a head that did not parse): SDKs of
    // Stripe-style APIs read an answer without the error member as a success, so every answer
    // the proxy's clients get carries it. Hooks' answers keep their documented form.
    if (const Route* route = routes(*state).find(head.path); route && route->error_member()) {
      Response r = proxy_problem(error.status, refusal_title(error.status), refusal_detail(error),
                                 error.status == 500 ? "api_error" : "invalid_request_error");
      r.log_fields = {{"family", "proxy"}, {"outcome", refusal_outcome(error.status)}};
      if (error.status == 500) r.log_fields.emplace_back("error", error.reason);
      return r;
    }
    Answer a = refusal(error);
    // A refusal of a request whose head named a hook counts for that hook.
    std::string hook;
    if (!head.method.empty()) {
      const Route* route = routes(*state).find(head.path);
      if (route && !route->hook().empty()) {
        hook = route->hook();
        a.outcome = refusal_outcome(error.status);
      }
    }
    return to_response(a, hook);
  }

  Response handle(Request& req) override {
    auto state = current_();  // kept alive while its route answers
    if (const Route* route = routes(*state).find(req.head.path)) return route->handle(req);
    // Reloaded away between admission and now.
    return to_response(problem(404, "No such hook", "no hook is configured at " + req.head.path));
  }

  void answered(const RequestHead& head, const std::string& remote, const Response& response,
                int64_t duration_ms) override {
    nlohmann::json line{{"time", now_iso()},         {"remote", remote},
                        {"method", head.method},     {"path", head.path},
                        {"status", response.status}, {"duration_ms", duration_ms}};
    std::string hook, outcome, family;
    for (const auto& [name, value] : response.log_fields) {
      line[name] = value;
      if (name == "hook") hook = value;
      if (name == "outcome") outcome = value;
      if (name == "family") family = value;
    }
    log_line(line);
    if (outcome.empty()) outcome = "other";
    if (!hook.empty()) metrics_.delivery(hook, outcome, duration_ms);
    else if (!family.empty()) metrics_.count(family, outcome);
  }

 private:
  const RouteTable& routes(const State& state) const {
    return socket_ ? state.socket_routes : state.routes;
  }
  std::function<std::shared_ptr<const State>()> current_;
  Metrics& metrics_;
  const bool socket_;
};

// Signals go to one thread (sigwait), never to a handler thread; commands get them reset. Call
// before any thread starts, so every thread inherits the mask.
sigset_t block_signals() {
  proc::install_child_handlers();
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  pthread_sigmask(SIG_BLOCK, &handled, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // sends use MSG_NOSIGNAL; this covers any other write
  return handled;
}

// Written whole or not at all: a reader never sees half a number.
void write_port_file(const std::string& path, int port) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

ServerOptions server_options(const DaemonOptions& options) {
  ServerOptions o;
  o.max_connections = std::max(1, options.max_connections);
  o.request_timeout_ms = options.request_timeout_ms;
  o.idle_timeout_ms = 5000;
  return o;
}

std::shared_ptr<const TlsContext> load_tls(const DaemonOptions& options) {
  if (options.tls_cert.empty()) return nullptr;
  auto version = parse_tls_version(options.tls_min_version);
  if (!version) throw UsageError("--tls-min-version must be 1.2 or 1.3");
  return TlsContext::load(TlsFiles{options.tls_cert, options.tls_key, *version});
}

// Sockets passed in by socket activation: at most one TCP and one Unix listener.
struct Passed {
  std::optional<PassedSocket> tcp, unix_socket;
};

Passed sort_passed(std::vector<PassedSocket> sockets) {
  Passed passed;
  for (PassedSocket& s : sockets) {
    auto& slot = s.family == AF_UNIX ? passed.unix_socket : passed.tcp;
    if (slot)
      throw UsageError("socket activation: more than one " +
                       std::string(s.family == AF_UNIX ? "Unix" : "TCP") +
                       " socket passed; idem serve listens on one of each");
    slot = std::move(s);
  }
  return passed;
}

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
    state_ = build_state(std::move(loaded), nullptr, services_, options);
    log_warnings(*state_);
  }

  int run(const std::string& host, int port) {
    const sigset_t handled = block_signals();
    Router router([this] { return current(); }, services_.metrics);
    Router socket_router([this] { return current(); }, services_.metrics, true);
    Server server(server_options(options_), router);
    services_.shed_count = [&server] { return server.shed_count(); };
    if (tls_) server.use_tls(tls_);
    auto [address, bound] = open_listeners(server, host, port, socket_router);
    nlohmann::json listening{{"time", now_iso()},
                             {"event", "listening"},
                             {"hooks", current()->config.hooks.size()},
                             {"webhook_hooks", current()->webhooks.hooks.size()},
                             {"store", options_.store.display()}};
    // No TCP listener when socket activation passed a Unix socket alone.
    if (bound != 0) listening["address"] = address + ":" + std::to_string(bound);
    if (current()->config.proxy) listening["proxy"] = current()->config.proxy->upstream;
    if (options_.ledger) listening["ledger"] = ledger_token_path(options_.store);
    if (!options_.socket_path.empty()) listening["socket"] = options_.socket_path;
    if (tls_) listening["tls"] = true;
    if (passed_.tcp || passed_.unix_socket) listening["socket_activation"] = true;
    log_line(listening);
    if (bound != 0) write_port_file(options_.port_file, bound);
    std::optional<PidFile> pidfile;
    if (!options_.pidfile.empty()) pidfile.emplace(options_.pidfile).write();
    notifier_.ready();

    std::thread signals([&] { watch_signals(handled, server); });
    server.run();
    // run ended without a signal (a socket error): stop the signal thread too.
    if (!stopping_) pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    services_.background.wait();
    log_line({{"time", now_iso()}, {"event", "stopped"}});
    return 0;
  }

 private:
  // What a hooks file's load found worth saying (an unset variable a template read, ...).
  static void log_warnings(const State& state) {
    for (const auto& warning : state.webhooks.warnings)
      log_line({{"time", now_iso()}, {"event", "warning"}, {"warning", warning}});
  }

  std::shared_ptr<const State> current() {
    std::lock_guard lock(state_mutex_);
    return state_;
  }

  // The passed sockets, else --listen and --socket. Returns the TCP address and port.
  std::pair<std::string, int> open_listeners(Server& server, const std::string& host, int port,
                                             Handler& socket_router) {
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

  // The signal thread: SIGHUP reloads; SIGTERM or SIGINT starts the drain and ends it.
  void watch_signals(const sigset_t& handled, Server& server) {
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
  void reload_tls(Server& server) {
    if (!tls_) return;
    try {
      server.use_tls(load_tls(options_));
      log_line({{"time", now_iso()}, {"event", "tls_reloaded"}});
    } catch (const std::exception& e) {
      log_line({{"time", now_iso()},
                {"event", "reload_failed"},
                {"error", e.what()},
                {"kept", "previous certificate"}});
    }
  }

  void drain(int sig, Server& server) {
    stopping_ = true;
    notifier_.stopping();
    log_line({{"time", now_iso()},
              {"event", "draining"},
              {"signal", proc::signal_name(sig)},
              {"grace_ms", options_.grace_ms}});
    // Past the grace period, leave: unfinished handlers show as abandoned, never as done.
    std::thread([grace = options_.grace_ms, pidfile = options_.pidfile] {
      std::this_thread::sleep_for(std::chrono::milliseconds(grace));
      log_line({{"time", now_iso()}, {"event", "grace_expired"}});
      if (!pidfile.empty()) remove_pid_file(pidfile);
      _exit(1);
    }).detach();
    server.stop();  // stops accepting; run() returns once the requests being served are done
  }

  const DaemonOptions& options_;
  Passed passed_;
  Services services_;
  const std::shared_ptr<const TlsContext> tls_;  // the first; reloads hand the server new ones
  const Notifier notifier_;
  std::mutex state_mutex_;
  std::shared_ptr<const State> state_;
  std::atomic<bool> stopping_{false};
};

}  // namespace

int run_daemon(const DaemonOptions& options) {
  // Taken first: the passed descriptors become close-on-exec before anything could spawn.
  Passed passed = sort_passed(take_passed_sockets());
  std::string host;
  int port = 0;
  // A passed socket's address is the service manager's to choose (its unit file).
  if (!passed.tcp) std::tie(host, port) = parse_listen(options.listen, options.allow_remote);
  if (!options.pidfile.empty()) PidFile::check(options.pidfile);
  Daemon daemon(options, load_all(options), std::move(passed));
  return daemon.run(host, port);
}

ConfigReport check_config(const DaemonOptions& options) {
  ConfigReport report;
  if (!options.config_path.empty()) {
    // What an unset secret reads as here, so that the rest of the config is still checked: a
    // value every scheme takes (standard-webhooks asks for whsec_ and base64).
    static const std::string k_stand_in = "whsec_c3RhbmQtaW4gZm9yIGFuIHVuc2V0IHNlY3JldA==";
    auto env = [&](const std::string& name) -> std::optional<std::string> {
      const char* v = std::getenv(name.c_str());
      if (v != nullptr && *v != '\0') return std::string(v);
      auto& unset = report.unset_secrets;
      if (std::find(unset.begin(), unset.end(), name) == unset.end()) unset.push_back(name);
      return k_stand_in;
    };
    try {
      parse_config(options.config_path, config_file_text(options.config_path), env);
    } catch (const Error& e) {
      report.errors.push_back(e.what());
    }
  }
  if (!options.hooks.files.empty()) {
    try {
      report.warnings = webhook::load_hooks_files(options.hooks).warnings;
    } catch (const Error& e) {
      report.errors.push_back(e.what());
    }
  }
  return report;
}

}  // namespace idem::http
