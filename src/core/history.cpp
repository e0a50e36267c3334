#include "core/history.hpp"

#include <cctype>

#include "core/duration.hpp"
#include "util/clock.hpp"

namespace idem::core {

namespace {

// The fronts `ls --front` knows and the kind each records.
constexpr std::pair<std::string_view, std::string_view> k_front_kinds[] = {
    {"run", "run"},   {"each", "each"},   {"begin", "begin"},
    {"hook", "http"}, {"proxy", "proxy"}, {"ledger", "ledger"},
};

nlohmann::json int_or_null(const std::optional<int>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// RFC 3339's date-time: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), 't' and 'z' too.
std::optional<int64_t> parse_rfc3339_ms(std::string_view t) {
  size_t i = 0;
  auto digits = [&](size_t n) -> std::optional<int64_t> {
    if (i + n > t.size()) return std::nullopt;
    int64_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      if (!std::isdigit(uint8_t(t[i + k]))) return std::nullopt;
      v = v * 10 + (t[i + k] - '0');
    }
    i += n;
    return v;
  };
  auto expect = [&](std::string_view any) {
    if (i < t.size() && any.find(t[i]) != std::string_view::npos) return ++i, true;
    return false;
  };
  auto y = digits(4);
  if (!y || !expect("-")) return std::nullopt;
  auto mo = digits(2);
  if (!mo || !expect("-")) return std::nullopt;
  auto d = digits(2);
  if (!d || !expect("Tt ")) return std::nullopt;
  auto h = digits(2);
  if (!h || !expect(":")) return std::nullopt;
  auto mi = digits(2);
  if (!mi || !expect(":")) return std::nullopt;
  auto sec = digits(2);
  if (!sec) return std::nullopt;
  int64_t ms = 0;
  if (expect(".")) {
    int64_t scale = 100;
    size_t start = i;
    while (i < t.size() && std::isdigit(uint8_t(t[i]))) {
      ms += (t[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == start) return std::nullopt;
  }
  int64_t offset_min = 0;
  if (!expect("Zz")) {
    if (i >= t.size() || (t[i] != '+' && t[i] != '-')) return std::nullopt;
    const int64_t sign = t[i++] == '-' ? -1 : 1;
    auto oh = digits(2);
    if (!oh || !expect(":")) return std::nullopt;
    auto om = digits(2);
    if (!om || *oh > 23 || *om > 59) return std::nullopt;
    offset_min = sign * (*oh * 60 + *om);
  }
  if (i != t.size() || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *sec > 60)
    return std::nullopt;
  const int64_t seconds =
      days_from_civil(*y, *mo, *d) * 86400 + *h * 3600 + *mi * 60 + *sec - offset_min * 60;
  return seconds * 1000 + ms;
}

}  // namespace

std::optional<int64_t> parse_time_bound(std::string_view text, int64_t now_ms) {
  if (auto ms = parse_rfc3339_ms(text)) return ms;
  if (auto back = parse_duration_ms(text); back && *back > 0) return now_ms - *back;
  return std::nullopt;
}

nlohmann::json history_array(const std::vector<HistoryEntry>& entries) {
  nlohmann::json a = nlohmann::json::array();
  for (const HistoryEntry& e : entries) a.push_back(history_json(e));
  return a;
}

nlohmann::json history_document(const Record& record, const std::vector<HistoryEntry>& entries) {
  return {{"key", record.key},
          {"replays", record.replays},
          {"last_replay_at", record.last_replay_ms
                                 ? nlohmann::json(util::iso8601_utc(record.last_replay_ms))
                                 : nlohmann::json(nullptr)},
          {"attempts", history_array(entries)}};
}

std::string trigger_of_kind(std::string_view kind) {
  for (const auto& [front, k] : k_front_kinds)
    if (k == kind) return std::string(front);
  return std::string(kind);
}

std::optional<std::string> kind_of_front(std::string_view front) {
  for (const auto& [f, kind] : k_front_kinds)
    if (f == front) return std::string(kind);
  return std::nullopt;
}

std::string_view known_fronts() { return "run, each, begin, hook, proxy, ledger"; }

std::vector<std::string_view> front_names() {
  std::vector<std::string_view> names;
  for (const auto& [front, kind] : k_front_kinds) names.push_back(front);
  return names;
}

const char* end_reason(const Outcome& outcome) {
  if (outcome.timed_out) return k_ended_timeout;
  if (outcome.signal) return k_ended_signal;
  if (outcome.response) return k_ended_status;
  if (outcome.exit_code) return k_ended_exit;
  return k_ended_error;
}

const char* abandon_reason(std::string_view note) {
  if (note.starts_with("lease ran out")) return k_ended_lease_ran_out;
  return k_ended_owner_died;
}

nlohmann::json history_json(const HistoryEntry& e) {
  nlohmann::json j;
  j["number"] = e.number;
  j["trigger"] = e.trigger;
  j["owner"] = {{"host", e.host}, {"pid", e.pid}};
  j["started_at"] = util::iso8601_utc(e.started_ms);
  j["ended_at"] = e.ended_ms ? nlohmann::json(util::iso8601_utc(e.ended_ms)) : nullptr;
  j["duration_ms"] = e.ended_ms ? nlohmann::json(e.ended_ms - e.started_ms) : nullptr;
  j["outcome"] = to_string(e.outcome);
  j["reason"] = e.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.reason);
  j["exit_code"] = int_or_null(e.exit_code);
  j["signal"] = int_or_null(e.signal);
  j["http_status"] = int_or_null(e.http_status);
  j["note"] = e.note;
  return j;
}

}  // namespace idem::core
