#include "core/schedule.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/key.hpp"
#include "util/clock.hpp"

namespace idem::core {

namespace {

bool is_glob_char(char c) { return c == '*' || c == '?' || c == '['; }

// "exit 3", "HTTP 502", "abandoned": how a failed attempt ended, for its finding's line.
std::string how_it_ended(const AttemptFact& a) {
  if (a.outcome == Status::abandoned) return "was abandoned (its owner died)";
  if (a.http_status) return "failed (HTTP " + std::to_string(*a.http_status) + ")";
  if (a.exit_code) return "failed (exit " + std::to_string(*a.exit_code) + ")";
  return "failed";
}

bool ended_badly(Status s) { return s == Status::failed || s == Status::abandoned; }

std::string attempt_name(const std::string& key, int64_t number) {
  return key + " attempt " + std::to_string(number);
}

}  // namespace

KeyPattern::KeyPattern(std::string text) : text_(std::move(text)) {
  auto wild = std::find_if(text_.begin(), text_.end(), is_glob_char);
  glob_ = wild != text_.end();
  head_.assign(text_.begin(), wild);
}

bool KeyPattern::matches(std::string_view key) const {
  if (key.substr(0, head_.size()) != head_) return false;
  if (!glob_) return true;
  // A key holds no NUL (core::Key), so it can be handed to fnmatch as a C string.
  std::string k(key);
  return fnmatch(text_.c_str(), k.c_str(), 0) == 0;
}

std::string Expectation::schedule_text() const {
  if (cron.empty()) return "every " + util::human_duration(every_ms);
  return "cron '" + cron + "' in " + tz;
}

std::string schedule_state_text(const ScheduleState& st) {
  nlohmann::json j = {{"next_due", st.next_due_ms},
                      {"due_met", st.due_met},
                      {"base", st.base_ms},
                      {"scanned", st.scanned_ms},
                      {"scanned_key", st.scanned_key},
                      {"scanned_number", st.scanned_number},
                      {"period", st.period_ms},
                      {"period_count", st.period_count},
                      {"last_key", st.last_key},
                      {"last_number", st.last_number},
                      {"last_started", st.last_started_ms},
                      {"last_ended", st.last_ended_ms},
                      {"last_outcome", to_string(st.last_outcome)},
                      {"last_told", st.last_told},
                      {"overrun", st.overrun_ms},
                      {"evaluated", st.evaluated_ms}};
  return j.dump();
}

ScheduleState schedule_state_from_text(std::string_view text) {
  ScheduleState st;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return st;
  try {
    st.next_due_ms = j.value("next_due", int64_t(0));
    st.due_met = j.value("due_met", false);
    st.base_ms = j.value("base", int64_t(0));
    st.scanned_ms = j.value("scanned", int64_t(0));
    st.scanned_key = j.value("scanned_key", std::string());
    st.scanned_number = j.value("scanned_number", int64_t(0));
    st.period_ms = j.value("period", int64_t(0));
    st.period_count = j.value("period_count", int64_t(0));
    st.last_key = j.value("last_key", std::string());
    st.last_number = j.value("last_number", int64_t(0));
    st.last_started_ms = j.value("last_started", int64_t(0));
    st.last_ended_ms = j.value("last_ended", int64_t(0));
    st.last_outcome = status_from_string(j.value("last_outcome", std::string("running")))
                          .value_or(Status::running);
    st.last_told = j.value("last_told", false);
    st.overrun_ms = j.value("overrun", int64_t(0));
    st.evaluated_ms = j.value("evaluated", int64_t(0));
  } catch (const nlohmann::json::exception&) {
    return ScheduleState{};
  }
  return st;
}

std::string_view to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::missed:
      return "missed";
    case FindingKind::failed:
      return "failed";
    case FindingKind::overrun:
      return "overrun";
    case FindingKind::too_often:
      return "too-often";
    case FindingKind::recovered:
      return "recovered";
  }
  return "missed";
}

std::optional<FindingKind> finding_kind_from_string(std::string_view text) {
  for (FindingKind k : {FindingKind::missed, FindingKind::failed, FindingKind::overrun,
                        FindingKind::too_often, FindingKind::recovered})
    if (to_string(k) == text) return k;
  return std::nullopt;
}

std::string schedule_finding_line(const ScheduleFinding& f) {
  return std::string(to_string(f.kind)) + " " + f.pattern + ": " + f.detail;
}

nlohmann::json schedule_finding_json(const ScheduleFinding& f) {
  nlohmann::json j = {{"kind", to_string(f.kind)},
                      {"pattern", f.pattern},
                      {"at", util::iso8601_utc(f.at_ms)},
                      {"detail", f.detail},
                      {"found_at", util::iso8601_utc(f.found_ms)},
                      {"resolved", f.resolved}};
  if (!f.key.empty()) {
    j["key"] = f.key;
    j["attempt"] = f.attempt;
  }
  return j;
}

NotifyEvent notify_event_of(FindingKind kind) {
  switch (kind) {
    case FindingKind::missed:
      return NotifyEvent::missed;
    case FindingKind::failed:
      return NotifyEvent::failed;
    case FindingKind::overrun:
      return NotifyEvent::overrun;
    case FindingKind::too_often:
      return NotifyEvent::too_often;
    case FindingKind::recovered:
      return NotifyEvent::recovered;
  }
  return NotifyEvent::missed;
}

std::string finding_document(const ScheduleFinding& finding, const Expectation& expectation,
                             int64_t now_ms) {
  nlohmann::json doc = {{"event", to_string(finding.kind)},
                        {"time", util::iso8601_utc(now_ms)},
                        {"finding", schedule_finding_json(finding)},
                        {"expectation", expectation_json(expectation)}};
  return doc.dump();
}

std::string finding_notify_key(const ScheduleFinding& finding) {
  if (!finding.key.empty()) return finding.key;
  return finding.pattern + "@" + util::iso8601_utc(finding.at_ms);
}

nlohmann::json expectation_json(const Expectation& e) {
  nlohmann::json j = {{"pattern", e.pattern},
                      {"grace_ms", e.grace_ms},
                      {"max_runtime_ms", e.max_runtime_ms},
                      {"at_most", e.at_most},
                      {"created_at", util::iso8601_utc(e.created_ms)}};
  if (e.cron.empty()) {
    j["every_ms"] = e.every_ms;
  } else {
    j["cron"] = e.cron;
    j["tz"] = e.tz;
  }
  return j;
}

Expectation expectation_from_json(const nlohmann::json& j, int64_t created_ms) {
  if (!j.is_object()) throw std::invalid_argument("an expectation is not an object");
  auto text = [&](const char* name) {
    const auto it = j.find(name);
    if (it == j.end()) return std::string();
    if (!it->is_string())
      throw std::invalid_argument(std::string("expectation: \"") + name + "\" is not a string");
    return it->get<std::string>();
  };
  auto number = [&](const char* name, int64_t fallback) {
    const auto it = j.find(name);
    if (it == j.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      throw std::invalid_argument(std::string("expectation: \"") + name +
                                  "\" is not a whole number");
    return it->get<int64_t>();
  };
  Expectation e;
  e.pattern = text("pattern");
  if (e.pattern.empty()) throw std::invalid_argument("expectation: no \"pattern\"");
  if (std::optional<std::string> problem = key_problem(e.pattern))
    throw std::invalid_argument("expectation: \"pattern\": " + *problem);
  e.every_ms = number("every_ms", 0);
  e.cron = text("cron");
  e.tz = text("tz");
  e.grace_ms = number("grace_ms", k_default_grace_ms);
  e.max_runtime_ms = number("max_runtime_ms", 0);
  e.at_most = number("at_most", 0);
  e.created_ms = created_ms;
  if ((e.every_ms > 0) == !e.cron.empty())
    throw std::invalid_argument("expectation: give \"every_ms\" or \"cron\"");
  for (int64_t ms : {e.every_ms, e.grace_ms, e.max_runtime_ms})
    if (ms > k_max_duration_ms) throw std::invalid_argument("expectation: a duration is too long");
  if (e.grace_ms == 0) throw std::invalid_argument("expectation: \"grace_ms\" is 0");
  return e;
}

Schedule::Schedule(const Expectation& expectation)
    : expectation_(expectation), zone_(util::TimeZone::utc()) {
  if (expectation_.cron.empty()) {
    if (expectation_.every_ms <= 0) throw UsageError("an expectation needs --every or --cron");
    return;
  }
  std::string error;
  cron_ = util::parse_cron(expectation_.cron, &error);
  if (!cron_) throw UsageError("--cron '" + expectation_.cron + "': " + error);
  std::optional<util::TimeZone> zone = util::load_time_zone(expectation_.tz, &error);
  if (!zone) throw UsageError("--tz: " + error);
  zone_ = std::move(*zone);
}

std::optional<int64_t> Schedule::next_due(int64_t after_ms) const {
  if (!cron_) return after_ms + expectation_.every_ms;
  // Due times fall on whole seconds: the one after `after_ms` is after its second's floor.
  int64_t after_s = after_ms >= 0 ? after_ms / 1000 : -((-after_ms + 999) / 1000);
  std::optional<int64_t> s = util::next_due(*cron_, zone_, after_s);
  if (!s) return std::nullopt;
  return *s * 1000;
}

int64_t Schedule::period_of(int64_t at_ms) const {
  if (!cron_) {
    int64_t every = expectation_.every_ms;
    int64_t since = at_ms - expectation_.created_ms;
    int64_t n = since >= 0 ? since / every : -((-since + every - 1) / every);
    return expectation_.created_ms + n * every;
  }
  int64_t at_s = at_ms >= 0 ? at_ms / 1000 : -((-at_ms + 999) / 1000);
  std::optional<int64_t> s = util::previous_due(*cron_, zone_, at_s);
  return s ? *s * 1000 : 0;
}

int64_t Schedule::window_end(int64_t due_ms) const {
  int64_t end = due_ms + expectation_.grace_ms;
  if (cron_) {
    if (std::optional<int64_t> next = next_due(due_ms)) end = std::min(end, *next);
  }
  return end;
}

std::string Schedule::local_time(int64_t unix_ms) const {
  int64_t s = unix_ms >= 0 ? unix_ms / 1000 : -((-unix_ms + 999) / 1000);
  int64_t offset = zone_.offset_at(s);
  util::CivilTime t = util::civil_from_seconds(s + offset);
  char text[64];
  int64_t off = offset < 0 ? -offset : offset;
  if (offset == 0) {
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02dZ", t.year, t.month, t.day,
                  t.hour, t.minute, t.second);
  } else {
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d%c%02d:%02d", t.year, t.month,
                  t.day, t.hour, t.minute, t.second, offset < 0 ? '-' : '+', int(off / 3600),
                  int(off / 60 % 60));
  }
  return text;
}

std::optional<int64_t> Schedule::upcoming(const ScheduleState& state) const {
  if (!cron_) {
    int64_t base = state.base_ms ? state.base_ms : expectation_.created_ms;
    return base + expectation_.every_ms;
  }
  if (state.next_due_ms) return state.next_due_ms;
  return next_due(expectation_.created_ms);
}

namespace {

// One evaluation's work, in the order it is done (see evaluate).
class Evaluator {
 public:
  Evaluator(const Schedule& schedule, const ScheduleState& state, ScheduleFacts& facts,
            int64_t now_ms)
      : s_(schedule),
        e_(schedule.expectation()),
        facts_(facts),
        now_(now_ms),
        pattern_(e_.pattern) {
    out_.state = state;
  }

  Evaluation run() {
    ScheduleState& st = out_.state;
    if (st.evaluated_ms == 0) start();
    horizon_ = std::max(now_ - k_schedule_settle_ms, st.scanned_ms);
    read_new_attempts();
    judge_due_times(horizon_);
    look_at_latest();
    look_for_overruns();
    st.evaluated_ms = now_;
    out_.wake_ms = std::min(wake_, next_window_close());
    return std::move(out_);
  }

 private:
  void start() {
    ScheduleState& st = out_.state;
    st.scanned_ms = e_.created_ms;
    st.base_ms = e_.created_ms;
    st.next_due_ms = s_.next_due(e_.created_ms).value_or(0);
  }

  void find(FindingKind kind, int64_t at_ms, std::string key, int64_t attempt, std::string detail) {
    ScheduleFinding f;
    f.pattern = e_.pattern;
    f.kind = kind;
    f.at_ms = at_ms;
    f.key = std::move(key);
    f.attempt = attempt;
    f.detail = std::move(detail);
    f.found_ms = now_;
    out_.findings.push_back(std::move(f));
  }

  void missed(int64_t due_ms) {
    find(FindingKind::missed, due_ms, "", 0,
         "no real attempt started within " + util::human_duration(e_.grace_ms) + " of " +
             s_.local_time(due_ms));
  }

  // Judges every due time whose window (from the due time, for its grace: [due, end)) ended by
  // `until_ms`, the start of an attempt read after them or the evaluation's horizon.
  void judge_due_times(int64_t until_ms) {
    ScheduleState& st = out_.state;
    if (e_.cron.empty()) {
      for (int64_t due = st.base_ms + e_.every_ms; due + e_.grace_ms <= until_ms;
           due = st.base_ms + e_.every_ms) {
        missed(due);
        st.base_ms = due;
      }
      st.next_due_ms = st.base_ms + e_.every_ms;
      return;
    }
    while (st.next_due_ms != 0 && s_.window_end(st.next_due_ms) <= until_ms) {
      if (!st.due_met) missed(st.next_due_ms);
      st.next_due_ms = s_.next_due(st.next_due_ms).value_or(0);
      st.due_met = false;
    }
  }

  void read_new_attempts() {
    ScheduleState& st = out_.state;
    std::vector<AttemptFact> found =
        facts_.started(pattern_, st.scanned_ms, st.scanned_key, st.scanned_number, horizon_,
                       k_schedule_scan_limit);
    for (AttemptFact& a : found) {
      // The due times whose window closed before this start are judged first, so a late start
      // never hides a miss.
      judge_due_times(a.started_ms);
      count_in_period(a);
      if (e_.cron.empty()) {
        st.base_ms = std::max(st.base_ms, a.started_ms);
        st.next_due_ms = st.base_ms + e_.every_ms;
      } else if (st.next_due_ms != 0 && a.started_ms >= st.next_due_ms &&
                 a.started_ms < s_.window_end(st.next_due_ms)) {
        st.due_met = true;
      }
      become_latest(std::move(a));
      st.scanned_ms = st.last_started_ms;
      st.scanned_key = st.last_key;
      st.scanned_number = st.last_number;
    }
    // Read to the horizon: the next evaluation reads from there (a full page: from its last).
    if (int64_t(found.size()) < k_schedule_scan_limit) {
      st.scanned_ms = horizon_;
      st.scanned_key.clear();
      st.scanned_number = 0;
    } else {
      horizon_ = st.scanned_ms;
    }
  }

  void count_in_period(const AttemptFact& a) {
    ScheduleState& st = out_.state;
    int64_t period = s_.period_of(a.started_ms);
    if (period != st.period_ms) {
      st.period_ms = period;
      st.period_count = 0;
    }
    ++st.period_count;
    if (e_.at_most > 0 && st.period_count == e_.at_most + 1)
      find(FindingKind::too_often, period, a.key, a.number,
           std::to_string(e_.at_most + 1) + " real attempts in the period from " +
               s_.local_time(period) + " (at most " + std::to_string(e_.at_most) + "), the last " +
               attempt_name(a.key, a.number));
  }

  // A newer attempt takes the latest's place: what became of the one it replaces is looked at
  // first, so a failure between two evaluations is not passed over.
  void become_latest(AttemptFact a) {
    ScheduleState& st = out_.state;
    if (!st.last_key.empty() && !st.last_told && st.last_outcome == Status::running)
      refresh_latest();
    st.last_key = std::move(a.key);
    st.last_number = a.number;
    st.last_started_ms = a.started_ms;
    st.last_ended_ms = a.ended_ms;
    st.last_outcome = a.outcome;
    st.last_told = false;
    latest_ = AttemptFact{st.last_key, a.number,    a.started_ms, a.ended_ms,
                          a.outcome,   a.exit_code, a.http_status};
    tell_latest();
  }

  void refresh_latest() {
    ScheduleState& st = out_.state;
    std::optional<AttemptFact> now = facts_.attempt(st.last_key, st.last_number);
    if (!now) {
      st.last_told = true;  // gone (removed): nothing more to learn of it
      return;
    }
    st.last_outcome = now->outcome;
    st.last_ended_ms = now->ended_ms;
    latest_ = std::move(*now);
    tell_latest();
  }

  void tell_latest() {
    ScheduleState& st = out_.state;
    if (st.last_told || !latest_) return;
    if (ended_badly(st.last_outcome)) {
      find(FindingKind::failed, st.last_started_ms, st.last_key, st.last_number,
           attempt_name(st.last_key, st.last_number) + " " + how_it_ended(*latest_));
      st.last_told = true;
    } else if (st.last_outcome == Status::succeeded) {
      // Kept by the store only if it closes a finding (see Evaluation::findings).
      find(FindingKind::recovered, st.last_started_ms, st.last_key, st.last_number,
           attempt_name(st.last_key, st.last_number) + " succeeded");
      st.last_told = true;
    }
  }

  void look_at_latest() {
    ScheduleState& st = out_.state;
    if (!st.last_key.empty() && !st.last_told && st.last_outcome == Status::running)
      refresh_latest();
  }

  void look_for_overruns() {
    if (e_.max_runtime_ms <= 0) return;
    ScheduleState& st = out_.state;
    std::vector<AttemptFact> running = facts_.running(pattern_, k_schedule_running_limit);
    // Oldest first: each runs past the bound before any started after it, so the newest start
    // told of (overrun_ms) says which are told.
    std::sort(running.begin(), running.end(), [](const AttemptFact& a, const AttemptFact& b) {
      return a.started_ms < b.started_ms;
    });
    for (const AttemptFact& a : running) {
      if (a.started_ms <= st.overrun_ms) continue;
      int64_t bound = a.started_ms + e_.max_runtime_ms;
      if (now_ >= bound) {
        st.overrun_ms = a.started_ms;
        find(FindingKind::overrun, a.started_ms, a.key, a.number,
             attempt_name(a.key, a.number) + " has run " +
                 util::human_duration(now_ - a.started_ms) + ", past its " +
                 util::human_duration(e_.max_runtime_ms));
      } else {
        wake_ = std::min(wake_, bound);
      }
    }
  }

  int64_t next_window_close() const {
    const ScheduleState& st = out_.state;
    if (e_.cron.empty()) return st.base_ms + e_.every_ms + e_.grace_ms + k_schedule_settle_ms;
    if (st.next_due_ms == 0) return INT64_MAX;
    return s_.window_end(st.next_due_ms) + k_schedule_settle_ms;
  }

  const Schedule& s_;
  const Expectation& e_;
  ScheduleFacts& facts_;
  int64_t now_;
  KeyPattern pattern_;
  int64_t horizon_ = 0;
  int64_t wake_ = INT64_MAX;
  std::optional<AttemptFact> latest_;
  Evaluation out_;
};

}  // namespace

Evaluation evaluate(const Schedule& schedule, const ScheduleState& state, ScheduleFacts& facts,
                    int64_t now_ms) {
  return Evaluator(schedule, state, facts, now_ms).run();
}

}  // namespace idem::core
