// `idem ls`: records newest first, as a table or JSON Lines.
#include <algorithm>
#include <iostream>

#include "cli/inspect.hpp"
#include "core/errors.hpp"
#include "core/history.hpp"
#include "core/record_json.hpp"
#include "util/clock.hpp"

namespace idem::cli {

namespace {

std::string relative(int64_t when_ms, int64_t now_ms) {
  if (when_ms == 0) return "-";
  if (when_ms <= now_ms) return util::human_duration(now_ms - when_ms) + " ago";
  return "in " + util::human_duration(when_ms - now_ms);
}

std::string expires_text(const core::Record& r, int64_t now_ms) {
  if (r.expires_ms == 0)
    return r.status == core::Status::running || r.status == core::Status::queued ? "-" : "never";
  return relative(r.expires_ms, now_ms);
}

}  // namespace

CLI::App* register_ls(CLI::App& app, LsOptions& o) {
  auto* ls = app.add_subcommand("ls", "List records, newest first");
  ls->add_option("--status", o.statuses,
                 "Only records in this status: running, succeeded, failed, abandoned, queued, "
                 "superseded, expired (repeatable)")
      ->type_name("STATUS")
      ->allow_extra_args(false);
  ls->add_option("--prefix", o.prefix, "Only keys starting with PREFIX")->type_name("PREFIX");
  ls->add_option("--front", o.front,
                 "Only records made by this front: run, each, begin, hook, proxy, ledger")
      ->type_name("FRONT");
  ls->add_option("--since", o.since,
                 "Only records whose attempt started at or after WHEN: a duration back from now "
                 "(1h, 7d) or an RFC 3339 time")
      ->type_name("WHEN");
  ls->add_option("--until", o.until,
                 "Only records whose attempt started before WHEN (as for --since)")
      ->type_name("WHEN");
  ls->add_option("--limit", o.limit, "At most N records (default, or 0: all)")->type_name("N");
  ls->add_flag("--all", o.all, "Include expired records");
  ls->add_flag("--json", o.json, "JSON Lines with ISO-8601 UTC times");
  ls->add_flag("--keys", o.keys, "Only the keys, one per line (for shell completion)");
  ls->footer(
      "Examples:\n  idem ls --status failed --status abandoned\n  idem ls --front hook --since "
      "1h\n  idem ls --prefix backup- --json | jq .key");
  return ls;
}

// A count of records: digits only (no sign, no exponent), at most 18 of them so it fits.
int64_t limit_arg(const std::string& text) {
  bool ok = !text.empty() && text.size() <= 18;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  if (!ok)
    throw UsageError("bad --limit '" + text +
                     "': use a number of records, such as 20 (0 means no limit)");
  return std::stoll(text);
}

void check_statuses(const std::vector<std::string>& statuses) {
  for (const auto& s : statuses)
    if (!core::status_from_string(s) && s != "expired")
      throw UsageError("bad --status '" + s +
                       "': use running, succeeded, failed, abandoned, queued, superseded or "
                       "expired");
}

namespace {

// The table, printed as rows come: buffered a page at a time, each page aligned with the widest
// cells seen so far (columns only grow), so memory stays bounded on any store size.
class TablePrinter {
 public:
  explicit TablePrinter(bool colour) : colour_(colour) {
    rows_.push_back({"KEY", "STATUS", "EXIT", "ATTEMPT", "STARTED", "DURATION", "EXPIRES"});
    widths_.assign(rows_[0].size(), 0);
  }
  void add(std::vector<std::string> row) {
    rows_.push_back(std::move(row));
    if (rows_.size() >= k_page) flush();
  }

  void flush() {
    for (const auto& row : rows_)
      for (size_t c = 0; c < row.size(); ++c) widths_[c] = std::max(widths_[c], row[c].size());
    for (const auto& row : rows_) {
      std::string line;
      for (size_t c = 0; c < row.size(); ++c) {
        line += (c == 1 && !header_pending_) ? colour_status(row[c], colour_) : row[c];
        if (c + 1 < row.size()) line += std::string(widths_[c] - row[c].size() + 2, ' ');
      }
      std::cout << line << "\n";
      header_pending_ = false;
    }
    rows_.clear();
  }

 private:
  static constexpr size_t k_page = 1000;
  bool colour_;
  bool header_pending_ = true;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> widths_;
};

}  // namespace

// The filters in the store's terms. A running record whose owner is gone shows as abandoned,
// which only this side can tell: so --status running or abandoned asks the store for running
// records too, and `check_here` says the shown status is checked here and the limit counted here.
store::ListQuery list_query(const LsOptions& o, int64_t limit, int64_t now, bool& check_here) {
  auto wanted = [&](std::string_view status) {
    return std::find(o.statuses.begin(), o.statuses.end(), status) != o.statuses.end();
  };
  store::ListQuery q;
  q.prefix = o.prefix;
  q.now_ms = now;
  if (!o.front.empty()) {
    std::optional<std::string> kind = core::kind_of_front(o.front);
    if (!kind)
      throw UsageError("bad --front '" + o.front + "': use " + std::string(core::known_fronts()));
    q.kind = *kind;
  }
  auto bound = [&](const char* flag, const std::string& text) -> int64_t {
    if (text.empty()) return 0;
    std::optional<int64_t> ms = core::parse_time_bound(text, now);
    if (!ms || *ms <= 0)
      throw UsageError(std::string("bad ") + flag + " '" + text +
                       "': use a duration such as 1h or 7d, or an RFC 3339 time such as "
                       "2026-12-01T08:00:00Z");
    return *ms;
  };
  q.since_ms = bound("--since", o.since);
  q.until_ms = bound("--until", o.until);
  check_here = false;
  if (o.statuses.empty()) {
    q.include_expired = o.all;
  } else {
    q.include_expired = wanted("expired");
    for (auto status : {core::Status::succeeded, core::Status::failed, core::Status::abandoned,
                        core::Status::running, core::Status::queued, core::Status::superseded})
      if (wanted(core::to_string(status))) q.statuses.push_back(status);
    if (wanted("abandoned") || wanted("running")) {
      check_here = true;
      if (!wanted("running")) q.statuses.push_back(core::Status::running);
    }
    q.live = !q.statuses.empty();
  }
  q.limit = check_here ? 0 : limit;
  q.keys_only = o.keys && !check_here;
  return q;
}

int run_ls(const GlobalOptions& global, const LsOptions& o) {
  const int64_t limit = limit_arg(o.limit);
  check_statuses(o.statuses);
  auto store = open_store(global);
  const int64_t now = util::process_clock().now_ms();
  bool check_here = false;
  const store::ListQuery q = list_query(o, limit, now, check_here);

  TablePrinter table(use_colour(1));
  int64_t shown = 0;
  store->list(q, [&](const core::Record& r) {
    if (o.keys && !check_here) {
      std::cout << r.key << "\n";
      return true;
    }
    const bool gone = owner_gone_now(r, now);  // one look at /proc per record
    std::string status = core::effective_status(r, now, gone);
    if (check_here && std::find(o.statuses.begin(), o.statuses.end(), status) == o.statuses.end())
      return true;
    if (o.keys)
      std::cout << r.key << "\n";
    else if (o.json)
      std::cout << core::record_json(r, now, gone)
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    else
      table.add({r.key, status, exit_summary(r), std::to_string(r.attempt),
                 relative(r.started_ms, now),
                 r.finished_ms ? util::human_duration(r.finished_ms - r.started_ms) : "-",
                 expires_text(r, now)});
    return limit == 0 || ++shown < limit;
  });
  if (!o.keys && !o.json) table.flush();
  return 0;
}

}  // namespace idem::cli
