#pragma once
// Cron schedules as Debian's cron (Vixie cron 3.0pl1 with Debian's patches) reads the five time
// fields of a crontab line, and their due instants in a time zone, daylight-saving changes
// handled as that cron handles them. Knows nothing about idem.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/time_zone.hpp"

namespace idem::util {

struct CronSchedule {
  uint64_t minutes = 0;        // bit m: minute m (0-59)
  uint32_t hours = 0;          // bit h: hour h (0-23)
  uint32_t days_of_month = 0;  // bit d: day d (1-31)
  uint16_t months = 0;         // bit m: month m (1-12)
  uint8_t days_of_week = 0;    // bit d: weekday d (0 = Sunday; a 7 is folded onto 0)
  // Which fields start with '*' (Vixie's MIN_STAR, HR_STAR, DOM_STAR, DOW_STAR; the @-forms set
  // them as Vixie's do: @hourly is HR_STAR, @yearly, @monthly and @weekly are DOW_STAR).
  bool minute_star = false;
  bool hour_star = false;
  bool dom_star = false;
  bool dow_star = false;
  std::string text;  // as given, without surrounding blanks

  // A "wildcard job" (the minute or the hour field starts with '*'): on a change forward its
  // skipped times are not due, on a change back its repeated times are due twice. Any other is
  // a "fixed-time job": a skipped time is due once at the end of the gap, a repeated one once.
  bool wildcard() const { return minute_star || hour_star; }
  // Whether the day `days` (days since 1970-01-01 of the local calendar) matches: the month,
  // and the day of month AND the day of week when either field starts with '*', else either.
  bool day_matches(int64_t days) const;
  // Whether a local time (local seconds, see time_zone.hpp) at a whole minute matches.
  bool matches_local(int64_t local_s) const;
};

// Parses five blank-separated fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or
// jan-dec, day of week 0-7 or sun-sat; '*', lists, ranges a-b, steps */n and a-b/n; names of
// three letters in any case) or one of @yearly @annually @monthly @weekly @daily @midnight
// @hourly. nullopt with *error, one line naming the field and what is wrong. Refused as Debian's
// cron refuses them: a step on a single value (5/10), a reversed range (5-1, mon-sun: "sun" is
// 0), step 0, a value out of its field, a name of another length, @reboot (no time), a sixth
// field. Refused where Debian's cron is lax: anything after a '*' but a step or a comma ("*x",
// which Vixie's skips), and a range end outside its field that the step never reaches
// (0-62/50).
std::optional<CronSchedule> parse_cron(std::string_view text, std::string* error);

// The first due instant (Unix seconds, at a whole minute of local time) strictly after
// `after_s` in zone `tz`, or nullopt if there is none within 5 years. A local time that occurs
// once is due then; one skipped by a change forward is due once at the end of the gap for a
// fixed-time job (several such collapse into that instant) and not at all for a wildcard job;
// one repeated by a change back is due at its first occurrence for a fixed-time job, at both
// for a wildcard job. Instants beyond ±2^40 s (about 35,000 years) have none.
std::optional<int64_t> next_due(const CronSchedule& schedule, const TimeZone& tz, int64_t after_s);
// The last due instant at or before `at_s` under the same rules, or nullopt if there is none
// within 5 years before it.
std::optional<int64_t> previous_due(const CronSchedule& schedule, const TimeZone& tz, int64_t at_s);

}  // namespace idem::util
