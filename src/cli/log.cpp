// `idem log`: a key's attempt history, oldest first.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/inspect.hpp"
#include "core/errors.hpp"
#include "core/history.hpp"
#include "core/key.hpp"
#include "core/record_json.hpp"
#include "util/clock.hpp"

namespace idem::cli {

CLI::App* register_log(CLI::App& app, LogOptions& o) {
  auto* log = app.add_subcommand("log", "Show a key's attempts, newest last");
  log->add_option("key", o.key, "The record's key (or its name PATH#KEY, as idem ls prints it)")
      ->required()
      ->type_name("KEY");
  log->add_flag("--json", o.json, "One JSON object: the key, its replays and its attempts");
  log->footer(
      "Examples:\n  idem log backup-2026-11-29\n  idem log order-42 --json | jq '.attempts[-1]'");
  return log;
}

// What ended an attempt, in a few characters: its exit code, answer's status or signal.
std::string history_result(const core::HistoryEntry& e) {
  if (e.http_status) return "HTTP " + std::to_string(*e.http_status);
  if (e.signal) return "signal " + std::to_string(*e.signal);
  if (e.exit_code) return std::to_string(*e.exit_code);
  return "-";
}

std::vector<std::string> history_row(const core::HistoryEntry& e) {
  return {std::to_string(e.number),
          e.trigger,
          std::string(core::to_string(e.outcome)),
          e.reason.empty() ? "-" : e.reason,
          history_result(e),
          util::iso8601_utc(e.started_ms),
          e.ended_ms ? util::human_duration(e.ended_ms - e.started_ms) : "-",
          "pid " + std::to_string(e.pid) + " on " + e.host};
}

void print_history_table(const std::vector<core::HistoryEntry>& entries,
                         const std::string& indent) {
  std::vector<std::vector<std::string>> rows{
      {"#", "TRIGGER", "OUTCOME", "ENDED BY", "RESULT", "STARTED", "DURATION", "OWNER"}};
  for (const core::HistoryEntry& e : entries) rows.push_back(history_row(e));
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

std::vector<core::HistoryEntry> shown_history(const core::Record& record,
                                              std::vector<core::HistoryEntry> entries,
                                              int64_t now_ms) {
  // A running attempt whose owner is gone shows as abandoned, as `idem show` shows its record;
  // the store records it so at the key's next claim.
  if (!entries.empty() && entries.back().outcome == core::Status::running &&
      record.status == core::Status::running &&
      core::effective_status(record, now_ms, owner_gone_now(record, now_ms)) == "abandoned") {
    entries.back().outcome = core::Status::abandoned;
    entries.back().reason = core::lease_expired(record, now_ms) ? core::k_ended_lease_ran_out
                                                                : core::k_ended_owner_died;
  }
  return entries;
}

int run_log(const GlobalOptions& global, const LogOptions& o) {
  core::validate_record_name(o.key);
  auto store = open_store(global);
  const auto record = store->get(o.key);
  if (!record)
    throw Error(k_exit_already_done, "no record for key '" + core::display_key(o.key) + "'");
  const std::vector<core::HistoryEntry> entries =
      shown_history(*record, store->history(o.key), util::process_clock().now_ms());
  if (o.json) {
    std::cout << core::history_document(*record, entries)
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  print_history_table(entries, "");
  // An attempt that has not run (yet) has no history entry: say where it stands.
  const std::string group = core::display_key(record->serial_group);
  if (record->status == core::Status::queued)
    std::cout << "queued since " << util::iso8601_utc(record->started_ms)
              << ": waits its turn in serial group '" << group << "'\n";
  else if (record->status == core::Status::superseded)
    std::cout << "superseded at " << util::iso8601_utc(record->finished_ms) << " by '"
              << core::display_key(record->superseded_by) << "' in serial group '" << group
              << "' before it ran\n";
  return 0;
}

}  // namespace idem::cli
