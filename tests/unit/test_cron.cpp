// Cron expressions as Debian's cron reads them, and their due instants across daylight-saving
// changes (util/cron.hpp).
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "util/cron.hpp"
#include "util/time_zone.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_cron {

using idem::util::CronSchedule;
using idem::util::load_time_zone;
using idem::util::next_due;
using idem::util::parse_cron;
using idem::util::previous_due;
using idem::util::seconds_from_civil;
using idem::util::TimeZone;

TimeZone cron_zone(const std::string& name) {
  std::string error;
  auto tz = load_time_zone(name, &error);
  INFO(error);
  REQUIRE(tz);
  return *tz;
}

CronSchedule cron(const std::string& text) {
  std::string error;
  auto s = parse_cron(text, &error);
  INFO(text << ": " << error);
  REQUIRE(s);
  return *s;
}

std::string cron_error(const std::string& text) {
  std::string error;
  auto s = parse_cron(text, &error);
  INFO(text);
  CHECK_FALSE(s);
  CHECK(error.find('\n') == std::string::npos);
  return error;
}

// next_due and previous_due as plain numbers (Catch prints them), k_none for nullopt.
constexpr int64_t k_none = -1;
int64_t next_at(const CronSchedule& s, const TimeZone& tz, int64_t t) {
  return next_due(s, tz, t).value_or(k_none);
}
int64_t previous_at(const CronSchedule& s, const TimeZone& tz, int64_t t) {
  return previous_due(s, tz, t).value_or(k_none);
}

int64_t at_utc(int y, int mo, int d, int h = 0, int mi = 0) {
  return seconds_from_civil(y, mo, d, h, mi, 0);
}

std::vector<int> bits_of(uint64_t mask) {
  std::vector<int> out;
  for (int i = 0; i < 64; ++i)
    if ((mask >> i & 1u) != 0) out.push_back(i);
  return out;
}

// Every due instant in (from, to], by next_due.
std::vector<int64_t> dues_between(const CronSchedule& s, const TimeZone& tz, int64_t from,
                                  int64_t to) {
  std::vector<int64_t> out;
  for (auto t = next_due(s, tz, from); t && *t <= to; t = next_due(s, tz, *t)) out.push_back(*t);
  return out;
}

// The rules written out slowly: every matching local minute in a window, resolved, and the
// daylight-saving rules applied to what resolve() says. Returns the sorted due instants whose
// local minute lies in [local_from, local_to].
std::vector<int64_t> reference_dues(const CronSchedule& s, const TimeZone& tz, int64_t local_from,
                                    int64_t local_to) {
  std::vector<int64_t> out;
  for (int64_t local = local_from - local_from % 60; local <= local_to; local += 60) {
    if (!s.matches_local(local)) continue;
    int64_t gap_end = 0;
    const std::vector<int64_t> at = tz.resolve(local, &gap_end);
    if (at.empty()) {
      if (!s.wildcard()) out.push_back(gap_end);
    } else if (at.size() == 2 && !s.wildcard()) {
      out.push_back(at[0]);
    } else {
      out.insert(out.end(), at.begin(), at.end());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

TEST_CASE("parse_cron: numbers, *, lists, ranges, steps", "[cron]") {
  auto s = cron("5 4 3 2 1");
  CHECK(bits_of(s.minutes) == std::vector<int>{5});
  CHECK(bits_of(s.hours) == std::vector<int>{4});
  CHECK(bits_of(s.days_of_month) == std::vector<int>{3});
  CHECK(bits_of(s.months) == std::vector<int>{2});
  CHECK(bits_of(s.days_of_week) == std::vector<int>{1});
  CHECK_FALSE(s.wildcard());
  CHECK_FALSE(s.dom_star);
  CHECK_FALSE(s.dow_star);
  CHECK(s.text == "5 4 3 2 1");

  s = cron("* * * * *");
  CHECK(bits_of(s.minutes).size() == 60);
  CHECK(bits_of(s.hours).size() == 24);
  CHECK(bits_of(s.days_of_month) == [] {
    std::vector<int> v;
    for (int i = 1; i <= 31; ++i) v.push_back(i);
    return v;
  }());
  CHECK(bits_of(s.months).size() == 12);
  CHECK(bits_of(s.days_of_week) == std::vector<int>{0, 1, 2, 3, 4, 5, 6});
  CHECK(s.wildcard());
  CHECK(s.minute_star);
  CHECK(s.hour_star);
  CHECK(s.dom_star);
  CHECK(s.dow_star);

  s = cron("  0,15,30,45\t1-3,22  1-31/10 */5 1-5/2  ");
  CHECK(s.text == "0,15,30,45\t1-3,22  1-31/10 */5 1-5/2");
  CHECK(bits_of(s.minutes) == std::vector<int>{0, 15, 30, 45});
  CHECK(bits_of(s.hours) == std::vector<int>{1, 2, 3, 22});
  CHECK(bits_of(s.days_of_month) == std::vector<int>{1, 11, 21, 31});
  CHECK(bits_of(s.months) == std::vector<int>{1, 6, 11});
  CHECK(bits_of(s.days_of_week) == std::vector<int>{1, 3, 5});

  s = cron("*/15 */6 */7 */4 */3");
  CHECK(bits_of(s.minutes) == std::vector<int>{0, 15, 30, 45});
  CHECK(bits_of(s.hours) == std::vector<int>{0, 6, 12, 18});
  CHECK(bits_of(s.days_of_month) == std::vector<int>{1, 8, 15, 22, 29});
  CHECK(bits_of(s.months) == std::vector<int>{1, 5, 9});
  CHECK(bits_of(s.days_of_week) == std::vector<int>{0, 3, 6});  // 0, 3, 6 (and no 7? 6+3=9)
  CHECK(s.minute_star);
  CHECK(s.dom_star);

  // A step larger than the range keeps its first value; leading zeros are numbers.
  s = cron("*/100 07 01 012 00");
  CHECK(bits_of(s.minutes) == std::vector<int>{0});
  CHECK(bits_of(s.hours) == std::vector<int>{7});
  CHECK(bits_of(s.months) == std::vector<int>{12});
  CHECK(bits_of(s.days_of_week) == std::vector<int>{0});
  // Overlapping pieces of a list.
  s = cron("1-10,5-15/5,59 0 1 1 *");
  CHECK(bits_of(s.minutes) == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 59});
  CHECK_FALSE(s.wildcard());
  CHECK(cron("0 * * * *").wildcard());
  CHECK(cron("* 3 * * *").wildcard());
  CHECK_FALSE(cron("0-59 0-23 * * *").wildcard());  // only a leading '*' counts, as in Vixie's
}

TEST_CASE("parse_cron: names of months and days, 7 is Sunday", "[cron]") {
  auto s = cron("0 0 * jan-MAR,Dec Mon-fri");
  CHECK(bits_of(s.months) == std::vector<int>{1, 2, 3, 12});
  CHECK(bits_of(s.days_of_week) == std::vector<int>{1, 2, 3, 4, 5});
  s = cron("0 0 * JAN-dec/3 sun,SAT");
  CHECK(bits_of(s.months) == std::vector<int>{1, 4, 7, 10});
  CHECK(bits_of(s.days_of_week) == std::vector<int>{0, 6});
  CHECK(bits_of(cron("0 0 * * 7").days_of_week) == std::vector<int>{0});
  CHECK(bits_of(cron("0 0 * * 5-7").days_of_week) == std::vector<int>{0, 5, 6});
  CHECK(bits_of(cron("0 0 * * 0-7/7").days_of_week) == std::vector<int>{0});
  CHECK(bits_of(cron("0 0 * * fri-7").days_of_week) == std::vector<int>{0, 5, 6});
  CHECK(bits_of(cron("0 0 * feb-11 *").months).size() == 10);
}

TEST_CASE("parse_cron: the @-forms", "[cron]") {
  const std::pair<const char*, const char*> same[] = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"},
  };
  const TimeZone tz = cron_zone("Europe/Berlin");
  for (const auto& [form, fields] : same) {
    INFO(form);
    const CronSchedule a = cron(form);
    const CronSchedule b = cron(fields);
    CHECK(a.text == form);
    CHECK(a.minutes == b.minutes);
    CHECK(a.hours == b.hours);
    CHECK(a.months == b.months);
    CHECK(a.wildcard() == b.wildcard());
    // The same days (their star flags may differ, as in Vixie's, but not their meaning).
    for (int64_t day = 20000; day < 20800; ++day) REQUIRE(a.day_matches(day) == b.day_matches(day));
    int64_t t = at_utc(2026, 1, 1);
    for (int i = 0; i < 30; ++i) {
      auto x = next_due(a, tz, t);
      REQUIRE(x);
      REQUIRE(x == next_due(b, tz, t));
      t = *x;
    }
  }
  CHECK(cron("@hourly").wildcard());
  CHECK_FALSE(cron("@daily").wildcard());
  CHECK(cron("  @daily ").text == "@daily");
  CHECK(cron_error("@reboot").find("@reboot") != std::string::npos);
  CHECK(cron_error("@Daily").find("unknown") != std::string::npos);
  cron_error("@");
  cron_error("@daily x");
  cron_error("@every 5m");
}

TEST_CASE("parse_cron: errors name the field and what is wrong", "[cron]") {
  CHECK(cron_error("") ==
        "a cron expression has 5 fields (minute hour day-of-month month day-of-week), not 0");
  CHECK(cron_error("* * * *").find("not 4") != std::string::npos);
  CHECK(cron_error("* * * * * *").find("not 6") != std::string::npos);
  CHECK(cron_error("0 0 * * * /bin/true").find("not 6") != std::string::npos);
  CHECK(cron_error("60 * * * *") == "bad minute \"60\": 60 is out of range 0-59");
  CHECK(cron_error("* 24 * * *") == "bad hour \"24\": 24 is out of range 0-23");
  CHECK(cron_error("* * 0 * *") == "bad day-of-month \"0\": 0 is out of range 1-31");
  CHECK(cron_error("* * 32 * *") == "bad day-of-month \"32\": 32 is out of range 1-31");
  CHECK(cron_error("* * * 0 *") == "bad month \"0\": 0 is out of range 1-12");
  CHECK(cron_error("* * * 13 *") == "bad month \"13\": 13 is out of range 1-12");
  CHECK(cron_error("* * * * 8") == "bad day-of-week \"8\": 8 is out of range 0-7");
  CHECK(cron_error("5-1 * * * *") == "bad minute \"5-1\": reversed range 5-1");
  CHECK(cron_error("* * * * mon-sun") == "bad day-of-week \"mon-sun\": reversed range 1-0");
  CHECK(cron_error("*/0 * * * *") == "bad minute \"*/0\": step 0");
  CHECK(cron_error("1-5/0 * * * *") == "bad minute \"1-5/0\": step 0");
  CHECK(cron_error("5/10 * * * *").find("a step needs a range or *") != std::string::npos);
  CHECK(cron_error("* * * january *") == "bad month \"january\": unknown name \"january\"");
  CHECK(cron_error("* * * * sunday") == "bad day-of-week \"sunday\": unknown name \"sunday\"");
  CHECK(cron_error("jan * * * *") == "bad minute \"jan\": unknown name \"jan\"");
  CHECK(cron_error("* * * */jan *").find("bad month") == 0);
  CHECK(cron_error("1,,2 * * * *") == "bad minute \"1,,2\": unexpected \",\"");
  CHECK(cron_error("1, * * * *").find("bad minute") == 0);
  CHECK(cron_error(",1 * * * *").find("bad minute") == 0);
  CHECK(cron_error("1- * * * *") == "bad minute \"1-\": a number is missing");
  CHECK(cron_error("*/ * * * *") == "bad minute \"*/\": a number is missing");
  CHECK(cron_error("-1 * * * *") == "bad minute \"-1\": unexpected \"-\"");
  CHECK(cron_error("*x * * * *") == "bad minute \"*x\": unexpected \"x\"");
  CHECK(cron_error("** * * * *") == "bad minute \"**\": unexpected \"*\"");
  CHECK(cron_error("1x * * * *") == "bad minute \"1x\": unexpected \"x\"");
  CHECK(cron_error("*/5x * * * *") == "bad minute \"*/5x\": unexpected \"x\"");
  CHECK(cron_error("1-2-3 * * * *") == "bad minute \"1-2-3\": unexpected \"-\"");
  CHECK(cron_error("1/2/3 * * * *").find("a step needs") != std::string::npos);
  CHECK(cron_error("*/2/3 * * * *") == "bad minute \"*/2/3\": unexpected \"/\"");
  CHECK(cron_error("0-60/30 * * * *") == "bad minute \"0-60/30\": 60 is out of range 0-59");
  CHECK(cron_error("99999999999999999999 * * * *").find("out of range") != std::string::npos);
  CHECK(cron_error("* * * * 1\n0") == "bad day-of-week \"1\\n0\": unexpected \"\\n\"");
  CHECK(cron_error("* * * * \xc3\xa9") == "bad day-of-week \"\\xc3\\xa9\": unexpected \"\\xc3\"");
}

TEST_CASE("day rule: either day field when both are restricted, else both", "[cron]") {
  const TimeZone tz = TimeZone::utc();
  // Every Friday and every 13th.
  auto either = cron("0 0 13 * 5");
  CHECK(dues_between(either, tz, at_utc(2026, 2, 1), at_utc(2026, 3, 1)) ==
        std::vector<int64_t>{at_utc(2026, 2, 6), at_utc(2026, 2, 13), at_utc(2026, 2, 20),
                             at_utc(2026, 2, 27)});
  CHECK(dues_between(either, tz, at_utc(2026, 3, 1), at_utc(2026, 3, 31)) ==
        std::vector<int64_t>{at_utc(2026, 3, 6), at_utc(2026, 3, 13), at_utc(2026, 3, 20),
                             at_utc(2026, 3, 27)});
  CHECK(dues_between(either, tz, at_utc(2026, 4, 1), at_utc(2026, 4, 30)) ==
        std::vector<int64_t>{at_utc(2026, 4, 3), at_utc(2026, 4, 10), at_utc(2026, 4, 13),
                             at_utc(2026, 4, 17), at_utc(2026, 4, 24)});
  // A day of month starting with '*' makes it AND: odd days that are Fridays.
  auto both = cron("0 0 */2 * 5");
  CHECK(dues_between(both, tz, at_utc(2026, 4, 1), at_utc(2026, 4, 30)) ==
        std::vector<int64_t>{at_utc(2026, 4, 3), at_utc(2026, 4, 17)});
  // Only the day of week restricted: Mondays.
  auto mondays = cron("30 8 * * mon");
  CHECK(dues_between(mondays, tz, at_utc(2026, 4, 1), at_utc(2026, 4, 30)) ==
        std::vector<int64_t>{at_utc(2026, 4, 6, 8, 30), at_utc(2026, 4, 13, 8, 30),
                             at_utc(2026, 4, 20, 8, 30), at_utc(2026, 4, 27, 8, 30)});
  // Day of week '*/1' starts with '*': AND, so only the 1st.
  CHECK(dues_between(cron("0 0 1 * */1"), tz, at_utc(2026, 1, 1), at_utc(2026, 4, 1)).size() == 3);
  // Months restrict both.
  CHECK(dues_between(cron("0 12 1 feb,aug 1"), tz, at_utc(2026, 1, 1), at_utc(2027, 1, 1)).size() ==
        2 + 4 + 5 -
            0);  // Feb 1 (a Sunday) + 4 Mondays in Feb; Aug 1 + 5 Mondays in Aug - none shared
}

TEST_CASE("next_due and previous_due in UTC: minutes, hours, days, Feb 29, none", "[cron]") {
  const TimeZone tz = TimeZone::utc();
  const int64_t t = at_utc(2026, 12, 6, 7, 8) + 30;
  CHECK(next_at(cron("* * * * *"), tz, t) == at_utc(2026, 12, 6, 7, 9));
  CHECK(previous_at(cron("* * * * *"), tz, t) == at_utc(2026, 12, 6, 7, 8));
  CHECK(previous_at(cron("* * * * *"), tz, at_utc(2026, 12, 6, 7, 8)) == at_utc(2026, 12, 6, 7, 8));
  CHECK(next_at(cron("* * * * *"), tz, at_utc(2026, 12, 6, 7, 8)) == at_utc(2026, 12, 6, 7, 9));
  CHECK(next_at(cron("0 0 * * *"), tz, t) == at_utc(2026, 12, 7));
  CHECK(next_at(cron("59 23 31 12 *"), tz, t) == at_utc(2026, 12, 31, 23, 59));
  CHECK(next_at(cron("0 0 1 1 *"), tz, t) == at_utc(2027, 1, 1));
  CHECK(previous_at(cron("0 0 1 1 *"), tz, t) == at_utc(2026, 1, 1));
  CHECK(next_at(cron("0 0 31 * *"), tz, at_utc(2026, 4, 1)) == at_utc(2026, 5, 31));
  // Feb 29: the next leap year, and none within 5 years across 2100 (not a leap year).
  CHECK(next_at(cron("0 0 29 2 *"), tz, t) == at_utc(2028, 2, 29));
  CHECK(previous_at(cron("0 0 29 2 *"), tz, t) == at_utc(2024, 2, 29));
  CHECK(next_at(cron("0 0 29 2 *"), tz, at_utc(2024, 2, 29)) == at_utc(2028, 2, 29));
  CHECK(next_at(cron("0 0 29 2 *"), tz, at_utc(2097, 3, 1)) == k_none);
  CHECK(previous_at(cron("0 0 29 2 *"), tz, at_utc(2104, 2, 28)) == k_none);
  CHECK(previous_at(cron("0 0 29 2 *"), tz, at_utc(2104, 2, 29)) == at_utc(2104, 2, 29));
  // Feb 29 or any Monday of February: OR (the month still restricts both).
  CHECK(next_at(cron("0 0 29 2 mon"), tz, at_utc(2026, 2, 25)) == at_utc(2027, 2, 1));
  // Never.
  CHECK(next_at(cron("0 0 30 2 *"), tz, t) == k_none);
  CHECK(previous_at(cron("0 0 30 2 *"), tz, t) == k_none);
  CHECK(next_at(cron("0 0 31 4,6,9,11 *"), tz, t) == k_none);
  // Before 1970 and far ahead.
  CHECK(next_at(cron("0 12 * * *"), tz, at_utc(1960, 1, 1)) == at_utc(1960, 1, 1, 12));
  CHECK(previous_at(cron("0 12 * * *"), tz, at_utc(1960, 1, 1)) == at_utc(1959, 12, 31, 12));
  CHECK(next_at(cron("0 12 * * *"), tz, at_utc(2500, 1, 1)) == at_utc(2500, 1, 1, 12));
  CHECK(next_at(cron("* * * * *"), tz, int64_t(1) << 62) == k_none);
  CHECK(previous_at(cron("* * * * *"), tz, -(int64_t(1) << 62)) == k_none);
}

TEST_CASE("America/New_York: the changes of 2026", "[cron]") {
  const TimeZone tz = cron_zone("America/New_York");
  const int64_t spring = at_utc(2026, 3, 8, 7);      // 02:00 EST -> 03:00 EDT
  const int64_t fall = at_utc(2026, 11, 1, 6);       // 02:00 EDT -> 01:00 EST
  const int64_t spring_day = at_utc(2026, 3, 8, 5);  // local midnight
  const int64_t fall_day = at_utc(2026, 11, 1, 4);   // local midnight (EDT)

  // A fixed time in the gap: once, at the gap's end; the next day as usual.
  const auto at_230 = cron("30 2 * * *");
  CHECK(dues_between(at_230, tz, spring_day, spring_day + 3 * 86400) ==
        std::vector<int64_t>{spring, at_utc(2026, 3, 9, 6, 30), at_utc(2026, 3, 10, 6, 30)});
  CHECK(previous_at(at_230, tz, spring) == spring);
  CHECK(previous_at(at_230, tz, spring - 1) == at_utc(2026, 3, 7, 7, 30));
  // Several skipped times collapse into one instant, with a slot at the gap's end itself.
  CHECK(dues_between(cron("0,15,30,45 2 * * *"), tz, spring_day, spring_day + 86400) ==
        std::vector<int64_t>{spring});
  CHECK(dues_between(cron("30 2,3 * * *"), tz, spring_day, spring_day + 86400) ==
        std::vector<int64_t>{spring, spring + 1800});
  CHECK(dues_between(cron("0 2,3 8 3 *"), tz, spring_day, spring_day + 86400) ==
        std::vector<int64_t>{spring});

  // A fixed time in the repeated hour: once, at its first occurrence.
  const auto at_130 = cron("30 1 * * *");
  CHECK(dues_between(at_130, tz, fall_day, fall_day + 2 * 86400) ==
        std::vector<int64_t>{fall - 1800, at_utc(2026, 11, 2, 6, 30)});
  CHECK(previous_at(at_130, tz, fall + 1800) == fall - 1800);
  CHECK(next_at(at_130, tz, fall - 1800) == at_utc(2026, 11, 2, 6, 30));
  CHECK(dues_between(cron("0 1,2 * * *"), tz, fall_day, fall_day + 86400) ==
        std::vector<int64_t>{fall - 3600, fall + 3600});

  // A wildcard job: nothing in the gap, both passes of the repeated hour.
  const auto quarter = cron("*/15 * * * *");
  auto spring_slots = dues_between(quarter, tz, spring_day - 1, spring_day + 23 * 3600 - 1);
  CHECK(spring_slots.size() == 23 * 4);
  CHECK(std::find(spring_slots.begin(), spring_slots.end(), spring - 900) != spring_slots.end());
  CHECK(next_at(quarter, tz, spring - 900) == spring);
  auto fall_slots = dues_between(quarter, tz, fall_day - 1, fall_day + 25 * 3600 - 1);
  CHECK(fall_slots.size() == 25 * 4);
  CHECK(dues_between(quarter, tz, fall - 3600 - 1, fall + 3600 - 1) ==
        std::vector<int64_t>{fall - 3600, fall - 2700, fall - 1800, fall - 900, fall, fall + 900,
                             fall + 1800, fall + 2700});
  CHECK(previous_at(quarter, tz, fall + 1) == fall);
  CHECK(previous_at(quarter, tz, fall - 1) == fall - 900);

  const auto hourly = cron("0 * * * *");
  CHECK(dues_between(hourly, tz, spring - 2 * 3600, spring + 3600) ==
        std::vector<int64_t>{spring - 3600, spring, spring + 3600});
  CHECK(dues_between(hourly, tz, fall - 3 * 3600, fall + 3600) ==
        std::vector<int64_t>{fall - 2 * 3600, fall - 3600, fall, fall + 3600});
  // A wildcard minute in a fixed hour: the hour is repeated, so it runs in both passes.
  CHECK(dues_between(cron("* 1 * * *"), tz, fall_day, fall_day + 86400).size() == 120);
  CHECK(dues_between(cron("* 2 * * *"), tz, spring_day, spring_day + 86400).empty());
  CHECK(dues_between(cron("59 * * * *"), tz, spring_day, spring_day + 23 * 3600 - 1).size() == 23);
}

TEST_CASE("Europe/Berlin, Australia/Sydney, Australia/Lord_Howe: gaps and repeats", "[cron]") {
  {
    const TimeZone tz = cron_zone("Europe/Berlin");
    const int64_t spring = at_utc(2026, 3, 29, 1);
    const int64_t fall = at_utc(2026, 10, 25, 1);
    CHECK(next_at(cron("30 2 * * *"), tz, spring - 3600) == spring);
    CHECK(next_at(cron("30 2 * * *"), tz, spring) == at_utc(2026, 3, 30, 0, 30));
    CHECK(next_at(cron("30 2 * * *"), tz, fall - 3 * 3600) == fall - 1800);
    CHECK(next_at(cron("30 2 * * *"), tz, fall - 1800) == at_utc(2026, 10, 26, 1, 30));
    CHECK(dues_between(cron("*/15 2 * * *"), tz, fall - 3 * 3600, fall + 3 * 3600).size() == 8);
    CHECK(dues_between(cron("*/15 * * * *"), tz, spring - 3600 - 1, spring + 3600 - 1).size() == 8);
    CHECK(dues_between(cron("0 * * * *"), tz, fall - 2 * 3600, fall + 3600) ==
          std::vector<int64_t>{fall - 3600, fall, fall + 3600});
    CHECK(dues_between(cron("0 * * * *"), tz, spring - 2 * 3600, spring + 3600) ==
          std::vector<int64_t>{spring - 3600, spring, spring + 3600});
  }
  {
    const TimeZone tz = cron_zone("Australia/Sydney");
    const int64_t back = at_utc(2026, 4, 4, 16);    // 03:00 AEDT -> 02:00 AEST
    const int64_t ahead = at_utc(2026, 10, 3, 16);  // 02:00 AEST -> 03:00 AEDT
    const auto at_230 = cron("30 2 * * *");
    CHECK(next_at(at_230, tz, ahead - 86400) == ahead - 86400 + 1800);
    CHECK(next_at(at_230, tz, ahead - 3600) == ahead);
    CHECK(next_at(at_230, tz, ahead) == at_utc(2026, 10, 4, 15, 30));
    CHECK(next_at(at_230, tz, back - 86400) == back - 1800);
    CHECK(next_at(at_230, tz, back - 1800) == at_utc(2026, 4, 5, 16, 30));
    CHECK(dues_between(cron("*/15 * * * *"), tz, back - 3600 - 1, back + 3600 - 1).size() == 8);
    CHECK(dues_between(cron("*/15 * * * *"), tz, ahead - 1, ahead + 3600 - 1).size() == 4);
    CHECK(next_at(cron("*/15 * * * *"), tz, ahead - 900) == ahead);
    // 02:00 AEDT, 02:00 AEST, 03:00 AEST; 01:00 AEST, 03:00 AEDT, 04:00 AEDT.
    CHECK(dues_between(cron("0 * * * *"), tz, back - 2 * 3600, back + 3600) ==
          std::vector<int64_t>{back - 3600, back, back + 3600});
    CHECK(dues_between(cron("0 * * * *"), tz, ahead - 2 * 3600, ahead + 3600) ==
          std::vector<int64_t>{ahead - 3600, ahead, ahead + 3600});
    // Summer time across the new year: midnight is at 13:00 UTC in January.
    CHECK(next_at(cron("0 0 1 1 *"), tz, at_utc(2026, 6, 1)) == at_utc(2026, 12, 31, 13));
  }
  {
    const TimeZone tz = cron_zone("Australia/Lord_Howe");
    const int64_t back = at_utc(2026, 4, 4, 15);        // 02:00 +11 -> 01:30 +1030
    const int64_t ahead = at_utc(2026, 10, 3, 15, 30);  // 02:00 +1030 -> 02:30 +11
    CHECK(next_at(cron("15 2 * * *"), tz, ahead - 3600) == ahead);
    CHECK(next_at(cron("15 2 * * *"), tz, ahead) == at_utc(2026, 10, 4, 15, 15));
    CHECK(next_at(cron("45 2 * * *"), tz, ahead - 3600) == ahead + 900);
    CHECK(next_at(cron("45 1 * * *"), tz, back - 86400) == back - 900);
    CHECK(next_at(cron("45 1 * * *"), tz, back - 900) == at_utc(2026, 4, 5, 15, 15));
    // The repeated half hour: 01:30 and 01:45 twice.
    CHECK(dues_between(cron("*/15 * * * *"), tz, back - 1800 - 1, back + 1800 - 1) ==
          std::vector<int64_t>{back - 1800, back - 900, back, back + 900});
    // The skipped half hour: 02:00 and 02:15 are not due for a wildcard job.
    CHECK(dues_between(cron("*/15 * * * *"), tz, ahead - 1800 - 1, ahead + 1800 - 1) ==
          std::vector<int64_t>{ahead - 1800, ahead - 900, ahead, ahead + 900});
    // 01:00 is not repeated (01:30 to 02:00 is): 01:00 +11, 02:00 +1030, 03:00 +1030.
    CHECK(dues_between(cron("0 * * * *"), tz, back - 2 * 3600, back + 2 * 3600) ==
          std::vector<int64_t>{back - 3600, back + 1800, back + 5400});
    CHECK(dues_between(cron("0 * * * *"), tz, ahead - 3600, ahead + 3 * 3600) ==
          std::vector<int64_t>{ahead + 1800, ahead + 5400, ahead + 9000});
  }
}

TEST_CASE("next_due and previous_due agree with the rules written out slowly", "[cron]") {
  const char* schedules[] = {"*/15 * * * *",   "30 2 * * *", "0 * * * *",         "45 1 * * *",
                             "0,30 1-3 * * *", "* 2 * * *",  "15 2 * * 0",        "*/7 */2 * * *",
                             "0 0 * * *",      "59 1 * * *", "0-59/20 0-4 * * *", "5 3 1-10 * 0"};
  const char* zones[] = {"America/New_York",    "Europe/Berlin",    "Australia/Sydney",
                         "Australia/Lord_Howe", "America/Santiago", "Europe/Dublin"};
  std::mt19937_64 random(38);
  for (const char* zone_name : zones) {
    const TimeZone tz = cron_zone(zone_name);
    // Around each change of 2025 and 2026, of 2037 and 2038 (where 32-bit times end), of 2199
    // and 2200 (where the table of transitions ends) and of 2350 and 2351 (the rule computed
    // for the year).
    std::vector<int64_t> changes;
    for (int year : {2025, 2037, 2199, 2350}) {
      for (auto seg = tz.segment_at(at_utc(year, 1, 1)); seg.end < at_utc(year + 2, 1, 1);
           seg = tz.segment_at(seg.end))
        changes.push_back(seg.end);
    }
    REQUIRE(changes.size() >= 16);
    for (const char* text : schedules) {
      const CronSchedule s = cron(text);
      for (int64_t change : changes) {
        const int64_t local = change + tz.offset_at(change);
        const auto expected = reference_dues(s, tz, local - 2 * 86400, local + 2 * 86400);
        // Every due in the middle of the window, found by walking next_due...
        const int64_t from = change - 86400, to = change + 86400;
        std::vector<int64_t> want;
        for (int64_t d : expected)
          if (d > from && d <= to) want.push_back(d);
        INFO(zone_name << " " << text << " around " << change);
        CHECK(dues_between(s, tz, from, to) == want);
        // ... and by walking previous_due back.
        std::vector<int64_t> back;
        for (auto d = previous_due(s, tz, to); d && *d > from; d = previous_due(s, tz, *d - 1))
          back.push_back(*d);
        std::reverse(back.begin(), back.end());
        CHECK(back == want);
        // Random instants near the change.
        for (int i = 0; i < 20; ++i) {
          const int64_t t = change - 3 * 3600 + static_cast<int64_t>(random() % (6 * 3600));
          const auto next = next_due(s, tz, t);
          const auto prev = previous_due(s, tz, t);
          if (next) CHECK(previous_at(s, tz, *next) == next);
          if (prev) CHECK(next_at(s, tz, *prev) == next);
          if (prev) CHECK(*prev <= t);
          if (next) CHECK(*next > t);
          if (next && prev) {
            // Nothing due strictly between them but t's neighbours.
            auto it = std::upper_bound(expected.begin(), expected.end(), t);
            if (it != expected.end()) CHECK(*it == *next);
            if (it != expected.begin()) CHECK(*std::prev(it) == *prev);
          }
        }
      }
    }
  }
}

TEST_CASE("a year of slots: every minute, every quarter hour", "[cron]") {
  const TimeZone tz = cron_zone("America/New_York");
  const int64_t from = at_utc(2026, 1, 1, 5) - 1;  // local midnight of 1 January, minus 1 s
  const int64_t to = at_utc(2027, 1, 1, 5) - 1;
  // The spring day lacks an hour, the autumn day repeats one: as many as a plain year.
  CHECK(dues_between(cron("*/15 * * * *"), tz, from, to).size() == 365 * 96);
  CHECK(dues_between(cron("* * * * *"), tz, from, to).size() == 365 * 1440);
  // A fixed-time job: one a day, the spring day's at the gap's end.
  CHECK(dues_between(cron("30 2 * * *"), tz, from, to).size() == 365);
  CHECK(dues_between(cron("30 1 * * *"), tz, from, to).size() == 365);
  CHECK(dues_between(cron("@daily"), tz, from, to).size() == 365);
}

TEST_CASE("Pacific/Apia skipped 30 December 2011: a whole day in the gap", "[cron]") {
  const TimeZone tz = cron_zone("Pacific/Apia");
  const int64_t jump = 1325239200;  // 2011-12-29 24:00 -10 -> 2011-12-31 00:00 +14
  CHECK(tz.max_offset_change() >= 24 * 3600);
  CHECK(next_at(cron("0 12 30 12 *"), tz, jump - 86400) == jump);
  CHECK(next_at(cron("0 12 30 12 *"), tz, jump) == at_utc(2012, 12, 29, 22));  // +14 (summer)
  CHECK(previous_at(cron("0 12 30 12 *"), tz, jump + 3600) == jump);
  CHECK(next_at(cron("0 12 * * *"), tz, jump - 3600) == jump);  // the 30th's noon, collapsed
  CHECK(next_at(cron("0 12 * * *"), tz, jump) == jump + 12 * 3600);
  // A wildcard job has nothing on the 30th.
  CHECK(next_at(cron("*/30 * * * *"), tz, jump - 1800) == jump);
  CHECK(previous_at(cron("*/30 * * * *"), tz, jump - 1) == jump - 1800);
  CHECK(dues_between(cron("0 * 30 12 *"), tz, jump - 2 * 86400, jump + 2 * 86400).empty());
}

TEST_CASE("a zone whose day starts with a gap: midnight jobs", "[cron]") {
  // America/Santiago moves from 24:00 to 01:00 on 2026-09-06 (04:00 UTC): midnight is skipped.
  const TimeZone tz = cron_zone("America/Santiago");
  const int64_t ahead = at_utc(2026, 9, 6, 4);
  CHECK(tz.offset_at(ahead) == -10800);
  CHECK(next_at(cron("@daily"), tz, ahead - 3600) == ahead);
  CHECK(next_at(cron("@daily"), tz, ahead) == at_utc(2026, 9, 7, 3));
  CHECK(next_at(cron("0 0 6 9 *"), tz, ahead - 86400) == ahead);
  // @hourly is a wildcard job: its skipped midnight is not due.
  CHECK(next_at(cron("@hourly"), tz, ahead - 3600) == ahead);  // 01:00 local
  CHECK(dues_between(cron("@hourly"), tz, ahead - 2 * 3600, ahead) ==
        std::vector<int64_t>{ahead - 3600, ahead});
}

namespace {

// A random field: '*', a list of values, ranges and steps, within [low, high].
std::string random_field(std::mt19937_64& random, int low, int high) {
  auto value = [&] { return low + static_cast<int>(random() % (high - low + 1)); };
  switch (random() % 4) {
    case 0:
      return "*";
    case 1:
      return "*/" + std::to_string(1 + random() % 12);
    default:
      break;
  }
  std::string out;
  const int pieces = 1 + static_cast<int>(random() % 3);
  for (int i = 0; i < pieces; ++i) {
    if (i > 0) out += ',';
    int a = value(), b = value();
    if (a > b) std::swap(a, b);
    if (random() % 2 == 0) {
      out += std::to_string(a);
    } else {
      out += std::to_string(a) + "-" + std::to_string(b);
      if (random() % 2 == 0) out += "/" + std::to_string(1 + random() % 5);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("random schedules at random instants: next and previous agree", "[cron]") {
  std::mt19937_64 random(3838);
  const TimeZone zones[] = {TimeZone::utc(), cron_zone("America/New_York"),
                            cron_zone("Australia/Lord_Howe"), cron_zone("Europe/Dublin")};
  for (int i = 0; i < 400; ++i) {
    const std::string text = random_field(random, 0, 59) + " " + random_field(random, 0, 23) + " " +
                             random_field(random, 1, 31) + " " + random_field(random, 1, 12) + " " +
                             random_field(random, 0, 7);
    const CronSchedule s = cron(text);
    const TimeZone& tz = zones[i % 4];
    for (int j = 0; j < 10; ++j) {
      const int64_t t = at_utc(2020, 1, 1) + static_cast<int64_t>(random() % (20LL * 365 * 86400));
      INFO(text << " in " << tz.name() << " at " << t);
      const auto next = next_due(s, tz, t);
      const auto prev = previous_due(s, tz, t);
      if (next) {
        REQUIRE(*next > t);
        const int64_t local = *next + tz.offset_at(*next);
        // Due at a matching local minute, or (fixed-time) at the end of a gap.
        if (!s.matches_local(local)) {
          REQUIRE_FALSE(s.wildcard());
          REQUIRE(tz.segment_at(*next).start == *next);
        }
        REQUIRE(previous_due(s, tz, *next) == next);
        REQUIRE(next_due(s, tz, *next - 1) == next);
        if (*next - t < 3 * 86400) {
          const auto expected = reference_dues(s, tz, t + tz.offset_at(t) - 86400, local + 86400);
          auto it = std::upper_bound(expected.begin(), expected.end(), t);
          REQUIRE(it != expected.end());
          REQUIRE(*it == *next);
        }
      }
      if (prev) {
        REQUIRE(*prev <= t);
        // (Unless the next is more than the 5 years the search looks ahead from prev.)
        if (!next || *next - *prev < 5 * 365 * 86400) REQUIRE(next_due(s, tz, *prev) == next);
        REQUIRE(previous_due(s, tz, *prev) == prev);
      }
    }
  }
}

}  // namespace unit_cron
