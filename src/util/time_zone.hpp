#pragma once
// Time zones read from the system's zoneinfo (TZif files, RFC 8536), because GCC 12's libstdc++
// has no chrono time zone database: UTC offsets at an instant, local wall times back to
// instants (gaps and overlaps included), and the civil calendar arithmetic both need. Knows
// nothing about idem.
//
// Times are whole seconds. A "local seconds" value counts seconds since 1970-01-01 00:00 of the
// local wall clock as if it were UTC: local = utc + offset_at(utc).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::util {

class TimeZone {
 public:
  static TimeZone utc();
  // A zone whose offset never changes (seconds east of UTC).
  static TimeZone fixed(std::string name, int64_t offset);
  // Parses TZif data of any version (1 to 4): the 64-bit section when there is one, and the
  // footer's POSIX TZ string for the instants after the last transition (Debian's "slim" files
  // stop their transitions early and rely on it). nullopt with *error (one line) on bad data.
  static std::optional<TimeZone> from_tzif(std::string name, std::string_view data,
                                           std::string* error);

  const std::string& name() const { return name_; }
  // Seconds east of UTC in force at `utc_s`.
  int64_t offset_at(int64_t utc_s) const;
  // The instants whose local wall time is `local_s`, ascending: none in a gap (a local time
  // skipped by a change forward), one normally, two in an overlap (a local time repeated by a
  // change back). With none, *gap_end (when given) is the first instant after the gap: the
  // transition that made it. Meant for |local_s| < 2^50 (it is clamped there).
  std::vector<int64_t> resolve(int64_t local_s, int64_t* gap_end = nullptr) const;
  // The largest |offset change| of any transition, in seconds (0 for a fixed offset): the margin
  // a search around a transition needs.
  int64_t max_offset_change() const { return max_change_; }

  // A stretch of instants [start, end) with one offset. start is k_min_time before the first
  // transition, end k_max_time after the last; previous_offset is the offset before start (equal
  // to offset when there is none).
  struct Segment {
    int64_t start;
    int64_t end;
    int64_t offset;
    int64_t previous_offset;
  };
  static constexpr int64_t k_min_time = INT64_MIN / 4;
  static constexpr int64_t k_max_time = INT64_MAX / 4;
  Segment segment_at(int64_t utc_s) const;

  // The footer's daylight-saving rule (POSIX TZ string); public for the parser's tests.
  struct Rule {
    // One end of the daylight-saving period: Jn (day 1-365, Feb 29 never counted), n (day
    // 0-365, counting Feb 29), or Mm.w.d; at `time` seconds of local time (may be negative or
    // beyond 24 h).
    struct Date {
      enum Kind { julian_no_leap, zero_based, month_week_day } kind = month_week_day;
      int day = 0;  // Jn's n or n's n
      int month = 0, week = 0, weekday = 0;
      int64_t time = 7200;
    };
    int64_t std_offset = 0;  // seconds east
    bool has_dst = false;
    int64_t dst_offset = 0;
    Date start, end;
  };
  // Parses a POSIX TZ string ("CET-1CEST,M3.5.0,M10.5.0/3", "<+0530>-5:30"): offsets west
  // positive as written, stored east positive; a DST part without rules takes the US rules
  // (M3.2.0,M11.1.0), as glibc does.
  static std::optional<Rule> parse_posix_tz(std::string_view text, std::string* error);

 private:
  void add_rule_transitions(int64_t after, int first_year, int last_year);
  void finish();
  Segment rule_segment(int64_t utc_s) const;

  std::string name_;
  // Instants at which the offset changes, ascending, and the offset from each on; before the
  // first, initial_offset_. Only real changes are kept (a change of abbreviation or of isdst
  // alone is no transition here). The footer's rule is expanded into this table up to
  // k_table_last_year; later instants compute theirs from the rule.
  std::vector<int64_t> at_;
  std::vector<int64_t> offset_;
  int64_t initial_offset_ = 0;
  std::optional<Rule> rule_;        // the footer's rule, when it has daylight saving
  int64_t rule_from_ = k_max_time;  // the first instant past the table that uses rule_
  int64_t max_change_ = 0;
};

// Loads the zone NAME from /usr/share/zoneinfo (or $TZDIR). NAME must be a relative zone name
// ("Europe/Paris", "UTC"): no leading '/', no "..", no empty component, only [A-Za-z0-9_+-./].
// nullopt with *error (one line naming NAME) for a bad name, a missing file or bad data. "UTC"
// and "Etc/UTC" work without the file.
std::optional<TimeZone> load_time_zone(std::string_view name, std::string* error);

// Whether `name` has the form load_time_zone accepts.
bool valid_zone_name(std::string_view name);

// The system's zone name as Debian's cron would use it: $TZ when it is a zone name (a leading
// ':' stripped; a path is taken after ".../zoneinfo/"), else the first line of /etc/timezone,
// else the target of the /etc/localtime link after ".../zoneinfo/" (and after "posix/" or
// "right/"), else "UTC".
std::string local_zone_name();
// The same from a given value of $TZ (nullptr when unset) and given files (for tests).
std::string local_zone_name(const char* tz_env, const std::string& timezone_file,
                            const std::string& localtime_link);

// The civil calendar (proleptic Gregorian), after Howard Hinnant's algorithms.
struct CivilTime {
  int year, month /*1-12*/, day /*1-31*/, hour, minute, second, weekday /*0=Sunday*/;
};
// The date and time of a UTC or local seconds value.
CivilTime civil_from_seconds(int64_t s);
// Seconds since 1970-01-01 00:00 of a date and time (fields may be out of their usual ranges
// only as days_from_civil allows: month 1-12; day, hour, minute and second add linearly).
int64_t seconds_from_civil(int year, int month, int day, int hour, int minute, int second);
// Days since 1970-01-01 of a date (month 1-12), and back.
int64_t days_from_civil(int64_t year, int month, int day);
struct CivilDate {
  int64_t year;
  int month, day;
};
CivilDate civil_from_days(int64_t days);
// 0 = Sunday.
inline int weekday_from_days(int64_t days) {
  return static_cast<int>(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6);
}
bool is_leap_year(int64_t year);
int days_in_month(int64_t year, int month);

}  // namespace idem::util
