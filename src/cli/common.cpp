#include "cli/common.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "core/record_json.hpp"
#include "engine/notify.hpp"
#include "otel/setup.hpp"
#include "proc/child_exec.hpp"
#include "proc/liveness.hpp"
#include "util/clock.hpp"

namespace idem::cli {

void add_global_options(CLI::App& app, GlobalOptions& global) {
  app.add_option("--store", global.store,
                 "Store URL: sqlite:PATH, a path, or postgres://... (default: $IDEM_STORE, else "
                 "--db); takes precedence over --db and IDEM_DB")
      ->type_name("URL")
      // An empty value would read as "not given"; any other bad URL is refused (as a usage
      // error naming it) when the store is opened.
      ->check(CLI::Validator(
          [](std::string& url) {
            return url.empty() ? std::string("empty store URL; use sqlite:PATH or a path")
                               : std::string();
          },
          "", "store URL"));
  // The default as written, not resolved: --help opens no store, so it reads neither HOME's
  // fallback in /etc/passwd nor anything else (`idem doctor` names the store in force).
  app.add_option("--db", global.db,
                 "SQLite store (default: $IDEM_DB, else "
                 "${XDG_STATE_HOME:-$HOME/.local/state}/idem/idem.db)")
      ->type_name("PATH");
}

bool is_global_option_with_value(std::string_view arg) { return arg == "--db" || arg == "--store"; }

store::StoreLocation store_location(const GlobalOptions& global) {
  return store::store_location(global.store, global.db);
}

namespace {

// Whether this process is (nearly) out of descriptors: fewer than a store's open needs (the
// database, its journal or WAL and shared memory, a folder) can be made now.
bool descriptors_run_out() {
  constexpr int k_store_needs = 6;
  int made[k_store_needs];
  int count = 0;
  while (count < k_store_needs && (made[count] = ::fcntl(2, F_DUPFD_CLOEXEC, 0)) >= 0) ++count;
  const bool out = count < k_store_needs && errno == EMFILE;
  while (count > 0) ::close(made[--count]);
  return out;
}

}  // namespace

std::unique_ptr<store::Store> open_store(const GlobalOptions& global) {
  const store::StoreLocation location = store_location(global);
  try {
    return store::open_store(location);
  } catch (const StoreError& e) {
    // The store's own words ("unable to open database file") do not say that the open-files
    // limit was what failed.
    if (descriptors_run_out()) throw os_error(std::string(e.what()), EMFILE);
    throw;
  }
}

namespace {

// libpq's dependencies load GnuTLS (libldap is linked with it), and GnuTLS runs its whole
// initialisation (ASN.1 trees, CPU probing, p11-kit, its config files) in a library constructor,
// before idem-pg's main, unless GNUTLS_NO_IMPLICIT_INIT is 1 in the environment it was exec'd
// with (gnutls_global_init(3)). Nothing in idem-pg needs it: libpq's TLS is OpenSSL's, and
// libldap, which libpq uses only for an ldap:// service lookup, calls gnutls_global_init() itself
// before its first TLS session (OpenLDAP's libraries/libldap/tls_g.c, tlsg_init). Only the
// environment at exec time can stop a constructor, so the hand-over adds the variable, and the
// marker beside it tells idem-pg's main that idem added it, to take both out again before
// anything runs: a command, notify command or handler sees only the variables the user set.
// A user's own GNUTLS_NO_IMPLICIT_INIT, whatever its value, is passed on as it is, without marker.
constexpr const char* k_gnutls_no_implicit_init = "GNUTLS_NO_IMPLICIT_INIT";
constexpr const char* k_gnutls_added_marker = "IDEM_PG_ADDED_GNUTLS_NO_IMPLICIT_INIT";

// idem's own environment, plus GNUTLS_NO_IMPLICIT_INIT=1 and the marker when the user has no
// GNUTLS_NO_IMPLICIT_INIT (environ's strings, and static ones).
std::vector<char*> hand_over_environment() {
  std::vector<char*> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.push_back(*e);
  if (std::getenv(k_gnutls_no_implicit_init) == nullptr) {
    static std::string added = std::string(k_gnutls_no_implicit_init) + "=1";
    static std::string marker = std::string(k_gnutls_added_marker) + "=1";
    env.push_back(added.data());
    env.push_back(marker.data());
  }
  env.push_back(nullptr);
  return env;
}

bool names_postgres_store(const GlobalOptions& global) {
  try {
    return store_location(global).scheme == "postgres";
  } catch (const Error&) {
    return false;  // a bad URL is reported where the store is opened
  }
}

}  // namespace

void hand_over_to_idem_pg(const GlobalOptions& global, char** argv, bool serving) {
  if (store::has_postgres_backend()) return;
  // The daemon resolves names (--upstream, --listen) as the system says, and a static glibc must
  // not load NSS modules: idem serve runs dynamically linked, its start paid once.
  if (!serving && !names_postgres_store(global)) return;
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return;
  const std::string exe(buf, size_t(n));
  const std::string dir = exe.substr(0, exe.rfind('/') + 1);
  std::vector<char*> env = hand_over_environment();
  for (const std::string& candidate : {dir + "idem-pg", dir + "../libexec/idem/idem-pg"})
    if (::access(candidate.c_str(), X_OK) == 0) ::execve(candidate.c_str(), argv, env.data());
}

void forget_hand_over_environment() {
  if (std::getenv(k_gnutls_added_marker) == nullptr) return;
  ::unsetenv(k_gnutls_added_marker);
  ::unsetenv(k_gnutls_no_implicit_init);
}

void add_lease_option(CLI::App& command, std::string& lease) {
  command
      .add_option("--lease", lease,
                  "On a store shared by hosts (PostgreSQL): how long a claim holds the key "
                  "unrenewed; renewed every third of it while the command runs (default: "
                  "$IDEM_LEASE, else 30s)")
      ->type_name("DURATION");
}

int64_t configured_lease_ms(const std::string& lease_flag) {
  constexpr int64_t k_default_lease_ms = 30000;
  constexpr int64_t k_min_lease_ms = 1000;
  int64_t lease_ms = k_default_lease_ms;
  if (!lease_flag.empty()) {
    lease_ms = core::duration_arg("--lease", lease_flag);
    if (lease_ms < k_min_lease_ms) throw UsageError("--lease must be at least 1s");
  } else if (const char* env = std::getenv("IDEM_LEASE"); env != nullptr && *env != '\0') {
    lease_ms = core::duration_arg("IDEM_LEASE", env);
    if (lease_ms < k_min_lease_ms) throw UsageError("IDEM_LEASE must be at least 1s");
  }
  return lease_ms;
}

void add_notify_options(CLI::App& command, NotifyOptions& notify) {
  command
      .add_option("--on-failure", notify.on_failure,
                  "Run CMD (with /bin/sh -c) when a key's attempt fails, is found abandoned or "
                  "loses its lease: the event, the record and its attempt as JSON on stdin, "
                  "IDEM_EVENT and IDEM_KEY in its environment")
      ->type_name("CMD");
  command
      .add_option("--on-change", notify.on_change,
                  "As --on-failure, and also when a key succeeds after a failure (recovered), "
                  "but only on a change of outcome: a failure after a failure tells nothing")
      ->type_name("CMD");
  command
      .add_option("--notify-timeout", notify.timeout,
                  "Stop the notify command and what it started after DURATION (TERM to its "
                  "process group, KILL 2s later); idem waits for them before it exits")
      ->type_name("DURATION")
      ->capture_default_str();
}

std::shared_ptr<const core::NotifySpec> notify_spec(const NotifyOptions& notify) {
  const int64_t timeout_ms = core::duration_arg("--notify-timeout", notify.timeout);
  if (timeout_ms == 0) throw UsageError("--notify-timeout must be above zero");
  const bool change = !notify.on_change.empty();
  if (notify.on_failure.empty() && !change) return nullptr;
  if (!notify.on_failure.empty() && change)
    throw UsageError(
        "give --on-failure or --on-change, not both (--on-change runs for failures too; "
        "its command can tell them apart by $IDEM_EVENT)");
  auto spec = std::make_shared<core::NotifySpec>();
  spec->argv = core::shell_command(change ? notify.on_change : notify.on_failure);
  spec->on = change ? core::NotifyOn::change : core::NotifyOn::failure;
  spec->timeout_ms = timeout_ms;
  return spec;
}

void use_notify(engine::Front& front, std::shared_ptr<const core::NotifySpec> spec,
                bool live_output, std::function<void(const std::string& text)> write_stderr) {
  if (!spec) return;
  engine::Notifier::Options options;
  options.live_output_fd = live_output ? 2 : -1;
  options.report = [live_output,
                    write_stderr = std::move(write_stderr)](const engine::NotifyReport& r) {
    std::string text = live_output ? std::string() : r.output;
    if (!text.empty() && text.back() != '\n') text += '\n';
    if (r.result != engine::NotifyReport::Result::ran) text += "idem: " + r.text() + "\n";
    if (!text.empty()) write_stderr(text);
  };
  front.notify = std::move(spec);
  front.notifier = std::make_shared<engine::Notifier>(std::move(options));
}

CliTraces::CliTraces(engine::Front& front, bool background) {
  try {
    otel::Exporter::Options options;
    // A request under way when the command has ended is waited for no longer than the rest.
    options.timeout_ms = otel::k_final_export_wait_ms;
    // Sent at once, by a thread, where a command makes more than one span (each); else by the
    // destructor, on this thread, once the command has ended.
    options.linger_ms = 0;
    options.background = background;
    // What the receiver answers would change nothing: the command has ended, and its exit code
    // is never the export's. Waiting for the answer cost a replay a sixth of its time.
    options.await_answer = false;
    options.hold_connection = [](int fd, int timeout_ms) {
      return proc::hold_open_until_readable(fd, timeout_ms) >= 0;
    };
    exporter_ = otel::exporter_from_environment(*front.clock, options);
  } catch (const Error& e) {
    std::cerr << "idem: " << e.what() << "; running without traces\n";
  }
  front.spans = exporter_;
}

CliTraces::~CliTraces() { send_now(); }

void CliTraces::send_now() const {
  if (!exporter_) return;
  exporter_->shutdown(util::monotonic_ms() + exporter_->options().timeout_ms);
}

void end_process(int code) {
  std::cout.flush();
  std::cerr.flush();
  ::_exit(code);
}

std::string CliTraces::parent() const {
  const char* parent = exporter_ ? std::getenv("TRACEPARENT") : nullptr;
  return parent ? parent : "";
}

bool owner_gone_now(const core::Record& record, int64_t now_ms) {
  return core::owner_counts_gone(record, now_ms, proc::owner_gone);
}

std::string effective_status(const core::Record& record, int64_t now_ms) {
  return core::effective_status(record, now_ms, owner_gone_now(record, now_ms));
}

std::string exit_summary(const core::Record& r) {
  if (r.timed_out) return "timeout";
  if (r.signal) return "signal " + std::to_string(*r.signal);
  if (r.exit_code) return std::to_string(*r.exit_code);
  return "-";
}

void warn_unproven_leftovers(const core::Record& record, const std::string& shown) {
  std::cerr << "idem: " << shown << ": process group " << record.process_group.pgid << " of its "
            << core::to_string(record.status) << " attempt " << record.attempt
            << " has live processes that cannot be proven the attempt's (their leader is gone "
               "and none carries its "
            << core::k_attempt_mark_env
            << "; the number may lead another group now): not waiting for them, not stopping "
               "them\n";
}

bool use_colour(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && *no_colour != '\0') return false;
  return ::isatty(fd) == 1;
}

std::string colour_status(const std::string& status, bool colour) {
  if (!colour) return status;
  const char* code = "0";
  if (status == "succeeded")
    code = "32";
  else if (status == "failed")
    code = "31";
  else if (status == "running")
    code = "33";
  else if (status == "abandoned")
    code = "35";
  else if (status == "expired")
    code = "2";
  return std::string("\033[") + code + "m" + status + "\033[0m";
}

CLI::Option* add_key_option(CLI::App& command, std::string& key, const std::string& description) {
  return command.add_option("-k,--key", key, description)
      ->type_name("KEY")
      ->check(CLI::Validator(
          [](std::string& value) {
            return value == "--" ? std::string("missing KEY (-- ends the options)") : std::string();
          },
          "", "key"));
}

void add_command_argument(CLI::App& command, std::vector<std::string>& words,
                          const std::string& description) {
  command.positionals_at_end();  // the first positional word makes every later one positional
  // CLI11 reads a word "[a,b]" given to an option that allows extra arguments as a list and
  // splits it (printf's "[%s]" would arrive as "%s"). Without extra arguments, and with a minimum
  // no command line reaches, the option takes every word whole and as many as there are.
  constexpr int k_all_words = CLI::detail::expected_max_vector_size;
  command.add_option("command", words, description)
      ->type_name("COMMAND [ARG...]")
      ->expected(k_all_words, k_all_words)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace idem::cli
