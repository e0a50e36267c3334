// The store contract for schedules (SPEC §11), on every backend: expectations are kept, listed
// and replaced with their state reset; an evaluation is kept only at the revision it read, and
// each finding once; the history is read by start time, a page at a time, for a prefix or a
// glob; and engine::check_expectations finds a missed run, a failure and the recovery through
// the store alone.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "engine/schedule.hpp"
#include "store/store.hpp"
#include "store_contract.hpp"

namespace unit_store_contract_schedule {

using idem::core::Evaluation;
using idem::core::Expectation;
using idem::core::FindingKind;
using idem::core::KeyPattern;
using idem::core::ScheduleFinding;
using idem::core::Status;
using idem::test::k_alive;
using idem::test::k_t0;
using idem::test::outcome;
using idem::test::request;

Expectation every(const std::string& pattern, int64_t every_ms, int64_t created_ms) {
  Expectation e;
  e.pattern = pattern;
  e.every_ms = every_ms;
  e.created_ms = created_ms;
  e.grace_ms = 1000;
  return e;
}

ScheduleFinding finding(FindingKind kind, int64_t at_ms, const std::string& key = "") {
  ScheduleFinding f;
  f.kind = kind;
  f.at_ms = at_ms;
  f.key = key;
  f.attempt = key.empty() ? 0 : 1;
  f.detail = "d";
  f.found_ms = at_ms + 1;
  return f;
}

std::vector<std::string> keys(const std::vector<idem::core::AttemptFact>& facts) {
  std::vector<std::string> k;
  for (const auto& a : facts) k.push_back(a.key + "#" + std::to_string(a.number));
  return k;
}

TEMPLATE_TEST_CASE("store contract: expectations are kept, replaced and removed",
                   "[store][contract][schedule]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  CHECK(store->expectations().empty());
  Expectation cron;
  cron.pattern = "backup-";
  cron.cron = "0 3 * * *";
  cron.tz = "Europe/Paris";
  cron.grace_ms = 300000;
  cron.max_runtime_ms = 7200000;
  cron.at_most = 1;
  cron.created_ms = k_t0;
  store->put_expectation(cron);
  store->put_expectation(every("a-", 2000, k_t0));
  auto all = store->expectations();
  REQUIRE(all.size() == 2);
  CHECK(all[0].expectation.pattern == "a-");
  CHECK(all[1].expectation.cron == "0 3 * * *");
  CHECK(all[1].expectation.tz == "Europe/Paris");
  CHECK(all[1].expectation.max_runtime_ms == 7200000);
  CHECK(all[1].expectation.at_most == 1);
  CHECK(all[1].state.evaluated_ms == 0);

  // An evaluation is kept at the revision it read, once; its findings once each.
  Evaluation ev;
  ev.state.evaluated_ms = k_t0 + 5;
  ev.findings = {finding(FindingKind::missed, k_t0 + 2), finding(FindingKind::failed, k_t0, "a-1")};
  auto kept = store->save_evaluation("a-", all[0].revision, ev);
  REQUIRE(kept);
  CHECK(kept->size() == 2);
  CHECK_FALSE(store->save_evaluation("a-", all[0].revision, ev));  // overtaken
  CHECK_FALSE(store->save_evaluation("none", 0, ev));
  all = store->expectations();
  CHECK(all[0].state.evaluated_ms == k_t0 + 5);
  kept = store->save_evaluation("a-", all[0].revision, ev);
  REQUIRE(kept);
  CHECK(kept->empty());  // found already
  CHECK(store->findings("a-", true, 10).size() == 2);

  // A success that started at +1 resolves what is about no later (the failure at +0), and is
  // kept; one that resolves nothing is not.
  Evaluation ok;
  ok.findings = {finding(FindingKind::recovered, k_t0 + 1, "a-2"),
                 finding(FindingKind::recovered, k_t0 + 1, "a-3")};
  for (ScheduleFinding& f : ok.findings) f.found_ms = k_t0 + 10;
  kept = store->save_evaluation("a-", store->expectations()[0].revision, ok);
  REQUIRE(kept);
  REQUIRE(kept->size() == 1);
  CHECK((*kept)[0].key == "a-2");
  auto open = store->findings("a-", true, 10);  // the missed due time at +2, and the recovery
  REQUIRE(open.size() == 2);
  const auto every_one = store->findings("a-", false, 10);
  REQUIRE(every_one.size() == 3);
  CHECK(every_one[0].kind == FindingKind::recovered);  // newest first
  CHECK(every_one[2].kind == FindingKind::failed);
  CHECK(every_one[2].resolved);

  // Replacing starts afresh: state and findings go.
  store->put_expectation(every("a-", 4000, k_t0 + 100));
  all = store->expectations();
  CHECK(all[0].expectation.every_ms == 4000);
  CHECK(all[0].state.evaluated_ms == 0);
  CHECK(store->findings("a-", false, 10).empty());
  CHECK(store->remove_expectation("a-"));
  CHECK_FALSE(store->remove_expectation("a-"));
  CHECK(store->expectations().size() == 1);
}

TEMPLATE_TEST_CASE("store contract: the history is read by start time, for a prefix or a glob",
                   "[store][contract][schedule]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  for (int i = 0; i < 5; ++i) {
    const std::string key = (i % 2 ? "job-b" : "job-a") + std::to_string(i);
    REQUIRE(store->claim(request(key, k_t0 + i * 10), k_alive).attempt == 1);
    REQUIRE(store->finish(key, 1, outcome(Status::succeeded, 0, k_t0 + i * 10 + 1)));
  }
  REQUIRE(store->claim(request("other", k_t0 + 15), k_alive).attempt == 1);
  const KeyPattern prefix("job-");
  CHECK(keys(store->attempts_started(prefix, 0, "", 0, k_t0 + 1000, 100)) ==
        std::vector<std::string>{"job-a0#1", "job-b1#1", "job-a2#1", "job-b3#1", "job-a4#1"});
  // A page at a time, from where the last one ended; the bound before is exclusive.
  auto first = store->attempts_started(prefix, 0, "", 0, k_t0 + 1000, 2);
  REQUIRE(first.size() == 2);
  CHECK(keys(store->attempts_started(prefix, first[1].started_ms, first[1].key, first[1].number,
                                     k_t0 + 40, 10)) ==
        std::vector<std::string>{"job-a2#1", "job-b3#1"});
  // A glob: its head read in the store, the rest matched; a page counts what matched.
  CHECK(keys(store->attempts_started(KeyPattern("job-b*"), 0, "", 0, k_t0 + 1000, 1)) ==
        std::vector<std::string>{"job-b1#1"});
  CHECK(keys(store->attempts_started(KeyPattern("*4"), 0, "", 0, k_t0 + 1000, 10)) ==
        std::vector<std::string>{"job-a4#1"});
  const auto facts = store->attempts_started(KeyPattern("job-a4"), 0, "", 0, k_t0 + 1000, 10);
  REQUIRE(facts.size() == 1);
  CHECK(facts[0].outcome == Status::succeeded);
  CHECK(facts[0].exit_code == 0);
  CHECK(facts[0].started_ms == k_t0 + 40);
}

TEMPLATE_TEST_CASE("store contract: a check finds a missed run, a failure, then the recovery",
                   "[store][contract][schedule]", IDEM_CONTRACT_BACKENDS) {
  TestType backend;
  auto store = backend.open();
  store->put_expectation(every("nightly-", 10000, k_t0));
  // Nothing ran: due at +10 s, missed once its second of grace is over (and the settle time).
  auto check = idem::engine::check_expectations(*store, k_t0 + 9000);
  CHECK(check.found.empty());
  CHECK(check.wake_ms > k_t0 + 9000);
  check = idem::engine::check_expectations(*store, k_t0 + 12500);
  REQUIRE(check.found.size() == 1);
  CHECK(check.found[0].kind == FindingKind::missed);
  CHECK(idem::engine::check_expectations(*store, k_t0 + 13000).found.empty());
  // A failed run: found once; then a success recovers both.
  REQUIRE(store->claim(request("nightly-1", k_t0 + 14000), k_alive).attempt == 1);
  REQUIRE(store->finish("nightly-1", 1, outcome(Status::failed, 2, k_t0 + 14500)));
  check = idem::engine::check_expectations(*store, k_t0 + 16000);
  REQUIRE(check.found.size() == 1);
  CHECK(check.found[0].kind == FindingKind::failed);
  CHECK(check.found[0].detail == "nightly-1 attempt 1 failed (exit 2)");
  CHECK(store->findings("nightly-", true, 10).size() == 2);
  REQUIRE(store->claim(request("nightly-2", k_t0 + 17000), k_alive).attempt == 1);
  check = idem::engine::check_expectations(*store, k_t0 + 18500);
  CHECK(check.found.empty());  // still running
  REQUIRE(store->finish("nightly-2", 1, outcome(Status::succeeded, 0, k_t0 + 19000)));
  check = idem::engine::check_expectations(*store, k_t0 + 20000);
  REQUIRE(check.found.size() == 1);
  CHECK(check.found[0].kind == FindingKind::recovered);
  CHECK(store->findings("nightly-", true, 10).size() == 1);
}

}  // namespace unit_store_contract_schedule
