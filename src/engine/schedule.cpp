#include "engine/schedule.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace idem::engine {

namespace {

core::AttemptFact fact_of_entry(const std::string& key, const core::HistoryEntry& e) {
  return core::AttemptFact{key,       e.number,    e.started_ms, e.ended_ms,
                           e.outcome, e.exit_code, e.http_status};
}

}  // namespace

std::vector<core::AttemptFact> StoreScheduleFacts::started(const core::KeyPattern& pattern,
                                                           int64_t after_ms,
                                                           const std::string& after_key,
                                                           int64_t after_number, int64_t before_ms,
                                                           int64_t limit) {
  return store_.attempts_started(pattern, after_ms, after_key, after_number, before_ms, limit);
}

std::optional<core::AttemptFact> StoreScheduleFacts::attempt(const std::string& key,
                                                             int64_t number) {
  store::HistoryPage page = store_.history_page(key, store::HistoryQuery{1, number + 1});
  if (page.entries.empty() || page.entries.back().number != number) return std::nullopt;
  return fact_of_entry(key, page.entries.back());
}

std::vector<core::AttemptFact> StoreScheduleFacts::running(const core::KeyPattern& pattern,
                                                           int64_t limit) {
  std::vector<core::AttemptFact> found;
  store::ListQuery q;
  q.statuses = {core::Status::running};
  q.prefix = pattern.head();
  // A glob's other keys are read and passed over: at most this many running records in all.
  q.limit = limit * 4;
  store_.list(q, [&](const core::Record& r) {
    if (pattern.matches(r.key))
      found.push_back(core::AttemptFact{r.key, r.attempt, r.started_ms, 0, r.status, std::nullopt,
                                        std::nullopt});
    return int64_t(found.size()) < limit;
  });
  return found;
}

ScheduleCheck check_expectations(store::Store& store, int64_t now_ms) {
  ScheduleCheck check;
  StoreScheduleFacts facts(store);
  check.expectations = store.expectations();
  for (store::StoredExpectation& x : check.expectations) {
    std::optional<core::Schedule> schedule;
    try {
      schedule.emplace(x.expectation);
    } catch (const UsageError& e) {
      check.problems.push_back("expectation '" + x.expectation.pattern + "': " + e.what());
      continue;
    }
    core::Evaluation ev = core::evaluate(*schedule, x.state, facts, now_ms);
    std::optional<std::vector<core::ScheduleFinding>> kept =
        store.save_evaluation(x.expectation.pattern, x.revision, ev);
    if (!kept) continue;  // another evaluation was kept since: its findings are its own
    x.state = ev.state;
    ++x.revision;
    check.wake_ms = std::min(check.wake_ms, ev.wake_ms);
    for (core::ScheduleFinding& f : *kept) check.found.push_back(std::move(f));
  }
  return check;
}

}  // namespace idem::engine
