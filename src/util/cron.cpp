#include "util/cron.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>

#include "util/quote.hpp"

namespace idem::util {

namespace {

constexpr int64_t k_search_seconds = int64_t(1827) * 86400;  // 5 years and a day
// Beyond this (about 35,000 years from 1970) next_due and previous_due find nothing: it keeps
// every sum of times and offsets far from overflowing.
constexpr int64_t k_cron_time_limit = int64_t(1) << 40;

struct CronField {
  const char* name;
  int low;
  int high;
  const std::array<std::string_view, 12>* names;  // or nullptr
  int names_base;                                 // the value of names[0]
  size_t name_count;
};

constexpr std::array<std::string_view, 12> k_month_names = {
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 12> k_weekday_names = {"sun", "mon", "tue", "wed",
                                                              "thu", "fri", "sat"};

constexpr CronField k_cron_fields[5] = {
    {"minute", 0, 59, nullptr, 0, 0},
    {"hour", 0, 23, nullptr, 0, 0},
    {"day-of-month", 1, 31, nullptr, 0, 0},
    {"month", 1, 12, &k_month_names, 1, 12},
    {"day-of-week", 0, 7, &k_weekday_names, 0, 7},
};

bool cron_blank(char c) { return c == ' ' || c == '\t'; }

// Reads one field of a crontab line as Vixie's get_list/get_range/get_number do, into a bit
// mask; the errors say what is wrong.
class CronFieldParser {
 public:
  CronFieldParser(const CronField& field, std::string_view text) : f_(field), s_(text) {}

  bool parse(uint64_t* bits, std::string* why) {
    *bits = 0;
    for (;;) {
      if (!range(bits, why)) return false;
      if (pos_ == s_.size()) return true;
      if (s_[pos_] != ',') {
        *why = "unexpected " + quote(s_.substr(pos_, 1));
        return false;
      }
      ++pos_;
    }
  }

 private:
  bool range(uint64_t* bits, std::string* why) {
    int64_t first = f_.low, last = f_.high, step = 1;
    if (pos_ < s_.size() && s_[pos_] == '*') {
      ++pos_;
    } else {
      if (!number(&first, true, why)) return false;
      if (pos_ < s_.size() && s_[pos_] == '-') {
        ++pos_;
        if (!number(&last, true, why)) return false;
        if (first > last) {
          *why = "reversed range " + std::to_string(first) + "-" + std::to_string(last);
          return false;
        }
      } else {
        if (pos_ < s_.size() && s_[pos_] == '/') {
          *why = "a step needs a range or * before it, not a single value";
          return false;
        }
        *bits |= uint64_t(1) << first;
        return true;
      }
    }
    if (pos_ < s_.size() && s_[pos_] == '/') {
      ++pos_;
      if (!number(&step, false, why)) return false;
      if (step == 0) {
        *why = "step 0";
        return false;
      }
    }
    for (int64_t v = first; v <= last; v += step) *bits |= uint64_t(1) << v;
    return true;
  }

  // A number (or, with names allowed and the field having them, a three-letter name), in the
  // field's range unless it is a step.
  bool number(int64_t* out, bool value, std::string* why) {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = std::min<int64_t>(v * 10 + (s_[pos_] - '0'), int64_t(1) << 40);
      ++pos_;
    }
    if (pos_ > start) {
      if (value && (v < f_.low || v > f_.high)) {
        *why = std::string(s_.substr(start, pos_ - start)) + " is out of range " +
               std::to_string(f_.low) + "-" + std::to_string(f_.high);
        return false;
      }
      *out = v;
      return true;
    }
    while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_])) != 0) ++pos_;
    std::string_view word = s_.substr(start, pos_ - start);
    if (word.empty()) {
      *why = pos_ < s_.size() ? "unexpected " + quote(s_.substr(pos_, 1))
                              : std::string("a number is missing");
      return false;
    }
    if (value && f_.names != nullptr) {
      for (size_t i = 0; i < f_.name_count; ++i) {
        std::string_view name = (*f_.names)[i];
        if (word.size() == name.size() &&
            std::equal(word.begin(), word.end(), name.begin(), [](char a, char b) {
              return std::tolower(static_cast<unsigned char>(a)) == b;
            })) {
          *out = f_.names_base + static_cast<int64_t>(i);
          return true;
        }
      }
    }
    *why = "unknown name " + quote(word);
    return false;
  }

  const CronField& f_;
  std::string_view s_;
  size_t pos_ = 0;
};

std::optional<CronSchedule> cron_at_form(std::string_view word, std::string* error) {
  CronSchedule s;
  s.minutes = 1;  // minute 0
  s.hours = 1;    // hour 0
  s.days_of_month = 0xFFFFFFFEu;
  s.months = 0x1FFE;
  s.days_of_week = 0x7F;
  if (word == "yearly" || word == "annually") {
    s.days_of_month = 1u << 1;
    s.months = 1u << 1;
    s.dow_star = true;
  } else if (word == "monthly") {
    s.days_of_month = 1u << 1;
    s.dow_star = true;
  } else if (word == "weekly") {
    s.days_of_week = 1;
    s.dow_star = true;
  } else if (word == "daily" || word == "midnight") {
  } else if (word == "hourly") {
    s.hours = 0xFFFFFF;
    s.hour_star = true;
  } else if (word == "reboot") {
    if (error != nullptr) *error = "@reboot names no time, only a boot";
    return std::nullopt;
  } else {
    if (error != nullptr) {
      *error = "unknown " + quote("@" + std::string(word)) +
               " (the @-forms: @yearly @annually @monthly @weekly @daily @midnight @hourly)";
    }
    return std::nullopt;
  }
  return s;
}

// The lowest set bit of `mask` at or above `from`, or -1.
int cron_next_bit(uint64_t mask, int from) {
  if (from >= 64) return -1;
  uint64_t rest = mask & (~uint64_t(0) << from);
  return rest == 0 ? -1 : std::countr_zero(rest);
}

// The highest set bit of `mask` at or below `from`, or -1.
int cron_previous_bit(uint64_t mask, int from) {
  if (from < 0) return -1;
  uint64_t rest = from >= 63 ? mask : mask & ((uint64_t(1) << (from + 1)) - 1);
  return rest == 0 ? -1 : 63 - std::countl_zero(rest);
}

int64_t cron_floor(int64_t v, int64_t unit) {
  int64_t q = v / unit;
  if (v % unit != 0 && v < 0) --q;
  return q * unit;
}

int64_t cron_ceil(int64_t v, int64_t unit) { return -cron_floor(-v, unit); }

// The first matching local minute in [lo, hi], skipping months and days that do not match.
std::optional<int64_t> cron_next_match(const CronSchedule& s, int64_t lo, int64_t hi) {
  int64_t t = cron_ceil(lo, 60);
  int64_t day = cron_floor(t, 86400) / 86400;
  int second_of_day = static_cast<int>(t - day * 86400);
  while (day * 86400 <= hi) {
    const CivilDate date = civil_from_days(day);
    if ((s.months & (1u << date.month)) == 0) {
      day = date.month == 12 ? days_from_civil(date.year + 1, 1, 1)
                             : days_from_civil(date.year, date.month + 1, 1);
      second_of_day = 0;
      continue;
    }
    if (s.day_matches(day)) {
      int hour = second_of_day / 3600;
      int minute = second_of_day / 60 % 60;
      int m = -1;
      if ((s.hours >> hour & 1u) != 0) m = cron_next_bit(s.minutes, minute);
      if (m < 0) {
        hour = cron_next_bit(s.hours, hour + 1);
        if (hour >= 0) m = cron_next_bit(s.minutes, 0);
      }
      if (hour >= 0 && m >= 0) {
        int64_t found = day * 86400 + int64_t(hour) * 3600 + int64_t(m) * 60;
        if (found > hi) return std::nullopt;
        return found;
      }
    }
    ++day;
    second_of_day = 0;
  }
  return std::nullopt;
}

// The last matching local minute in [lo, hi].
std::optional<int64_t> cron_previous_match(const CronSchedule& s, int64_t lo, int64_t hi) {
  int64_t t = cron_floor(hi, 60);
  int64_t day = cron_floor(t, 86400) / 86400;
  int second_of_day = static_cast<int>(t - day * 86400);
  while (day * 86400 + 86399 >= lo) {
    const CivilDate date = civil_from_days(day);
    if ((s.months & (1u << date.month)) == 0) {
      day = days_from_civil(date.year, date.month, 1) - 1;
      second_of_day = 86340;
      continue;
    }
    if (s.day_matches(day)) {
      int hour = second_of_day / 3600;
      int minute = second_of_day / 60 % 60;
      int m = -1;
      if ((s.hours >> hour & 1u) != 0) m = cron_previous_bit(s.minutes, minute);
      if (m < 0) {
        hour = cron_previous_bit(s.hours, hour - 1);
        if (hour >= 0) m = cron_previous_bit(s.minutes, 59);
      }
      if (hour >= 0 && m >= 0) {
        int64_t found = day * 86400 + int64_t(hour) * 3600 + int64_t(m) * 60;
        if (found < lo) return std::nullopt;
        return found;
      }
    }
    --day;
    second_of_day = 86340;
  }
  return std::nullopt;
}

}  // namespace

bool CronSchedule::day_matches(int64_t days) const {
  const CivilDate date = civil_from_days(days);
  if ((months & (1u << date.month)) == 0) return false;
  const bool dom = (days_of_month >> date.day & 1u) != 0;
  const bool dow = (days_of_week >> weekday_from_days(days) & 1u) != 0;
  return dom_star || dow_star ? dom && dow : dom || dow;
}

bool CronSchedule::matches_local(int64_t local_s) const {
  if (cron_floor(local_s, 60) != local_s) return false;
  const int64_t day = cron_floor(local_s, 86400) / 86400;
  const int64_t second_of_day = local_s - day * 86400;
  return day_matches(day) && (hours >> (second_of_day / 3600) & 1u) != 0 &&
         (minutes >> (second_of_day / 60 % 60) & 1u) != 0;
}

std::optional<CronSchedule> parse_cron(std::string_view text, std::string* error) {
  while (!text.empty() && cron_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && (cron_blank(text.back()) || text.back() == '\n')) text.remove_suffix(1);
  auto fail = [&](const std::string& why) -> std::optional<CronSchedule> {
    if (error != nullptr) *error = why;
    return std::nullopt;
  };
  if (!text.empty() && text.front() == '@') {
    auto s = cron_at_form(text.substr(1), error);
    if (s) s->text = std::string(text);
    return s;
  }
  std::string_view fields[5];
  size_t count = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = pos;
    while (end < text.size() && !cron_blank(text[end])) ++end;
    if (count < 5) fields[count] = text.substr(pos, end - pos);
    ++count;
    pos = end;
    while (pos < text.size() && cron_blank(text[pos])) ++pos;
  }
  if (count != 5) {
    return fail(
        "a cron expression has 5 fields (minute hour day-of-month month day-of-week), not " +
        std::to_string(count));
  }
  uint64_t bits[5];
  for (size_t i = 0; i < 5; ++i) {
    std::string why;
    if (!CronFieldParser(k_cron_fields[i], fields[i]).parse(&bits[i], &why)) {
      return fail("bad " + std::string(k_cron_fields[i].name) + " " + quote(fields[i]) + ": " +
                  why);
    }
  }
  CronSchedule s;
  s.minutes = bits[0];
  s.hours = static_cast<uint32_t>(bits[1]);
  s.days_of_month = static_cast<uint32_t>(bits[2]);
  s.months = static_cast<uint16_t>(bits[3]);
  uint64_t dow = bits[4];
  if ((dow & 0x81) != 0) dow |= 0x81;  // 0 and 7 are both Sunday
  s.days_of_week = static_cast<uint8_t>(dow & 0x7F);
  s.minute_star = fields[0].front() == '*';
  s.hour_star = fields[1].front() == '*';
  s.dom_star = fields[2].front() == '*';
  s.dow_star = fields[4].front() == '*';
  s.text = std::string(text);
  return s;
}

// Both searches walk the zone's segments (stretches of one offset) from the given instant; in
// each, a matching local minute maps to one instant. At a segment's start, a change forward
// leaves a gap of local times (due at the change for a fixed-time job), and a change back
// repeats local times already seen in the segment before (due again only for a wildcard job).

std::optional<int64_t> next_due(const CronSchedule& schedule, const TimeZone& tz, int64_t after_s) {
  if (after_s < -k_cron_time_limit || after_s > k_cron_time_limit) return std::nullopt;
  if (schedule.minutes == 0 || schedule.hours == 0) return std::nullopt;
  const int64_t from = after_s + 1;
  const int64_t limit = after_s + k_search_seconds;
  const bool fixed = !schedule.wildcard();
  for (TimeZone::Segment seg = tz.segment_at(from);; seg = tz.segment_at(seg.end)) {
    const bool starts_here = seg.start >= from;
    if (fixed && starts_here && seg.previous_offset < seg.offset &&
        cron_next_match(schedule, seg.start + seg.previous_offset, seg.start + seg.offset - 1)) {
      return seg.start;
    }
    int64_t lo = std::max(from, seg.start) + seg.offset;
    if (fixed && seg.previous_offset > seg.offset && seg.start != TimeZone::k_min_time) {
      lo = std::max(lo, seg.start + seg.previous_offset);
    }
    const int64_t last = std::min(seg.end - 1, limit);
    if (auto local = cron_next_match(schedule, lo, last + seg.offset)) return *local - seg.offset;
    if (seg.end > limit) return std::nullopt;
  }
}

std::optional<int64_t> previous_due(const CronSchedule& schedule, const TimeZone& tz,
                                    int64_t at_s) {
  if (at_s < -k_cron_time_limit || at_s > k_cron_time_limit) return std::nullopt;
  if (schedule.minutes == 0 || schedule.hours == 0) return std::nullopt;
  const int64_t limit = at_s - k_search_seconds;
  const bool fixed = !schedule.wildcard();
  for (TimeZone::Segment seg = tz.segment_at(at_s);; seg = tz.segment_at(seg.start - 1)) {
    const bool has_start = seg.start != TimeZone::k_min_time;
    int64_t lo = std::max(seg.start, limit) + seg.offset;
    if (fixed && has_start && seg.previous_offset > seg.offset) {
      lo = std::max(lo, seg.start + seg.previous_offset);
    }
    const int64_t hi = std::min(at_s, seg.end - 1) + seg.offset;
    if (auto local = cron_previous_match(schedule, lo, hi)) return *local - seg.offset;
    if (!has_start || seg.start < limit) return std::nullopt;
    if (fixed && seg.previous_offset < seg.offset &&
        cron_next_match(schedule, seg.start + seg.previous_offset, seg.start + seg.offset - 1)) {
      return seg.start;
    }
  }
}

}  // namespace idem::util
