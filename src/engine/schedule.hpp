#pragma once
// Evaluating expectations (SPEC §11) against a store: each expectation's evaluation
// (core::evaluate) reads its facts from the store's history and keeps its state and findings
// there, so that each finding is found once, whoever evaluates (`idem check`, any daemon).
#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "store/store.hpp"

namespace idem::engine {

// The facts of an evaluation, read from a store.
class StoreScheduleFacts : public core::ScheduleFacts {
 public:
  explicit StoreScheduleFacts(store::Store& store) : store_(store) {}
  std::vector<core::AttemptFact> started(const core::KeyPattern& pattern, int64_t after_ms,
                                         const std::string& after_key, int64_t after_number,
                                         int64_t before_ms, int64_t limit) override;
  std::optional<core::AttemptFact> attempt(const std::string& key, int64_t number) override;
  std::vector<core::AttemptFact> running(const core::KeyPattern& pattern, int64_t limit) override;

 private:
  store::Store& store_;
};

struct ScheduleCheck {
  // Every expectation as it stands after this check (its state the one kept).
  std::vector<store::StoredExpectation> expectations;
  // The findings this check kept: found now, and by no other evaluation.
  std::vector<core::ScheduleFinding> found;
  // Expectations that could not be evaluated, a line each ("expectation 'x': unknown time zone").
  std::vector<std::string> problems;
  // When the next evaluation has something to judge (see core::Evaluation::wake_ms).
  int64_t wake_ms = INT64_MAX;
};

// Evaluates every expectation of `store` at `now_ms` and keeps each evaluation. One that another
// evaluation overtook (its revision moved meanwhile) is left as that one kept it. Throws
// StoreError for a failed store.
ScheduleCheck check_expectations(store::Store& store, int64_t now_ms);

}  // namespace idem::engine
