// `idem ls`: records newest first, as a table or JSON Lines.
#include <algorithm>
#include <iostream>

#include "cli/inspect.hpp"
#include "core/errors.hpp"
#include "util/clock.hpp"

namespace idem::cli {

namespace {

std::string relative(int64_t when_ms, int64_t now_ms) {
  if (when_ms == 0) return "-";
  if (when_ms <= now_ms) return util::human_duration(now_ms - when_ms) + " ago";
  return "in " + util::human_duration(when_ms - now_ms);
}

std::string expires_text(const core::Record& r, int64_t now_ms) {
  if (r.expires_ms == 0) return r.status == core::Status::running ? "-" : "never";
  return relative(r.expires_ms, now_ms);
}

}  // namespace

CLI::App* register_ls(CLI::App& app, LsOptions& o) {
  auto* ls = app.add_subcommand("ls", "List records, newest first");
  ls->add_option("--status", o.statuses,
                 "Only records in this status: running, succeeded, failed, abandoned, expired "
                 "(repeatable)")
      ->type_name("STATUS")->allow_extra_args(false);
  ls->add_option("--prefix", o.prefix, "Only keys starting with PREFIX")->type_name("PREFIX");
  ls->add_option("--limit", o.limit, "At most N records (default: all)")
      ->type_name("N")->check(CLI::NonNegativeNumber);
  ls->add_flag("--all", o.all, "Include expired records");
  ls->add_flag("--json", o.json, "JSON Lines with ISO-8601 UTC times");
  ls->add_flag("--keys", o.keys, "Only the keys, one per line (for shell completion)");
  ls->footer("Examples:\n  idem ls --status failed --status abandoned\n  idem ls --prefix backup- --json | jq .key");
  return ls;
}

int run_ls(const GlobalOptions& global, const LsOptions& o) {
  for (const auto& s : o.statuses)
    if (!core::status_from_string(s) && s != "expired")
      throw UsageError("bad --status '" + s +
                       "': use running, succeeded, failed, abandoned or expired");
  auto store = open_store(global);
  util::SystemClock clock;
  int64_t now = clock.now_ms();
  bool want_expired = std::find(o.statuses.begin(), o.statuses.end(), "expired") != o.statuses.end();
  store::ListQuery q;
  q.include_expired = o.all || want_expired;
  q.prefix = o.prefix;
  q.now_ms = now;
  // Status filtering and the limit apply to the status users see (a running record whose owner
  // is gone shows as abandoned), so both happen here rather than in SQL.
  std::vector<core::Record> shown;
  std::vector<std::string> statuses;
  for (auto& r : store->list(q)) {
    std::string status = effective_status(r, now);
    if (!o.statuses.empty() &&
        std::find(o.statuses.begin(), o.statuses.end(), status) == o.statuses.end())
      continue;
    shown.push_back(std::move(r));
    statuses.push_back(status);
    if (o.limit > 0 && int64_t(shown.size()) >= o.limit) break;
  }

  if (o.keys) {
    for (const auto& r : shown) std::cout << r.key << "\n";
    return 0;
  }
  if (o.json) {
    for (const auto& r : shown)
      std::cout << record_json(r, now).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    return 0;
  }
  const std::vector<std::string> headers = {"KEY", "STATUS", "EXIT", "ATTEMPT",
                                            "STARTED", "DURATION", "EXPIRES"};
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < shown.size(); ++i) {
    const auto& r = shown[i];
    rows.push_back({r.key, statuses[i], exit_summary(r), std::to_string(r.attempt),
                    relative(r.started_ms, now),
                    r.finished_ms ? util::human_duration(r.finished_ms - r.started_ms) : "-",
                    expires_text(r, now)});
  }
  std::vector<size_t> widths;
  for (const auto& h : headers) widths.push_back(h.size());
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  bool colour = use_colour(1);
  auto print_row = [&](const std::vector<std::string>& row, bool header) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      std::string cell = (!header && c == 1) ? colour_status(row[c], colour) : row[c];
      line += cell;
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    std::cout << line << "\n";
  };
  print_row(headers, true);
  for (const auto& row : rows) print_row(row, false);
  return 0;
}

}  // namespace idem::cli
