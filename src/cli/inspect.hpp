#pragma once
// The inspecting and cleaning subcommands: ls, show, status, rm, gc; export and import; doctor.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "core/history.hpp"

namespace idem::cli {

struct LsOptions {
  std::vector<std::string> statuses;
  std::string prefix;
  std::string front;  // run, each, begin, hook, proxy, ledger (core::kind_of_front)
  std::string since;  // a duration back from now, or an RFC 3339 time (core::parse_time_bound)
  std::string until;
  std::string limit = "0";  // validated by ls itself, for a one-line message
  bool all = false;
  bool json = false;
  bool keys = false;
};
CLI::App* register_ls(CLI::App& app, LsOptions& options);
int run_ls(const GlobalOptions& global, const LsOptions& options);
// What ls and export share: --limit's value (UsageError for a bad one), --status's values
// checked, and the filters in the store's terms. A running record whose owner is gone shows as
// abandoned, which only the caller can tell: `check_here` then says the caller checks each
// record's shown status against --status, and counts the limit itself.
int64_t limit_arg(const std::string& text);
void check_statuses(const std::vector<std::string>& statuses);
store::ListQuery list_query(const LsOptions& options, int64_t limit, int64_t now_ms,
                            bool& check_here);

struct ShowOptions {
  std::string key;
  bool json = false;
  bool stdout_raw = false;
  bool stderr_raw = false;
  bool request = false;
  std::string attempts = "20";  // the newest attempts listed; "all": every one kept
};
CLI::App* register_show(CLI::App& app, ShowOptions& options);
int run_show(const GlobalOptions& global, const ShowOptions& options);

struct LogOptions {
  std::string key;
  bool json = false;
};
CLI::App* register_log(CLI::App& app, LogOptions& options);
int run_log(const GlobalOptions& global, const LogOptions& options);
// The attempts as `idem log` prints them (show too, each line after `indent`).
void print_history_table(const std::vector<core::HistoryEntry>& entries, const std::string& indent);
// The entries as shown: a running last attempt whose owner is gone shows as abandoned.
std::vector<core::HistoryEntry> shown_history(const core::Record& record,
                                              std::vector<core::HistoryEntry> entries,
                                              int64_t now_ms);

struct TailOptions {
  std::string key;
  bool follow = false;
};
CLI::App* register_tail(CLI::App& app, TailOptions& options);
int run_tail(const GlobalOptions& global, const TailOptions& options);

struct StatusOptions {
  std::string key;
};
CLI::App* register_status(CLI::App& app, StatusOptions& options);
int run_status(const GlobalOptions& global, const StatusOptions& options);

struct RmOptions {
  std::vector<std::string> keys;
  bool force = false;
};
CLI::App* register_rm(CLI::App& app, RmOptions& options);
int run_rm(const GlobalOptions& global, const RmOptions& options);

struct GcOptions {
  bool dry_run = false;
  std::string older_than;
};
CLI::App* register_gc(CLI::App& app, GcOptions& options);
int run_gc(const GlobalOptions& global, const GcOptions& options);

// export takes ls's filters (json and keys unused).
struct ExportOptions {
  LsOptions filter;
};
CLI::App* register_export(CLI::App& app, ExportOptions& options);
int run_export(const GlobalOptions& global, const ExportOptions& options);

struct ImportOptions {
  std::string file = "-";
  bool replace = false;
};
CLI::App* register_import(CLI::App& app, ImportOptions& options);
int run_import(const GlobalOptions& global, const ImportOptions& options);

struct DoctorOptions {
  bool json = false;
  std::string config;              // a daemon config to check, as idem serve --config reads it
  std::vector<std::string> hooks;  // hooks files, as idem serve --hooks reads them
  bool hooks_template = false;     // --template
};
CLI::App* register_doctor(CLI::App& app, DoctorOptions& options);
int run_doctor(const GlobalOptions& global, const DoctorOptions& options);

// Schedules (SPEC §11): `idem expect` records what a family of keys should do, `idem check`
// evaluates every expectation (cli/schedule.cpp).
struct ExpectOptions {
  std::string pattern;
  std::string every;
  std::string cron;
  std::string tz;
  std::string grace;
  std::string max_runtime;
  std::string at_most;
  bool list = false;
  bool remove = false;
  bool json = false;
};
CLI::App* register_expect(CLI::App& app, ExpectOptions& options);
int run_expect(const GlobalOptions& global, const ExpectOptions& options);

struct CheckOptions {
  bool json = false;
};
CLI::App* register_check(CLI::App& app, CheckOptions& options);
int run_check(const GlobalOptions& global, const CheckOptions& options);

}  // namespace idem::cli
