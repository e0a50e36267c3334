#pragma once
// Schedules (SPEC §11): what a family of keys should do (an expectation), and what an evaluation
// of its attempt history finds (missed, failed, overrun, too-often, recovered). Pure: the store
// keeps expectations, their evaluation state and findings; the facts an evaluation reads come
// through ScheduleFacts, which the engine answers from the store and the tests from memory.
//
// Only real attempts count: a replay is no attempt and never reaches the history, so it can
// neither satisfy a due time nor make a job run "too often".
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/notify.hpp"
#include "core/record.hpp"
#include "util/cron.hpp"
#include "util/time_zone.hpp"

namespace idem::core {

// A family of keys: a prefix, or a glob (`*`, `?`, `[...]`, as the shell's, `*` matching '/'
// too) when it holds one of those. Its literal head (all of a prefix, a glob's text up to its
// first wildcard) bounds what the store reads.
class KeyPattern {
 public:
  explicit KeyPattern(std::string text);
  const std::string& text() const { return text_; }
  bool is_glob() const { return glob_; }
  // The literal head every matching key starts with.
  const std::string& head() const { return head_; }
  bool matches(std::string_view key) const;

 private:
  std::string text_;
  std::string head_;
  bool glob_ = false;
};

// The longest pattern `idem expect` takes (a key's own bound).
inline constexpr size_t k_max_pattern_bytes = 1024;
// How long after its due time a slot's real attempt may start, unless --grace says otherwise.
inline constexpr int64_t k_default_grace_ms = 60 * 1000;
// An evaluation reads attempts that started at least this long ago: a claim's start time is
// taken just before it commits, so one a little older may still be on its way.
inline constexpr int64_t k_schedule_settle_ms = 1000;
// At most this many new attempts are read per expectation and evaluation; the rest wait for the
// next one (which starts where this stopped).
inline constexpr int64_t k_schedule_scan_limit = 10000;
// At most this many running attempts of a family are looked at for overruns per evaluation.
inline constexpr int64_t k_schedule_running_limit = 1000;
// How many expectations a store holds at most.
inline constexpr int64_t k_max_expectations = 1000;

struct Expectation {
  std::string pattern;
  int64_t every_ms = 0;  // --every; 0 for a cron schedule
  std::string cron;      // --cron's text, as given; empty for --every
  std::string tz;        // the zone --cron reads its times in (a zone name); empty for --every
  int64_t grace_ms = k_default_grace_ms;
  int64_t max_runtime_ms = 0;  // 0: no bound
  int64_t at_most = 0;         // real attempts in one period at most; 0: no bound
  int64_t created_ms = 0;      // what is due counts from here

  // "every 2s" or "cron '0 3 * * *' in Europe/Paris".
  std::string schedule_text() const;
};

// Where an expectation's evaluation stands (kept with it in the store).
struct ScheduleState {
  // The next due time not yet judged; 0: none yet computed (a new expectation), or none left.
  int64_t next_due_ms = 0;
  bool due_met = false;  // a real attempt started within the next due time's window (cron)
  int64_t base_ms = 0;   // --every: the start (or due time) the next due time counts from
  // The new attempts read so far end here: attempts are read in (started, key, number) order.
  int64_t scanned_ms = 0;
  std::string scanned_key;
  int64_t scanned_number = 0;
  // too-often: the period the last read attempt fell in, and how many fell in it.
  int64_t period_ms = 0;
  int64_t period_count = 0;
  // The latest real attempt read (by start), and what was last known of it.
  std::string last_key;
  int64_t last_number = 0;
  int64_t last_started_ms = 0;
  int64_t last_ended_ms = 0;
  Status last_outcome = Status::running;
  bool last_told = false;  // its failure (or success after findings) has been found
  // overrun: the latest start of a running attempt found past --max-runtime (those that started
  // no later are found already).
  int64_t overrun_ms = 0;
  int64_t evaluated_ms = 0;
};

// The state as the store keeps it (JSON text), and back; a text it cannot read (empty: a new
// expectation) is a new state.
std::string schedule_state_text(const ScheduleState& state);
ScheduleState schedule_state_from_text(std::string_view text);

enum class FindingKind { missed, failed, overrun, too_often, recovered };
std::string_view to_string(FindingKind kind);
std::optional<FindingKind> finding_kind_from_string(std::string_view text);

struct ScheduleFinding {
  std::string pattern;
  FindingKind kind = FindingKind::missed;
  // What it is about: the due time (missed), the period's start (too-often), or the attempt's
  // start (failed, overrun, recovered). With kind, pattern, key and attempt: the finding's
  // identity, found once.
  int64_t at_ms = 0;
  std::string key;  // the attempt's (failed, overrun, recovered, too-often: the one too many)
  int64_t attempt = 0;
  std::string detail;  // the rest of its line
  int64_t found_ms = 0;
  bool resolved = false;  // a later success closed it
};

// One line of `idem check`: "missed backup-: no real attempt started within 1m of ...".
std::string schedule_finding_line(const ScheduleFinding& finding);
nlohmann::json schedule_finding_json(const ScheduleFinding& finding);
nlohmann::json expectation_json(const Expectation& expectation);
// An expectation as expectation_json wrote it (export), created at `created_ms`; throws
// std::invalid_argument naming what is wrong (a schedule that does not parse: UsageError).
Expectation expectation_from_json(const nlohmann::json& j, int64_t created_ms);

// The notify event of a finding: its kind's (failed and recovered are the attempts' own).
NotifyEvent notify_event_of(FindingKind kind);
// What the daemon's notify command for a finding reads on stdin: {"event", "time", "finding"
// (schedule_finding_json), "expectation" (expectation_json)}.
std::string finding_document(const ScheduleFinding& finding, const Expectation& expectation,
                             int64_t now_ms);
// The key a finding's notification runs under (one at a time per key): its attempt's key, or
// for a missed due time PATTERN@TIME.
std::string finding_notify_key(const ScheduleFinding& finding);

// A real attempt as an evaluation sees it.
struct AttemptFact {
  std::string key;
  int64_t number = 0;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  Status outcome = Status::running;
  std::optional<int> exit_code;
  std::optional<int> http_status;
};

class ScheduleFacts {
 public:
  virtual ~ScheduleFacts() = default;
  // The real attempts of keys matching `pattern` that started before `before_ms`, after the
  // position (after_ms, after_key, after_number) in (started, key, number) order: at most `limit`,
  // in that order.
  virtual std::vector<AttemptFact> started(const KeyPattern& pattern, int64_t after_ms,
                                           const std::string& after_key, int64_t after_number,
                                           int64_t before_ms, int64_t limit) = 0;
  // Attempt `number` of `key` as it stands; nullopt when it is no longer kept.
  virtual std::optional<AttemptFact> attempt(const std::string& key, int64_t number) = 0;
  // Attempts of keys matching `pattern` running now, at most `limit`.
  virtual std::vector<AttemptFact> running(const KeyPattern& pattern, int64_t limit) = 0;
};

// What an expectation needs to be evaluated: its schedule, parsed, and its zone, loaded.
class Schedule {
 public:
  // Throws UsageError for a bad cron expression or zone (a stored one that no longer loads
  // too: a zone removed from the system).
  explicit Schedule(const Expectation& expectation);
  const Expectation& expectation() const { return expectation_; }
  // The first due time after `after_ms`; nullopt when there is none (a cron date that never
  // comes).
  std::optional<int64_t> next_due(int64_t after_ms) const;
  // The start of the period `at_ms` falls in (too-often counts per period).
  int64_t period_of(int64_t at_ms) const;
  // When the window of due time `due_ms` closes: its grace, or the next due time if sooner.
  int64_t window_end(int64_t due_ms) const;
  // A time in the schedule's zone for a line: "2026-12-06T03:00:00+01:00".
  std::string local_time(int64_t unix_ms) const;
  // The next due time as the page shows it, from the state (nullopt: none).
  std::optional<int64_t> upcoming(const ScheduleState& state) const;

 private:
  Expectation expectation_;
  std::optional<util::CronSchedule> cron_;
  util::TimeZone zone_;
};

struct Evaluation {
  ScheduleState state;
  // Candidates: the store keeps those it had not found yet. A `recovered` one is a success that
  // started at its at_ms: it closes the open findings about no later than that, and is kept only
  // when it closed one.
  std::vector<ScheduleFinding> findings;
  // When the next evaluation has something to judge (a due time's window closing, or an
  // overrun's bound passing), so a daemon can wake up then rather than at its next minute.
  int64_t wake_ms = 0;
};

// Evaluates `schedule` at `now_ms` from where `state` stands, reading what it needs of `facts`.
Evaluation evaluate(const Schedule& schedule, const ScheduleState& state, ScheduleFacts& facts,
                    int64_t now_ms);

}  // namespace idem::core
