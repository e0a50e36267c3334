#include "util/time_zone.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "util/fd.hpp"
#include "util/quote.hpp"

namespace idem::util {

namespace {

// The footer's rule is expanded into the transition table up to this year; later instants
// compute their transitions from the rule.
constexpr int k_table_last_year = 2200;
// Transition times beyond this are refused: real files stay within ±2^59 (zic's "big bang"),
// and the arithmetic on them (adding offsets, a day's seconds) must never overflow.
constexpr int64_t k_tzif_time_limit = int64_t(1) << 60;
// RFC 8536: utoff within -89999..93599 (under 25 and 26 hours).
constexpr int64_t k_min_utoff = -89999;
constexpr int64_t k_max_utoff = 93599;
constexpr size_t k_max_zone_file = 4 << 20;
constexpr int64_t k_rule_time_limit = int64_t(1) << 50;

int64_t tz_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b) != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// A reader of big-endian TZif data that never reads past its end.
class TzifReader {
 public:
  explicit TzifReader(std::string_view data) : data_(data) {}
  bool has(uint64_t n) const { return n <= data_.size() - pos_; }
  size_t pos() const { return pos_; }
  std::string_view take(size_t n) {
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t be(size_t width) {
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v = (v << 8) | static_cast<unsigned char>(data_[pos_ + i]);
    pos_ += width;
    return v;
  }
  std::string_view rest() const { return data_.substr(pos_); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

struct TzifCounts {
  uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
  // Bytes of the data block that follows the header, for 4- or 8-byte times.
  uint64_t block_size(uint64_t time_size) const {
    return uint64_t(timecnt) * time_size + timecnt + uint64_t(typecnt) * 6 + charcnt +
           uint64_t(leapcnt) * (time_size + 4) + isstdcnt + isutcnt;
  }
};

bool read_tzif_header(TzifReader& in, char* version, TzifCounts* counts, std::string* error) {
  if (!in.has(44)) {
    *error = "truncated TZif header";
    return false;
  }
  if (in.take(4) != "TZif") {
    *error = "not TZif data (no \"TZif\" magic)";
    return false;
  }
  *version = in.take(1)[0];
  if (*version != '\0' && *version < '2') {
    *error = "unknown TZif version";
    return false;
  }
  in.take(15);
  counts->isutcnt = static_cast<uint32_t>(in.be(4));
  counts->isstdcnt = static_cast<uint32_t>(in.be(4));
  counts->leapcnt = static_cast<uint32_t>(in.be(4));
  counts->timecnt = static_cast<uint32_t>(in.be(4));
  counts->typecnt = static_cast<uint32_t>(in.be(4));
  counts->charcnt = static_cast<uint32_t>(in.be(4));
  return true;
}

struct TzifType {
  int64_t utoff;
};

struct TzifBlock {
  std::vector<int64_t> times;
  std::vector<uint8_t> type_of;
  std::vector<TzifType> types;
};

bool read_tzif_block(TzifReader& in, const TzifCounts& c, size_t time_size, TzifBlock* block,
                     std::string* error) {
  if (c.typecnt == 0) {
    *error = "TZif data with no local time type";
    return false;
  }
  if (c.typecnt > 256) {
    *error = "TZif data with more than 256 local time types";
    return false;
  }
  if (c.charcnt == 0) {
    *error = "TZif data with no time zone abbreviation";
    return false;
  }
  if ((c.isutcnt != 0 && c.isutcnt != c.typecnt) || (c.isstdcnt != 0 && c.isstdcnt != c.typecnt)) {
    *error = "TZif data with inconsistent counts";
    return false;
  }
  if (c.leapcnt != 0) {
    *error = "TZif data with leap seconds (a \"right/\" zone) is not supported";
    return false;
  }
  if (!in.has(c.block_size(time_size))) {
    *error = "truncated TZif data";
    return false;
  }
  block->times.reserve(c.timecnt);
  for (uint32_t i = 0; i < c.timecnt; ++i) {
    uint64_t raw = in.be(time_size);
    int64_t t = time_size == 4 ? int64_t(int32_t(uint32_t(raw))) : int64_t(raw);
    if (t < -k_tzif_time_limit || t > k_tzif_time_limit) {
      *error = "TZif transition time out of range";
      return false;
    }
    if (!block->times.empty() && t <= block->times.back()) {
      *error = "TZif transition times not in ascending order";
      return false;
    }
    block->times.push_back(t);
  }
  block->type_of.reserve(c.timecnt);
  for (uint32_t i = 0; i < c.timecnt; ++i) {
    auto index = static_cast<uint8_t>(in.be(1));
    if (index >= c.typecnt) {
      *error = "TZif transition names a local time type that does not exist";
      return false;
    }
    block->type_of.push_back(index);
  }
  for (uint32_t i = 0; i < c.typecnt; ++i) {
    int64_t utoff = int32_t(uint32_t(in.be(4)));
    uint64_t isdst = in.be(1);
    uint64_t desigidx = in.be(1);
    if (utoff < k_min_utoff || utoff > k_max_utoff) {
      *error = "TZif UTC offset out of range";
      return false;
    }
    if (isdst > 1 || desigidx >= c.charcnt) {
      *error = "bad TZif local time type";
      return false;
    }
    block->types.push_back({utoff});
  }
  in.take(c.charcnt);
  for (uint64_t i = 0; i < uint64_t(c.isstdcnt) + c.isutcnt; ++i) {
    if (in.be(1) > 1) {
      *error = "bad TZif standard/UT indicator";
      return false;
    }
  }
  return true;
}

// POSIX TZ strings ---------------------------------------------------------------------------

class TzStringParser {
 public:
  explicit TzStringParser(std::string_view s) : s_(s) {}

  bool at_end() const { return pos_ == s_.size(); }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  // An abbreviation: three or more letters, or <...> of letters, digits, '+' and '-'.
  bool name() {
    size_t start = pos_;
    if (eat('<')) {
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) != 0 ||
                                  s_[pos_] == '+' || s_[pos_] == '-'))
        ++pos_;
      size_t length = pos_ - start - 1;
      return eat('>') && length >= 3;
    }
    while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_])) != 0) ++pos_;
    return pos_ - start >= 3;
  }

  // [+-]hh[:mm[:ss]] as seconds, hh at most max_hours.
  bool hms(int64_t max_hours, int64_t* out) {
    int64_t sign = 1;
    if (eat('-'))
      sign = -1;
    else
      eat('+');
    int64_t hours = 0, minutes = 0, seconds = 0;
    if (!number(0, max_hours, &hours)) return false;
    if (eat(':')) {
      if (!number(0, 59, &minutes)) return false;
      if (eat(':') && !number(0, 59, &seconds)) return false;
    }
    *out = sign * (hours * 3600 + minutes * 60 + seconds);
    return true;
  }

  bool number(int64_t low, int64_t high, int64_t* out) {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + (s_[pos_] - '0');
      if (v > high) return false;
      ++pos_;
    }
    if (pos_ == start || v < low) return false;
    *out = v;
    return true;
  }

  bool date(TimeZone::Rule::Date* d) {
    int64_t a = 0, b = 0, c = 0;
    if (eat('J')) {
      if (!number(1, 365, &a)) return false;
      d->kind = TimeZone::Rule::Date::julian_no_leap;
      d->day = static_cast<int>(a);
    } else if (eat('M')) {
      if (!number(1, 12, &a) || !eat('.') || !number(1, 5, &b) || !eat('.') || !number(0, 6, &c))
        return false;
      d->kind = TimeZone::Rule::Date::month_week_day;
      d->month = static_cast<int>(a);
      d->week = static_cast<int>(b);
      d->weekday = static_cast<int>(c);
    } else {
      if (!number(0, 365, &a)) return false;
      d->kind = TimeZone::Rule::Date::zero_based;
      d->day = static_cast<int>(a);
    }
    d->time = 7200;
    // RFC 8536 (version 3) lets the time be negative or up to 167 hours.
    if (eat('/') && !hms(167, &d->time)) return false;
    return true;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// The day (days since 1970-01-01) a rule's date falls on in `year`.
int64_t rule_day(const TimeZone::Rule::Date& d, int64_t year) {
  int64_t jan1 = days_from_civil(year, 1, 1);
  switch (d.kind) {
    case TimeZone::Rule::Date::julian_no_leap:
      return jan1 + d.day - 1 + (is_leap_year(year) && d.day >= 60 ? 1 : 0);
    case TimeZone::Rule::Date::zero_based:
      return jan1 + d.day;
    case TimeZone::Rule::Date::month_week_day:
      break;
  }
  int64_t first = days_from_civil(year, d.month, 1);
  int64_t day = first + (d.weekday - weekday_from_days(first) + 7) % 7 + 7 * (d.week - 1);
  int64_t last = first + days_in_month(year, d.month) - 1;
  while (day > last) day -= 7;
  return day;
}

struct RuleChange {
  int64_t at;
  int64_t offset;
};

// The rule's two changes in `year`, in the order they were generated (start, then end); the
// caller sorts.
void rule_changes(const TimeZone::Rule& r, int64_t year, std::vector<RuleChange>* out) {
  // The start is written in standard time, the end in daylight time.
  out->push_back({rule_day(r.start, year) * 86400 + r.start.time - r.std_offset, r.dst_offset});
  out->push_back({rule_day(r.end, year) * 86400 + r.end.time - r.dst_offset, r.std_offset});
}

// The rule's changes of years [first, last], sorted (stable: of two at one instant the later
// generated wins) and reduced to real changes from `before`.
std::vector<RuleChange> rule_changes_between(const TimeZone::Rule& r, int64_t first, int64_t last,
                                             int64_t before) {
  std::vector<RuleChange> all;
  for (int64_t y = first; y <= last; ++y) rule_changes(r, y, &all);
  std::stable_sort(all.begin(), all.end(),
                   [](const RuleChange& a, const RuleChange& b) { return a.at < b.at; });
  std::vector<RuleChange> changes;
  int64_t current = before;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i + 1 < all.size() && all[i + 1].at == all[i].at) continue;
    if (all[i].offset == current) continue;
    changes.push_back(all[i]);
    current = all[i].offset;
  }
  return changes;
}

int64_t tz_year_of(int64_t utc_s) { return civil_from_days(tz_floor_div(utc_s, 86400)).year; }

}  // namespace

// The calendar ------------------------------------------------------------------------------

bool is_leap_year(int64_t year) { return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0); }

int days_in_month(int64_t year, int month) {
  static constexpr int k_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month == 2 && is_leap_year(year)) return 29;
  return k_days[(month - 1) % 12];
}

int64_t days_from_civil(int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t yoe = year - era * 400;
  const int64_t doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

CivilDate civil_from_days(int64_t days) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

CivilTime civil_from_seconds(int64_t s) {
  const int64_t days = tz_floor_div(s, 86400);
  const int64_t rest = s - days * 86400;
  const CivilDate date = civil_from_days(days);
  return {static_cast<int>(date.year),
          date.month,
          date.day,
          static_cast<int>(rest / 3600),
          static_cast<int>(rest / 60 % 60),
          static_cast<int>(rest % 60),
          weekday_from_days(days)};
}

int64_t seconds_from_civil(int year, int month, int day, int hour, int minute, int second) {
  return days_from_civil(year, month, 1) * 86400 + int64_t(day - 1) * 86400 + int64_t(hour) * 3600 +
         int64_t(minute) * 60 + second;
}

// TimeZone ----------------------------------------------------------------------------------

TimeZone TimeZone::utc() { return fixed("UTC", 0); }

TimeZone TimeZone::fixed(std::string name, int64_t offset) {
  TimeZone tz;
  tz.name_ = std::move(name);
  tz.initial_offset_ = offset;
  return tz;
}

std::optional<TimeZone::Rule> TimeZone::parse_posix_tz(std::string_view text, std::string* error) {
  Rule r;
  TzStringParser p(text);
  int64_t west = 0;
  if (!p.name() || !p.hms(24, &west)) {
    *error = "bad TZ string " + quote(text);
    return std::nullopt;
  }
  r.std_offset = -west;
  if (p.at_end()) return r;
  if (!p.name()) {
    *error = "bad TZ string " + quote(text);
    return std::nullopt;
  }
  r.has_dst = true;
  r.dst_offset = r.std_offset + 3600;
  if (p.peek() != ',' && !p.at_end()) {
    if (!p.hms(24, &west)) {
      *error = "bad TZ string " + quote(text);
      return std::nullopt;
    }
    r.dst_offset = -west;
  }
  if (p.at_end()) {
    // No rule: the US rules since 2007, as glibc assumes.
    r.start = {Rule::Date::month_week_day, 0, 3, 2, 0, 7200};
    r.end = {Rule::Date::month_week_day, 0, 11, 1, 0, 7200};
    return r;
  }
  if (!p.eat(',') || !p.date(&r.start) || !p.eat(',') || !p.date(&r.end) || !p.at_end()) {
    *error = "bad TZ string " + quote(text);
    return std::nullopt;
  }
  return r;
}

std::optional<TimeZone> TimeZone::from_tzif(std::string name, std::string_view data,
                                            std::string* error) {
  std::string why;
  auto fail = [&](const std::string& what) -> std::optional<TimeZone> {
    if (error != nullptr) *error = what;
    return std::nullopt;
  };
  TzifReader in(data);
  char version = 0;
  TzifCounts counts{};
  if (!read_tzif_header(in, &version, &counts, &why)) return fail(why);
  size_t time_size = 4;
  if (version != '\0') {
    // Skip the 32-bit block; the 64-bit one follows with its own header.
    if (!in.has(counts.block_size(4))) return fail("truncated TZif data");
    in.take(static_cast<size_t>(counts.block_size(4)));
    char version2 = 0;
    if (!read_tzif_header(in, &version2, &counts, &why)) return fail(why);
    time_size = 8;
  }
  TzifBlock block;
  if (!read_tzif_block(in, counts, time_size, &block, &why)) return fail(why);

  std::optional<Rule> footer;
  if (version != '\0') {
    std::string_view rest = in.rest();
    if (rest.empty() || rest[0] != '\n') return fail("TZif data without its footer");
    size_t end = rest.find('\n', 1);
    if (end == std::string_view::npos) return fail("TZif footer not terminated");
    std::string_view tz_string = rest.substr(1, end - 1);
    if (!tz_string.empty()) {
      footer = parse_posix_tz(tz_string, &why);
      if (!footer) return fail("TZif footer: " + why);
    }
  }

  TimeZone tz;
  tz.name_ = std::move(name);
  // RFC 8536: the first local time type is in force before the first transition.
  tz.initial_offset_ = block.types[0].utoff;
  for (size_t i = 0; i < block.times.size(); ++i) {
    int64_t off = block.types[block.type_of[i]].utoff;
    int64_t current = tz.offset_.empty() ? tz.initial_offset_ : tz.offset_.back();
    if (off == current) continue;
    tz.at_.push_back(block.times[i]);
    tz.offset_.push_back(off);
  }
  if (footer) {
    int64_t last = block.times.empty() ? k_min_time : block.times.back();
    if (!footer->has_dst) {
      int64_t current = tz.offset_.empty() ? tz.initial_offset_ : tz.offset_.back();
      if (block.times.empty()) {
        tz.initial_offset_ = footer->std_offset;
      } else if (footer->std_offset != current) {
        // The footer governs from the last transition on (it should agree with it anyway).
        tz.at_.push_back(last);
        tz.offset_.push_back(footer->std_offset);
        if (tz.at_.size() >= 2 && tz.at_[tz.at_.size() - 2] == last) {
          tz.at_.erase(tz.at_.end() - 2);
          tz.offset_.erase(tz.offset_.end() - 2);
        }
      }
    } else {
      // From the year of the last transition (real files: 1900 to 2037; kept within the
      // table's years so that no data can make the expansion long).
      const int64_t last_year = block.times.empty() ? 1900 : tz_year_of(last);
      const int first_year =
          static_cast<int>(std::clamp<int64_t>(last_year, 1800, k_table_last_year + 1));
      tz.rule_ = footer;
      tz.add_rule_transitions(last, first_year, k_table_last_year);
    }
  }
  tz.finish();
  return tz;
}

void TimeZone::add_rule_transitions(int64_t after, int first_year, int last_year) {
  int64_t current = offset_.empty() ? initial_offset_ : offset_.back();
  // Generated from a year early so that a change late in the year before (or a time beyond
  // 24 h) is ordered right; only those after `after` are kept.
  std::vector<RuleChange> all;
  for (int64_t y = first_year - 1; y <= last_year; ++y) rule_changes(*rule_, y, &all);
  std::stable_sort(all.begin(), all.end(),
                   [](const RuleChange& a, const RuleChange& b) { return a.at < b.at; });
  size_t recent = 0;  // changes in the last four years of the table
  const int64_t recent_from = days_from_civil(last_year - 3, 1, 1) * 86400;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].at <= after) continue;
    if (i + 1 < all.size() && all[i + 1].at == all[i].at) continue;
    if (all[i].offset == current) continue;
    at_.push_back(all[i].at);
    offset_.push_back(all[i].offset);
    current = all[i].offset;
    if (all[i].at >= recent_from) ++recent;
  }
  // A rule that changes nothing any more (daylight saving all year, or equal offsets) leaves
  // the last offset in force for ever; otherwise later instants follow the rule.
  if (recent == 0) {
    rule_.reset();
  } else {
    rule_from_ = at_.back();
  }
}

void TimeZone::finish() {
  max_change_ = 0;
  int64_t previous = initial_offset_;
  for (int64_t off : offset_) {
    max_change_ = std::max(max_change_, off > previous ? off - previous : previous - off);
    previous = off;
  }
}

TimeZone::Segment TimeZone::rule_segment(int64_t utc_s) const {
  const Rule& r = *rule_;
  // Far beyond any real use; keeps the year's arithmetic from overflowing.
  const int64_t year = tz_year_of(std::min(utc_s, k_rule_time_limit));
  // The first change of year - 2 is taken to be a change from the other offset: the rule
  // alternates between its two offsets.
  std::vector<RuleChange> window;
  rule_changes(r, year - 2, &window);
  std::stable_sort(window.begin(), window.end(),
                   [](const RuleChange& a, const RuleChange& b) { return a.at < b.at; });
  int64_t before = window[0].offset == r.dst_offset ? r.std_offset : r.dst_offset;
  std::vector<RuleChange> changes = rule_changes_between(r, year - 2, year + 1, before);
  Segment seg{rule_from_, k_max_time, offset_.back(),
              offset_.size() >= 2 ? offset_[offset_.size() - 2] : initial_offset_};
  for (size_t i = 0; i < changes.size(); ++i) {
    if (changes[i].at > utc_s) {
      seg.end = changes[i].at;
      break;
    }
    if (changes[i].at >= rule_from_) {
      seg.start = changes[i].at;
      seg.offset = changes[i].offset;
      seg.previous_offset = i > 0 ? changes[i - 1].offset : before;
    }
  }
  return seg;
}

TimeZone::Segment TimeZone::segment_at(int64_t utc_s) const {
  const size_t n = at_.size();
  const size_t i =
      static_cast<size_t>(std::upper_bound(at_.begin(), at_.end(), utc_s) - at_.begin());
  if (i == 0) return {k_min_time, n > 0 ? at_[0] : k_max_time, initial_offset_, initial_offset_};
  if (i == n && rule_) return rule_segment(utc_s);
  return {at_[i - 1], i < n ? at_[i] : k_max_time, offset_[i - 1],
          i >= 2 ? offset_[i - 2] : initial_offset_};
}

int64_t TimeZone::offset_at(int64_t utc_s) const {
  const size_t n = at_.size();
  if (n == 0) return initial_offset_;
  if (utc_s >= at_.back()) return rule_ ? rule_segment(utc_s).offset : offset_.back();
  const size_t i =
      static_cast<size_t>(std::upper_bound(at_.begin(), at_.end(), utc_s) - at_.begin());
  return i == 0 ? initial_offset_ : offset_[i - 1];
}

std::vector<int64_t> TimeZone::resolve(int64_t local_s, int64_t* gap_end) const {
  std::vector<int64_t> out;
  local_s = std::clamp(local_s, -k_rule_time_limit, k_rule_time_limit);
  // Every instant with this local time lies within [local - 26 h, local + 25 h] (RFC 8536's
  // bounds on offsets): walk the segments that meet it.
  const int64_t from = local_s - k_max_utoff;
  const int64_t to = local_s - k_min_utoff;
  bool gap_found = false;
  for (Segment seg = segment_at(from);; seg = segment_at(seg.end)) {
    const int64_t u = local_s - seg.offset;
    if (u >= seg.start && u < seg.end) {
      if (out.empty() || out.back() != u) out.push_back(u);
    } else if (!gap_found && seg.start != k_min_time && seg.start + seg.offset > local_s &&
               seg.start + seg.previous_offset <= local_s) {
      gap_found = true;
      if (gap_end != nullptr) *gap_end = seg.start;
    }
    if (seg.end > to || seg.end >= k_max_time) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Loading -----------------------------------------------------------------------------------

bool valid_zone_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '/' || name.back() == '/') return false;
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '+' || c == '-' || c == '.' || c == '/';
    if (!ok) return false;
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

std::optional<TimeZone> load_time_zone(std::string_view name, std::string* error) {
  const std::string shown(name);
  auto fail = [&](const std::string& why) -> std::optional<TimeZone> {
    if (error != nullptr) *error = "time zone " + quote(shown) + ": " + why;
    return std::nullopt;
  };
  if (!valid_zone_name(name)) {
    return fail("not a zone name (a name like Europe/Paris under the zoneinfo folder)");
  }
  const char* dir = std::getenv("TZDIR");
  const std::string base = dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo";
  const std::string path = base + "/" + shown;
  const bool utc_name = name == "UTC" || name == "Etc/UTC";
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) {
    if (utc_name) return TimeZone::fixed(shown, 0);
    if (errno == ENOENT || errno == ENOTDIR) return fail("no such zone (" + path + " not found)");
    return fail("cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail("no such zone (" + path + " is not a file)");
  }
  if (st.st_size > static_cast<off_t>(k_max_zone_file)) return fail(path + " is too large");
  std::string data;
  if (!read_all(fd.get(), data)) return fail("cannot read " + path + ": " + std::strerror(errno));
  std::string why;
  auto tz = TimeZone::from_tzif(shown, data, &why);
  if (!tz) return fail(path + ": " + why);
  return tz;
}

namespace {

std::string zone_after_zoneinfo(std::string_view path) {
  static constexpr std::string_view k_marker = "zoneinfo/";
  size_t at = path.rfind(k_marker);
  if (at == std::string_view::npos) return {};
  std::string_view rest = path.substr(at + k_marker.size());
  // Debian's /usr/share/zoneinfo/posix/ and right/ mirror the zones (right/ counts leap
  // seconds, which load_time_zone does not read: its plain zone has the same civil rules).
  if (rest.substr(0, 6) == "posix/") rest.remove_prefix(6);
  if (rest.substr(0, 6) == "right/") rest.remove_prefix(6);
  return std::string(rest);
}

}  // namespace

std::string local_zone_name() {
  return local_zone_name(std::getenv("TZ"), "/etc/timezone", "/etc/localtime");
}

std::string local_zone_name(const char* tz_env, const std::string& timezone_file,
                            const std::string& localtime_link) {
  if (tz_env != nullptr && *tz_env != '\0') {
    std::string_view v(tz_env);
    if (v.front() == ':') v.remove_prefix(1);
    if (valid_zone_name(v)) return std::string(v);
    if (!v.empty() && v.front() == '/') {
      std::string z = zone_after_zoneinfo(v);
      if (valid_zone_name(z)) return z;
    }
  }
  {
    std::ifstream in(timezone_file);
    std::string line;
    if (in && std::getline(in, line)) {
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
        line.pop_back();
      size_t start = line.find_first_not_of(" \t");
      if (start != std::string::npos) line.erase(0, start);
      if (valid_zone_name(line)) return line;
    }
  }
  {
    char buf[4096];
    ssize_t n = ::readlink(localtime_link.c_str(), buf, sizeof buf - 1);
    if (n > 0) {
      std::string z = zone_after_zoneinfo(std::string_view(buf, static_cast<size_t>(n)));
      if (valid_zone_name(z)) return z;
    }
  }
  return "UTC";
}

}  // namespace idem::util
