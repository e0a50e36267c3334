#pragma once
// What the subcommands share: global options, opening the store, record rendering.
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.hpp"
#include "core/exit_code.hpp"
#include "core/notify.hpp"
#include "core/record.hpp"
#include "engine/attempt.hpp"
#include "store/store.hpp"

namespace idem::otel {
class Exporter;  // otel/exporter.hpp
}

namespace idem::cli {

struct GlobalOptions {
  std::string store;  // --store URL; empty: $IDEM_STORE, then --db
  std::string db;     // --db PATH; empty: $IDEM_DB, then the XDG default
};

// Registers --store and --db on the top-level app (they are accepted after the subcommand too).
void add_global_options(CLI::App& app, GlobalOptions& global);

// The global options that take a value: main() skips them (and their value) when it looks for
// the subcommand's name.
bool is_global_option_with_value(std::string_view arg);

// The store in force: --store, $IDEM_STORE, --db, $IDEM_DB, the XDG default (contract §2).
store::StoreLocation store_location(const GlobalOptions& global);

std::unique_ptr<store::Store> open_store(const GlobalOptions& global);

// --lease DURATION on run, each and serve: how long a claim on a store shared by several hosts
// (PostgreSQL) holds the key without a renewal; idem renews it every third of that while the
// command runs. Empty: $IDEM_LEASE, else 30 s.
void add_lease_option(CLI::App& command, std::string& lease);
// The lease the flag or $IDEM_LEASE asks for, checked (at least 1 s) whatever the store. A
// claim carries it on a store shared by hosts (Store::spans_hosts), none on a store of one host,
// whose owners are checked by pid.
int64_t configured_lease_ms(const std::string& lease_flag);

// --on-failure CMD, --on-change CMD and --notify-timeout on run and each.
struct NotifyOptions {
  std::string on_failure;
  std::string on_change;
  std::string timeout = "30s";
};
void add_notify_options(CLI::App& command, NotifyOptions& notify);
// The notify command the flags ask for (a shell command line, run with /bin/sh -c), or null.
// Usage errors for both flags or a bad timeout.
std::shared_ptr<const core::NotifySpec> notify_spec(const NotifyOptions& notify);
// Sets `front` to run `spec` (when there is one): its failures reported on stderr as one
// `idem: notify ...` line, after the output it wrote (`live_output`: written to stderr as it
// comes instead; each collects it, so its jobs do not interleave).
void use_notify(engine::Front& front, std::shared_ptr<const core::NotifySpec> spec,
                bool live_output, std::function<void(const std::string& text)> write_stderr);

// Traces of one command's attempts (SPEC §12): the exporter the OTEL_* variables ask for, put
// into `front` (nothing at all when they ask for none). The spans go out when this ends (the
// command has ended): written within otel::k_final_export_wait_ms, less with
// OTEL_EXPORTER_OTLP_TIMEOUT, the receiver's answer not waited for. A variable that cannot
// be used is told on stderr, once, and the command runs without traces: export never changes an
// outcome or an exit code.
class CliTraces {
 public:
  // `background`: spans are sent as they come, by a thread (each's many attempts); else all at the
  // end, on this thread (run, begin, end: one span).
  explicit CliTraces(engine::Front& front, bool background = false);
  ~CliTraces();
  CliTraces(const CliTraces&) = delete;
  CliTraces& operator=(const CliTraces&) = delete;
  // $TRACEPARENT, the parent of the attempts' spans, when traces are on; else empty.
  std::string parent() const;
  // Sends what is left now (the destructor would): before end_process, which runs no destructor.
  void send_now() const;

 private:
  std::shared_ptr<otel::Exporter> exporter_;
};

// Ends the process with CODE once a command's work is done (its output written, its records and
// counts committed, its spans sent): stdout is flushed, and nothing else is torn down. Closing the
// store and freeing what the process allocated is a tenth of a replay's instructions and leaves
// nothing behind that the exit does not: SQLite writes nothing when the last connection closes
// (idem turns its checkpoint off), and the kernel releases its locks and maps as it does for a
// process killed between two statements, which every opener of the store expects.
[[noreturn]] void end_process(int code);

// A static idem has no PostgreSQL backend (store::has_postgres_backend) and no system resolver
// (net/resolve.hpp): for a PostgreSQL store, or for `idem serve` (`serving`), it execs idem-pg,
// the same program linked dynamically with libpq (beside this one, or in ../libexec/idem/),
// with the same arguments and environment, before it has done anything. Returns when there is
// nothing to hand over, or no idem-pg (opening the store, or resolving a name, then says so).
// The environment gains GNUTLS_NO_IMPLICIT_INIT=1 (unless the user set that variable), so that
// libgnutls, loaded with libpq, skips its initialisation at load time.
void hand_over_to_idem_pg(const GlobalOptions& global, char** argv, bool serving);
// In idem-pg, first thing in main: takes out of the environment what the hand-over added, so
// nothing idem-pg runs sees it. Does nothing in a process that was not handed over.
void forget_hand_over_environment();

// Whether the owner of a running record counts as gone (core::owner_counts_gone: by its lease, or
// without one by proc::owner_gone); false for a record that is not running.
bool owner_gone_now(const core::Record& record, int64_t now_ms);

// The status a user sees (core::effective_status): "expired" past the TTL, "abandoned" for a
// running record whose lease ran out or whose owner is provably gone (the store records that at
// the next claim).
std::string effective_status(const core::Record& record, int64_t now_ms);

// "exit 0", "signal 15", "timeout", "-".
std::string exit_summary(const core::Record& record);

// The 75 of a key held by what a failed or abandoned attempt left running: unlike a key running
// elsewhere, someone must look (the processes may never end), so --quiet prints its line too.
class LeftoversRefusal : public Error {
 public:
  explicit LeftoversRefusal(const std::string& message) : Error(k_exit_running, message) {}
};

// Tells, on stderr, of a previous attempt's process group with live members none of which is
// proven the attempt's (engine::Leftovers::unproven): not waited for, not stopped. `shown` names
// the key ("key 'k'").
void warn_unproven_leftovers(const core::Record& record, const std::string& shown);

// Colour only for a terminal, never with NO_COLOR set.
bool use_colour(int fd);
std::string colour_status(const std::string& status, bool colour);

// -k/--key KEY on run, begin and end. CLI11 takes any word as a required option's value: `-k --`
// would make `--` the key; it is refused as a missing key instead (64).
CLI::Option* add_key_option(CLI::App& command, std::string& key, const std::string& description);

// The COMMAND [ARG...] of run and each. As with env, timeout or flock, idem's options end at the
// command's first word: every word after it, `--db` and `-q` included, is the command's own.
// A `--` before the command stays accepted.
void add_command_argument(CLI::App& command, std::vector<std::string>& words,
                          const std::string& description);

}  // namespace idem::cli
