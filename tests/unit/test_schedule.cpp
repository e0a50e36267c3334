// Schedules (SPEC §11, core/schedule.hpp) on simulated time: the evaluation reads its facts from
// memory and is run as a daemon runs it (every minute, and when a window closes). The long case
// runs 20 schedules over 400 days in three time zones, through their daylight-saving changes,
// against slots worked out independently, minute by minute, from the zone's offsets.
#include <algorithm>
#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/schedule.hpp"
#include "util/cron.hpp"
#include "util/time_zone.hpp"

namespace unit_schedule {

using idem::core::AttemptFact;
using idem::core::Evaluation;
using idem::core::Expectation;
using idem::core::FindingKind;
using idem::core::KeyPattern;
using idem::core::Schedule;
using idem::core::ScheduleFinding;
using idem::core::ScheduleState;
using idem::core::Status;

constexpr int64_t k_minute = 60 * 1000;
constexpr int64_t k_hour = 60 * k_minute;
constexpr int64_t k_day = 24 * k_hour;

// A run as the simulated world makes it: a real attempt, started, then ended.
struct Run {
  std::string key;
  int64_t number = 1;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  Status outcome = Status::succeeded;
};

// The history as a store would answer at `now`: what started before then, ended or not.
class MemoryFacts : public idem::core::ScheduleFacts {
 public:
  void add(Run r) { runs_.push_back(std::move(r)); }
  void sort() {
    std::sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) {
      return std::tie(a.started_ms, a.key, a.number) < std::tie(b.started_ms, b.key, b.number);
    });
    events_.clear();
    for (size_t i = 0; i < runs_.size(); ++i) {
      by_key_[{runs_[i].key, runs_[i].number}] = i;
      events_.push_back(runs_[i].started_ms);
      events_.push_back(runs_[i].ended_ms);
    }
    std::sort(events_.begin(), events_.end());
  }
  int64_t now = 0;
  int reads = 0;
  // The first start or end after `t` (INT64_MAX: none).
  int64_t next_event(int64_t t) const {
    auto it = std::upper_bound(events_.begin(), events_.end(), t);
    return it == events_.end() ? INT64_MAX / 2 : *it;
  }

  std::vector<AttemptFact> started(const KeyPattern& pattern, int64_t after_ms,
                                   const std::string& after_key, int64_t after_number,
                                   int64_t before_ms, int64_t limit) override {
    ++reads;
    std::vector<AttemptFact> found;
    auto it =
        std::upper_bound(runs_.begin(), runs_.end(), std::tie(after_ms, after_key, after_number),
                         [](const auto& pos, const Run& r) {
                           return pos < std::tie(r.started_ms, r.key, r.number);
                         });
    for (; it != runs_.end() && int64_t(found.size()) < limit; ++it) {
      if (it->started_ms >= before_ms || it->started_ms > now) break;
      if (pattern.matches(it->key)) found.push_back(fact(*it));
    }
    return found;
  }
  std::optional<AttemptFact> attempt(const std::string& key, int64_t number) override {
    auto it = by_key_.find({key, number});
    if (it == by_key_.end() || runs_[it->second].started_ms > now) return std::nullopt;
    return fact(runs_[it->second]);
  }
  std::vector<AttemptFact> running(const KeyPattern& pattern, int64_t limit) override {
    std::vector<AttemptFact> found;
    // The runs that started in the last hour and have not ended (the simulated runs are short).
    auto it = std::lower_bound(runs_.begin(), runs_.end(), now - k_hour,
                               [](const Run& r, int64_t t) { return r.started_ms < t; });
    for (; it != runs_.end() && it->started_ms <= now && int64_t(found.size()) < limit; ++it)
      if (it->ended_ms > now && pattern.matches(it->key)) found.push_back(fact(*it));
    return found;
  }

 private:
  AttemptFact fact(const Run& r) const {
    AttemptFact a{r.key, r.number, r.started_ms, 0, Status::running, std::nullopt, std::nullopt};
    if (r.ended_ms <= now) {
      a.ended_ms = r.ended_ms;
      a.outcome = r.outcome;
      if (r.outcome == Status::failed) a.exit_code = 3;
    }
    return a;
  }
  std::vector<Run> runs_;
  std::vector<int64_t> events_;
  std::map<std::pair<std::string, int64_t>, size_t> by_key_;
};

// Evaluates as a daemon does: at every minute and at each evaluation's wake time, from `from` to
// `to`; the findings each evaluation made, as a store would keep them (each identity once).
struct Watch {
  const Schedule& schedule;
  MemoryFacts& facts;
  ScheduleState state;
  std::deque<ScheduleFinding> found;  // (a deque: `open` points into it)
  std::vector<ScheduleFinding*> open;
  std::set<std::tuple<int, int64_t, std::string, int64_t>> identities;
  int duplicates = 0;

  void at(int64_t now) {
    facts.now = now;
    Evaluation ev = idem::core::evaluate(schedule, state, facts, now);
    state = ev.state;
    wake = ev.wake_ms;
    // As a store keeps them: each identity once; a recovery only when it closes a finding.
    for (ScheduleFinding& f : ev.findings)
      if (f.kind != FindingKind::recovered) keep(std::move(f));
    for (ScheduleFinding& f : ev.findings) {
      if (f.kind != FindingKind::recovered) continue;
      size_t closed = 0;
      for (ScheduleFinding* o : open)
        if (!o->resolved && o->at_ms < f.at_ms) o->resolved = ++closed > 0;
      if (closed) keep(std::move(f));
    }
    open.erase(std::remove_if(open.begin(), open.end(),
                              [](const ScheduleFinding* o) { return o->resolved; }),
               open.end());
  }
  void keep(ScheduleFinding f) {
    if (!identities.insert({int(f.kind), f.at_ms, f.key, f.attempt}).second) {
      ++duplicates;
      return;
    }
    found.push_back(std::move(f));
    if (found.back().kind != FindingKind::recovered) open.push_back(&found.back());
  }
  // Every minute from `from` to `to`; with `every_nth` > 1, one minute in that many, plus the
  // wake times and a second after each start and end (a simulation of 400 days).
  void run(int64_t from, int64_t to, int every_nth = 1) {
    for (int64_t now = from; now <= to;) {
      at(now);
      int64_t next = (now / k_minute + every_nth) / every_nth * every_nth * k_minute;
      if (every_nth > 1) next = std::min(next, facts.next_event(now) + 1000);
      now = std::min(next, std::max(wake, now + 1));
    }
  }
  int64_t wake = 0;
  std::vector<const ScheduleFinding*> of(FindingKind kind) const {
    std::vector<const ScheduleFinding*> r;
    for (const ScheduleFinding& f : found)
      if (f.kind == kind) r.push_back(&f);
    return r;
  }
};

Expectation every(std::string pattern, int64_t every_ms, int64_t created_ms) {
  Expectation e;
  e.pattern = std::move(pattern);
  e.every_ms = every_ms;
  e.created_ms = created_ms;
  return e;
}

Expectation cron(std::string pattern, std::string line, std::string tz, int64_t created_ms) {
  Expectation e;
  e.pattern = std::move(pattern);
  e.cron = std::move(line);
  e.tz = std::move(tz);
  e.created_ms = created_ms;
  return e;
}

// 2026-01-01T00:00:00Z
constexpr int64_t k_t0 = 1767225600000;

TEST_CASE("schedule: a key pattern is a prefix, or a glob with a literal head", "[schedule]") {
  KeyPattern prefix("backup-");
  CHECK_FALSE(prefix.is_glob());
  CHECK(prefix.matches("backup-2026-12-06"));
  CHECK_FALSE(prefix.matches("backup"));
  KeyPattern glob("hook:github/*-push");
  CHECK(glob.is_glob());
  CHECK(glob.head() == "hook:github/");
  CHECK(glob.matches("hook:github/a/b-push"));
  CHECK_FALSE(glob.matches("hook:github/a-pull"));
  CHECK(KeyPattern("job-[0-9]").matches("job-7"));
  CHECK_FALSE(KeyPattern("job-[0-9]").matches("job-x"));
}

TEST_CASE("schedule: --every finds a missed due time once, then recovered", "[schedule]") {
  const Expectation e = every("job-", 10 * k_minute, k_t0);
  const Schedule schedule(e);
  MemoryFacts facts;
  // Runs at 10, 20, (none at 30), 40, 50 minutes; the one at 40 failed.
  for (int i : {1, 2, 4, 5}) {
    Run r{"job-" + std::to_string(i), 1, k_t0 + i * 10 * k_minute + 5000,
          k_t0 + i * 10 * k_minute + 9000, i == 4 ? Status::failed : Status::succeeded};
    facts.add(r);
  }
  facts.sort();
  Watch w{schedule, facts, {}, {}, {}, {}, 0};
  w.run(k_t0, k_t0 + 55 * k_minute);
  REQUIRE(w.of(FindingKind::missed).size() == 1);
  const ScheduleFinding& missed = *w.of(FindingKind::missed)[0];
  // Due 10 minutes after the run at 20m05s; found once its grace (1m) is over.
  CHECK(missed.at_ms == k_t0 + 30 * k_minute + 5000);
  CHECK(missed.found_ms >= missed.at_ms + e.grace_ms);
  CHECK(missed.found_ms <= missed.at_ms + e.grace_ms + k_minute);
  REQUIRE(w.of(FindingKind::failed).size() == 1);
  CHECK(w.of(FindingKind::failed)[0]->key == "job-4");
  CHECK(w.of(FindingKind::failed)[0]->detail == "job-4 attempt 1 failed (exit 3)");
  REQUIRE(w.of(FindingKind::recovered).size() == 1);
  CHECK(w.of(FindingKind::recovered)[0]->key == "job-5");
  CHECK(w.duplicates == 0);
  CHECK(w.found.size() == 3);
}

TEST_CASE("schedule: an attempt overtaken while it runs is still found failed", "[schedule]") {
  const Expectation e = every("hook-", k_hour, k_t0);
  const Schedule schedule(e);
  MemoryFacts facts;
  // A long delivery, overtaken by a short one that succeeds first; the long one then fails.
  facts.add(Run{"hook-1", 1, k_t0 + 1000, k_t0 + 10 * k_minute, Status::failed});
  facts.add(Run{"hook-2", 1, k_t0 + 2 * k_minute, k_t0 + 2 * k_minute + 1000});
  facts.sort();
  Watch w{schedule, facts, {}, {}, {}, {}, 0};
  w.run(k_t0, k_t0 + 20 * k_minute);
  REQUIRE(w.of(FindingKind::failed).size() == 1);
  CHECK(w.of(FindingKind::failed)[0]->key == "hook-1");
  CHECK(w.state.overtaken.empty());
}

TEST_CASE("schedule: a late start does not hide the miss of its due time", "[schedule]") {
  const Expectation e = cron("late-", "0 * * * *", "UTC", k_t0);
  const Schedule schedule(e);
  MemoryFacts facts;
  facts.add(Run{"late-1", 1, k_t0 + k_hour + 10000, k_t0 + k_hour + 20000});  // on time
  facts.add(Run{"late-2", 1, k_t0 + 2 * k_hour + 5 * k_minute, k_t0 + 2 * k_hour + 6 * k_minute});
  facts.sort();
  Watch w{schedule, facts, {}, {}, {}, {}, 0};
  // Evaluated only after the late start (a daemon that was stopped meanwhile).
  w.at(k_t0 + 30 * k_minute);
  w.at(k_t0 + 2 * k_hour + 10 * k_minute);
  REQUIRE(w.of(FindingKind::missed).size() == 1);
  CHECK(w.of(FindingKind::missed)[0]->at_ms == k_t0 + 2 * k_hour);
}

TEST_CASE("schedule: too-often counts real attempts of a period; overrun while it runs",
          "[schedule]") {
  Expectation e = cron("rep-", "0 3 * * *", "UTC", k_t0);
  e.at_most = 1;
  e.max_runtime_ms = 30 * k_minute;
  const Schedule schedule(e);
  MemoryFacts facts;
  // Day 1: one run. Day 2: two real runs (the second a re-run), the first one long.
  facts.add(Run{"rep-1", 1, k_t0 + 3 * k_hour + 1000, k_t0 + 3 * k_hour + 2000});
  facts.add(Run{"rep-2", 1, k_t0 + k_day + 3 * k_hour + 1000, k_t0 + k_day + 4 * k_hour});
  facts.add(Run{"rep-2", 2, k_t0 + k_day + 5 * k_hour, k_t0 + k_day + 5 * k_hour + 1000});
  facts.sort();
  Watch w{schedule, facts, {}, {}, {}, {}, 0};
  w.run(k_t0, k_t0 + k_day + 3 * k_hour + 20 * k_minute);
  CHECK(w.of(FindingKind::overrun).empty());
  w.run(k_t0 + k_day + 3 * k_hour + 21 * k_minute, k_t0 + 2 * k_day);
  REQUIRE(w.of(FindingKind::overrun).size() == 1);
  const ScheduleFinding& overrun = *w.of(FindingKind::overrun)[0];
  CHECK(overrun.key == "rep-2");
  // Found while it still ran, within a minute of passing its bound.
  CHECK(overrun.found_ms >= k_t0 + k_day + 3 * k_hour + 1000 + e.max_runtime_ms);
  CHECK(overrun.found_ms <= k_t0 + k_day + 3 * k_hour + 1000 + e.max_runtime_ms + k_minute);
  REQUIRE(w.of(FindingKind::too_often).size() == 1);
  // About the attempt one too many: the re-run at 05:00.
  CHECK(w.of(FindingKind::too_often)[0]->at_ms == k_t0 + k_day + 5 * k_hour);
  CHECK(w.of(FindingKind::too_often)[0]->attempt == 2);
  CHECK(w.of(FindingKind::too_often)[0]->detail ==
        "2 real attempts in the period from 2026-01-02T03:00:00Z (at most 1), the last rep-2 "
        "attempt 2");
  // A success closes the findings about a time before its start: the re-run's success closes
  // the overrun of the run before it, not the too-often it is itself; the next day's run does.
  REQUIRE(w.of(FindingKind::recovered).size() == 1);
  CHECK(w.of(FindingKind::recovered)[0]->key == "rep-2");
  CHECK(w.open.size() == 1);
  facts.add(
      Run{"rep-3", 1, k_t0 + 2 * k_day + 3 * k_hour + 1000, k_t0 + 2 * k_day + 3 * k_hour + 2000});
  facts.sort();
  w.run(k_t0 + 2 * k_day, k_t0 + 3 * k_day);
  CHECK(w.of(FindingKind::recovered).size() == 2);
  CHECK(w.open.empty());
  CHECK(w.of(FindingKind::missed).empty());
  CHECK(w.duplicates == 0);
}

TEST_CASE("schedule: an exported expectation reads back; a bad one is refused", "[schedule]") {
  Expectation e = cron("nightly-", "0 3 * * *", "Europe/Paris", k_t0);
  e.max_runtime_ms = 7200000;
  e.at_most = 2;
  const Expectation back = idem::core::expectation_from_json(idem::core::expectation_json(e), 7);
  CHECK(back.pattern == e.pattern);
  CHECK(back.cron == e.cron);
  CHECK(back.tz == e.tz);
  CHECK(back.grace_ms == e.grace_ms);
  CHECK(back.max_runtime_ms == 7200000);
  CHECK(back.at_most == 2);
  CHECK(back.created_ms == 7);
  for (const char* bad : {R"([])", R"({"every_ms": 1000})",
                          R"({"pattern": "a", "every_ms": 1000, "cron": "* * * * *"})",
                          R"({"pattern": "a"})", R"({"pattern": "a", "every_ms": -5})",
                          R"({"pattern": 3})", R"({"pattern": "a\u0001", "every_ms": 1000})",
                          R"({"pattern": "a", "every_ms": 1000, "grace_ms": 0})",
                          R"({"pattern": "a", "every_ms": 99999999999999999})"}) {
    INFO(bad);
    CHECK_THROWS_AS(idem::core::expectation_from_json(nlohmann::json::parse(bad), 0),
                    std::invalid_argument);
  }
}

TEST_CASE("schedule: the state survives being kept as text", "[schedule]") {
  ScheduleState st;
  st.next_due_ms = 123;
  st.due_met = true;
  st.scanned_key = "k\"ey";
  st.last_outcome = Status::failed;
  const ScheduleState back =
      idem::core::schedule_state_from_text(idem::core::schedule_state_text(st));
  CHECK(back.next_due_ms == 123);
  CHECK(back.due_met);
  CHECK(back.scanned_key == "k\"ey");
  CHECK(back.last_outcome == Status::failed);
  CHECK(idem::core::schedule_state_from_text("").evaluated_ms == 0);
  CHECK(idem::core::schedule_state_from_text("{\"next_due\": \"x\"}").next_due_ms == 0);
}

// The due times of a cron line in a zone, worked out minute by minute from the zone's offsets
// (not through util::next_due): a local time that occurs once is due then; a fixed-time job's
// local times skipped by a change forward are due once, at the change; of a local time that
// occurs twice, a fixed-time job is due at the first, a wildcard job at both.
std::vector<int64_t> reference_slots(const idem::util::CronSchedule& c,
                                     const idem::util::TimeZone& tz, int64_t from_ms,
                                     int64_t to_ms) {
  // Whether local second `l` (a whole minute) matches, its day's answer kept (the date's
  // arithmetic once a day, not once a minute).
  int64_t cached_day = INT64_MIN;
  bool day_ok = false;
  auto matches = [&](int64_t l) {
    const int64_t day = l >= 0 ? l / 86400 : -((-l + 86399) / 86400);
    if (day != cached_day) {
      cached_day = day;
      day_ok = c.day_matches(day);
    }
    const int64_t second = l - day * 86400;
    return day_ok && (c.hours >> (second / 3600) & 1u) != 0 &&
           (c.minutes >> (second / 60 % 60) & 1u) != 0;
  };
  std::vector<int64_t> slots;
  std::set<int64_t> seen_local;  // fixed-time: the local minutes already due (repeats)
  int64_t prev_offset = tz.offset_at(from_ms / 1000 - 60);
  // The zone's offset, looked up again only where the one in force ends.
  idem::util::TimeZone::Segment in_force = tz.segment_at(from_ms / 1000);
  for (int64_t s = from_ms / 1000 / 60 * 60 + 60; s < to_ms / 1000; s += 60) {
    if (s >= in_force.end || s < in_force.start) in_force = tz.segment_at(s);
    const int64_t offset = in_force.offset;
    if (offset > prev_offset && !c.wildcard()) {
      // The local minutes skipped since the last minute: due once, now, if any matches.
      for (int64_t l = s - 60 + prev_offset + 60; l < s + offset; l += 60)
        if (matches(l)) {
          slots.push_back(s * 1000);
          break;
        }
    }
    prev_offset = offset;
    const int64_t local = s + offset;
    if (!matches(local)) continue;
    if (!c.wildcard() && !seen_local.insert(local).second) continue;
    if (slots.empty() || slots.back() != s * 1000) slots.push_back(s * 1000);
  }
  return slots;
}

TEST_CASE("schedule: 20 schedules over 400 days in 3 zones, through daylight-saving changes",
          "[schedule][simulation]") {
  const int64_t start = k_t0;  // 2026-01-01
  const int64_t end = start + 400 * k_day;
  struct Spec {
    std::string line;  // cron line, or empty for --every
    std::string tz;
    int64_t every_ms = 0;
  };
  const std::vector<Spec> specs = {
      {"30 2 * * *", "America/New_York"},  // in the skipped hour once a year
      {"30 1 * * *", "America/New_York"},  // in the repeated hour once a year
      {"*/15 * * * *", "America/New_York"},
      {"0 * * * *", "America/New_York"},
      {"0 9 * * 1-5", "America/New_York"},
      {"0,30 2 * * *", "America/New_York"},  // both skipped times collapse into one due time
      {"30 2 * * *", "Europe/Berlin"},
      {"15 2 * * *", "Europe/Berlin"},  // 02:15 repeats in October
      {"*/20 * * * *", "Europe/Berlin"},
      {"0 3 1 * *", "Europe/Berlin"},
      {"@daily", "Europe/Berlin"},
      {"45 2 * * sun", "Australia/Sydney"},
      {"0 */6 * * *", "Australia/Sydney"},
      {"30 2 * * *", "Australia/Sydney"},
      {"@hourly", "Australia/Sydney"},
      {"0 12 15 * *", "Australia/Sydney"},
      {"", "", 10 * k_minute},
      {"", "", k_hour},
      {"", "", 6 * k_hour},
      {"", "", k_day},
  };
  REQUIRE(specs.size() == 20);
  std::mt19937_64 random(20261206);
  int changes_seen = 0;
  for (const std::string tz : {"America/New_York", "Europe/Berlin", "Australia/Sydney"}) {
    std::string error;
    auto zone = idem::util::load_time_zone(tz, &error);
    REQUIRE(zone);
    for (int64_t s = start / 1000; s < end / 1000; s += 3600)
      if (zone->offset_at(s) != zone->offset_at(s + 3600)) ++changes_seen;
  }
  CHECK(changes_seen >= 6);

  int64_t total_slots = 0, total_missed = 0, total_failed = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const Spec& spec = specs[i];
    const std::string prefix = "job" + std::to_string(i) + "-";
    Expectation e = spec.line.empty() ? every(prefix, spec.every_ms, start)
                                      : cron(prefix, spec.line, spec.tz, start);
    e.grace_ms = 5 * k_minute;
    e.at_most = 1;
    e.max_runtime_ms = 2 * k_minute;
    const Schedule schedule(e);
    // The world: a run for each due time, a few seconds to a minute late, lasting under a
    // minute; 3% of them never happen, 5% fail.
    std::vector<int64_t> slots;
    if (spec.line.empty()) {
      for (int64_t t = start + spec.every_ms; t < end; t += spec.every_ms) slots.push_back(t);
    } else {
      std::string error;
      auto c = idem::util::parse_cron(spec.line, &error);
      auto zone = idem::util::load_time_zone(spec.tz, &error);
      REQUIRE(c);
      REQUIRE(zone);
      slots = reference_slots(*c, *zone, start + 1, end);
    }
    MemoryFacts facts;
    std::set<int64_t> skipped;
    std::set<std::string> failed;
    std::uniform_int_distribution<int64_t> delay(1000, spec.line.empty() ? 60000 : 90000);
    std::uniform_int_distribution<int> percent(0, 99);
    int64_t n = 0;
    int64_t last_start = start;
    for (int64_t t : slots) {
      ++n;
      if (percent(random) < 3) {
        skipped.insert(t);
        continue;
      }
      // --every: the job runs every D of its own clock; the due time counts from its last start.
      const int64_t started = t + delay(random);
      const Status outcome = percent(random) < 5 ? Status::failed : Status::succeeded;
      const std::string key = prefix + std::to_string(n);
      if (outcome == Status::failed) failed.insert(key);
      facts.add(Run{key, 1, started, started + delay(random) / 2, outcome});
      last_start = started;
    }
    (void)last_start;
    facts.sort();
    Watch w{schedule, facts, {}, {}, {}, {}, 0};
    // Every hour, the wake times (each window's close) and a second after each run's start and
    // end: what an evaluation every minute would find, with far fewer looks.
    w.run(start, end + k_hour, 60);
    INFO("schedule " << i << ": " << (spec.line.empty() ? "every" : spec.line) << " " << spec.tz);
    CHECK(w.duplicates == 0);
    CHECK(w.of(FindingKind::overrun).empty());
    CHECK(w.of(FindingKind::too_often).empty());
    // Every missed due time once, within its grace and a minute; nothing else missed.
    std::set<int64_t> reported;
    for (const ScheduleFinding* f : w.of(FindingKind::missed)) {
      if (f->at_ms >= end) continue;  // the world ends there
      reported.insert(f->at_ms);
      CHECK(f->found_ms >= f->at_ms + e.grace_ms);
      CHECK(f->found_ms <= f->at_ms + e.grace_ms + k_minute);
    }
    if (spec.line.empty()) {
      // --every: a skipped run is missed at the last start + D, so compare counts and that each
      // report falls on a skipped run's due time (within the previous run's delay).
      CHECK(reported.size() == skipped.size());
      for (int64_t at : reported) {
        auto it = skipped.upper_bound(at);
        CHECK((it != skipped.begin() && at - *std::prev(it) <= 90000));
      }
    } else {
      for (int64_t at : reported)
        if (!skipped.count(at)) UNSCOPED_INFO("reported, not skipped: " << at);
      for (int64_t at : skipped)
        if (!reported.count(at)) UNSCOPED_INFO("skipped, not reported: " << at);
      CHECK(reported == skipped);
    }

    // Each failed run is found (it is the latest until the next one starts a slot later).
    std::set<std::string> found_failed;
    for (const ScheduleFinding* f : w.of(FindingKind::failed)) found_failed.insert(f->key);
    CHECK(found_failed == failed);
    total_slots += int64_t(slots.size());
    total_missed += int64_t(skipped.size());
    total_failed += int64_t(failed.size());
  }
  CHECK(total_slots > 100000);
  CHECK(total_missed > 1000);
  CHECK(total_failed > 1000);
}

}  // namespace unit_schedule
