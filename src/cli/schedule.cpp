// `idem expect` and `idem check` (SPEC §11): what a family of keys should do, and which runs
// should have happened and did not.
#include "core/schedule.hpp"

#include <algorithm>
#include <iostream>

#include "cli/inspect.hpp"
#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "engine/schedule.hpp"
#include "util/clock.hpp"
#include "util/time_zone.hpp"

namespace idem::cli {

namespace {

// The pattern as typed: a key's rules (no control characters, at most 1 KiB), not empty.
void check_pattern(const std::string& pattern) {
  if (pattern.empty()) throw UsageError("the pattern is empty: give a key prefix or a glob");
  if (std::optional<std::string> problem = core::key_problem(pattern))
    throw UsageError("pattern '" + core::display_key(pattern) + "': " + *problem);
}

int64_t at_most_arg(const std::string& text) {
  int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || n > 1000000) {
      n = -1;
      break;
    }
    n = n * 10 + (c - '0');
  }
  if (text.empty() || n < 1 || n > 1000000)
    throw UsageError("--at-most '" + text + "': give a whole number from 1 to 1000000");
  return n;
}

void print_expectation(const store::StoredExpectation& x, int64_t now_ms) {
  const core::Expectation& e = x.expectation;
  std::cout << e.pattern << "  " << e.schedule_text() << ", grace "
            << util::human_duration(e.grace_ms);
  if (e.max_runtime_ms > 0) std::cout << ", max runtime " << util::human_duration(e.max_runtime_ms);
  if (e.at_most > 0) std::cout << ", at most " << e.at_most << " a period";
  try {
    core::Schedule schedule(e);
    const core::ScheduleState& st = x.state;
    if (!st.last_key.empty())
      std::cout << "; last run " << st.last_key << " attempt " << st.last_number << " at "
                << schedule.local_time(st.last_started_ms) << " ("
                << core::to_string(st.last_outcome) << ")";
    if (std::optional<int64_t> next = schedule.upcoming(st))
      std::cout << "; next due " << schedule.local_time(*next) << (*next < now_ms ? " (due)" : "");
  } catch (const UsageError& error) {
    std::cout << "; " << error.what();
  }
  std::cout << "\n";
}

}  // namespace

CLI::App* register_expect(CLI::App& app, ExpectOptions& o) {
  auto* cmd = app.add_subcommand(
      "expect", "Say what a family of keys should do: when it is due, how long it may run");
  cmd->add_option("pattern", o.pattern,
                  "A key prefix, or a glob (* ? [...]) the family's keys match")
      ->type_name("PATTERN");
  auto* every =
      cmd->add_option("--every", o.every, "A real attempt is due DURATION after the last one")
          ->type_name("DURATION");
  auto* cron = cmd->add_option("--cron", o.cron,
                               "Due at the times of a crontab line's five fields (or @daily...)")
                   ->type_name("\"MIN HOUR DOM MON DOW\"");
  every->excludes(cron);
  cmd->add_option("--tz", o.tz, "The time zone --cron reads its times in (default: the system's)")
      ->type_name("ZONE");
  cmd->add_option("--grace", o.grace,
                  "How long after a due time its attempt may start (default 1m)")
      ->type_name("DURATION");
  cmd->add_option("--max-runtime", o.max_runtime, "An attempt running longer is an overrun")
      ->type_name("DURATION");
  cmd->add_option("--at-most", o.at_most,
                  "More real attempts than N in one period are too often (replays never count)")
      ->type_name("N");
  auto* list = cmd->add_flag("--list", o.list, "List the expectations, with last and next runs");
  auto* rm = cmd->add_flag("--rm", o.remove, "Remove the expectation of PATTERN and its findings");
  cmd->add_flag("--json", o.json, "With --list: one JSON object per line");
  list->excludes(rm);
  cmd->footer(
      "Exit: 0 done; 1 --rm of a pattern with no expectation; 64 bad input; 74 store.\n"
      "Examples:\n"
      "  idem expect backup- --cron '0 3 * * *' --tz Europe/Paris --max-runtime 2h\n"
      "  idem expect 'hook:github/*' --every 1h --grace 10m\n"
      "  idem expect --list");
  return cmd;
}

int run_expect(const GlobalOptions& global, const ExpectOptions& o) {
  const bool defines = !o.every.empty() || !o.cron.empty() || !o.tz.empty() || !o.grace.empty() ||
                       !o.max_runtime.empty() || !o.at_most.empty();
  if (o.list) {
    if (defines || !o.pattern.empty()) throw UsageError("--list takes no pattern and no schedule");
    auto store = open_store(global);
    const int64_t now_ms = util::process_clock().now_ms();
    for (const store::StoredExpectation& x : store->expectations()) {
      if (o.json) {
        nlohmann::json j = core::expectation_json(x.expectation);
        j["last_key"] = x.state.last_key;
        std::cout << j.dump() << "\n";
      } else {
        print_expectation(x, now_ms);
      }
    }
    return k_exit_ok;
  }
  if (o.json) throw UsageError("--json goes with --list");
  check_pattern(o.pattern);
  if (o.remove) {
    if (defines) throw UsageError("--rm takes a pattern alone");
    auto store = open_store(global);
    if (store->remove_expectation(o.pattern)) return k_exit_ok;
    std::cerr << "idem: no expectation for '" << core::display_key(o.pattern) << "'\n";
    return k_exit_already_done;
  }
  core::Expectation e;
  e.pattern = o.pattern;
  if (o.every.empty() && o.cron.empty())
    throw UsageError("say when the family is due: --every DURATION or --cron \"...\"");
  if (!o.every.empty()) {
    if (!o.tz.empty()) throw UsageError("--tz goes with --cron");
    e.every_ms = core::positive_duration_arg("--every", o.every);
  } else {
    e.cron = o.cron;
    e.tz = o.tz.empty() ? util::local_zone_name() : o.tz;
  }
  if (!o.grace.empty()) e.grace_ms = core::positive_duration_arg("--grace", o.grace);
  if (!o.max_runtime.empty())
    e.max_runtime_ms = core::positive_duration_arg("--max-runtime", o.max_runtime);
  if (!o.at_most.empty()) e.at_most = at_most_arg(o.at_most);
  e.created_ms = util::process_clock().now_ms();
  core::Schedule schedule(e);  // refuses a bad cron line or zone before anything is stored
  auto store = open_store(global);
  std::vector<store::StoredExpectation> all = store->expectations();
  const bool replaces = std::any_of(
      all.begin(), all.end(), [&](const auto& x) { return x.expectation.pattern == e.pattern; });
  if (!replaces && int64_t(all.size()) >= core::k_max_expectations)
    throw UsageError("the store holds " + std::to_string(core::k_max_expectations) +
                     " expectations already: remove one first (idem expect --rm)");
  store->put_expectation(e);
  if (std::optional<int64_t> next = schedule.next_due(e.created_ms))
    std::cout << "expect " << e.pattern << ": " << e.schedule_text() << ", next due "
              << schedule.local_time(*next) << "\n";
  return k_exit_ok;
}

CLI::App* register_check(CLI::App& app, CheckOptions& o) {
  auto* cmd = app.add_subcommand(
      "check", "Evaluate the expectations: missed, failed, overrun, too-often, recovered");
  cmd->add_flag("--json", o.json, "One JSON object per finding, a line each");
  cmd->footer(
      "Prints the findings still open (each until a later success recovers it), then those\n"
      "this check found. Exit: 0 no finding; 1 findings; 74 store.\n"
      "Example (crontab):\n  */5 * * * *  idem check || mail -s 'idem check' ops@example.com");
  return cmd;
}

int run_check(const GlobalOptions& global, const CheckOptions& o) {
  auto store = open_store(global);
  const engine::ScheduleCheck check =
      engine::check_expectations(*store, util::process_clock().now_ms());
  // The findings still open from earlier checks, oldest first, then every one this check found
  // (a missed run and the recovery after it may be found by one check).
  auto same = [](const core::ScheduleFinding& a, const core::ScheduleFinding& b) {
    return a.pattern == b.pattern && a.kind == b.kind && a.at_ms == b.at_ms && a.key == b.key &&
           a.attempt == b.attempt;
  };
  std::vector<core::ScheduleFinding> shown;
  for (const store::StoredExpectation& x : check.expectations) {
    std::vector<core::ScheduleFinding> open =
        store->findings(x.expectation.pattern, true, store::k_findings_kept);
    std::reverse(open.begin(), open.end());
    for (core::ScheduleFinding& f : open) {
      const bool new_now = std::any_of(check.found.begin(), check.found.end(),
                                       [&](const auto& n) { return same(n, f); });
      if (f.kind != core::FindingKind::recovered && !new_now) shown.push_back(std::move(f));
    }
  }
  shown.insert(shown.end(), check.found.begin(), check.found.end());
  for (const core::ScheduleFinding& f : shown)
    std::cout << (o.json ? core::schedule_finding_json(f).dump() : core::schedule_finding_line(f))
              << "\n";
  for (const std::string& problem : check.problems) std::cerr << "idem: " << problem << "\n";
  if (!check.problems.empty()) return k_exit_findings;
  return shown.empty() ? k_exit_ok : k_exit_findings;
}

}  // namespace idem::cli
