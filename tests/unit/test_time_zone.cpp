// Time zones from TZif data, the POSIX TZ footer, and the civil calendar (util/time_zone.hpp).
// The expected offsets and transitions were taken from python3's zoneinfo and `zdump -v` on
// Debian 12's tzdata; no case depends on the host's own zone.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "env_guard.hpp"
#include "temp_dir.hpp"
#include "util/time_zone.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_time_zone {

using idem::test::EnvGuard;
using idem::util::civil_from_days;
using idem::util::civil_from_seconds;
using idem::util::days_from_civil;
using idem::util::load_time_zone;
using idem::util::seconds_from_civil;
using idem::util::TimeZone;
using idem::util::weekday_from_days;

TimeZone zone(const std::string& name) {
  std::string error;
  auto tz = load_time_zone(name, &error);
  INFO(error);
  REQUIRE(tz);
  return *tz;
}

int64_t utc(int y, int mo, int d, int h = 0, int mi = 0, int s = 0) {
  return seconds_from_civil(y, mo, d, h, mi, s);
}

// TZif data built by hand: a version 1 block with 32-bit times and, for version 2 and later,
// the 64-bit block and the footer.
struct TzifType {
  int32_t utoff;
  uint8_t isdst;
};

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string tzif_block(char version, const std::vector<int64_t>& times,
                       const std::vector<uint8_t>& idx, const std::vector<TzifType>& types,
                       int time_size) {
  std::string out = "TZif";
  out.push_back(version);
  out.append(15, '\0');
  put_be(out, 0, 4);  // isutcnt
  put_be(out, 0, 4);  // isstdcnt
  put_be(out, 0, 4);  // leapcnt
  put_be(out, times.size(), 4);
  put_be(out, types.size(), 4);
  put_be(out, 4, 4);  // charcnt: "ABC\0"
  for (int64_t t : times) put_be(out, static_cast<uint64_t>(t), time_size);
  for (uint8_t i : idx) out.push_back(static_cast<char>(i));
  for (const TzifType& t : types) {
    put_be(out, static_cast<uint32_t>(t.utoff), 4);
    out.push_back(static_cast<char>(t.isdst));
    out.push_back('\0');
  }
  out.append("ABC", 4);
  return out;
}

std::string tzif(char version, const std::vector<int64_t>& times, const std::vector<uint8_t>& idx,
                 const std::vector<TzifType>& types, const std::string& footer) {
  std::string out = tzif_block(version, times, idx, types, 4);
  if (version == '\0') return out;
  out += tzif_block(version, times, idx, types, 8);
  out += "\n" + footer + "\n";
  return out;
}

std::string read_zone_file(const std::string& name) {
  std::ifstream in("/usr/share/zoneinfo/" + name, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The offset changes at `at` from `before` to `after`.
void check_change(const TimeZone& tz, int64_t at, int64_t before, int64_t after) {
  INFO(tz.name() << " at " << at);
  CHECK(tz.offset_at(at - 1) == before);
  CHECK(tz.offset_at(at) == after);
  const auto seg = tz.segment_at(at);
  CHECK(seg.start == at);
  CHECK(seg.previous_offset == before);
}

// Every instant resolve() gives for a local time has that local time, and an instant's own
// local time resolves back to it.
void check_round_trip(const TimeZone& tz, int64_t u) {
  const int64_t local = u + tz.offset_at(u);
  const std::vector<int64_t> back = tz.resolve(local);
  INFO(tz.name() << " at " << u);
  CHECK(std::find(back.begin(), back.end(), u) != back.end());
  for (int64_t b : back) CHECK(b + tz.offset_at(b) == local);
}

TEST_CASE("civil calendar: days and dates both ways, weekdays", "[time_zone]") {
  CHECK(days_from_civil(1970, 1, 1) == 0);
  CHECK(days_from_civil(2000, 3, 1) == 11017);
  CHECK(days_from_civil(1969, 12, 31) == -1);
  CHECK(days_from_civil(1600, 2, 29) == -135081);
  CHECK(weekday_from_days(0) == 4);  // a Thursday
  CHECK(weekday_from_days(-1) == 3);
  CHECK(weekday_from_days(-4) == 0);
  CHECK(weekday_from_days(-5) == 6);
  CHECK(weekday_from_days(days_from_civil(2026, 3, 8)) == 0);  // a Sunday
  for (int64_t d = -800000; d <= 800000; d += 97) {
    const auto c = civil_from_days(d);
    REQUIRE(days_from_civil(c.year, c.month, c.day) == d);
    REQUIRE(weekday_from_days(d) == ((d % 7 + 7 + 4) % 7));
  }
  const auto t = civil_from_seconds(utc(2026, 12, 6, 7, 8, 9));
  CHECK(t.year == 2026);
  CHECK(t.month == 12);
  CHECK(t.day == 6);
  CHECK(t.hour == 7);
  CHECK(t.minute == 8);
  CHECK(t.second == 9);
  CHECK(t.weekday == 0);
  const auto before = civil_from_seconds(-1);
  CHECK(before.year == 1969);
  CHECK(before.month == 12);
  CHECK(before.day == 31);
  CHECK(before.hour == 23);
  CHECK(before.minute == 59);
  CHECK(before.second == 59);
  CHECK(before.weekday == 3);
  CHECK(seconds_from_civil(1970, 1, 1, 0, 0, 0) == 0);
  CHECK(seconds_from_civil(2026, 3, 8, 7, 0, 0) == 1772953200);
  CHECK(idem::util::days_in_month(2024, 2) == 29);
  CHECK(idem::util::days_in_month(2100, 2) == 28);
  CHECK(idem::util::days_in_month(2000, 2) == 29);
}

TEST_CASE("TimeZone::utc and fixed: one offset, every local time once", "[time_zone]") {
  const TimeZone tz = TimeZone::utc();
  CHECK(tz.name() == "UTC");
  CHECK(tz.offset_at(0) == 0);
  CHECK(tz.offset_at(utc(2026, 6, 1)) == 0);
  CHECK(tz.resolve(12345) == std::vector<int64_t>{12345});
  CHECK(tz.max_offset_change() == 0);
  const TimeZone plus = TimeZone::fixed("X", 19800);
  CHECK(plus.offset_at(-1000000000) == 19800);
  CHECK(plus.resolve(19800) == std::vector<int64_t>{0});
}

TEST_CASE("America/New_York: 2026's changes, before 1970, past 2037", "[time_zone]") {
  const TimeZone tz = zone("America/New_York");
  CHECK(tz.name() == "America/New_York");
  const int64_t spring = 1772953200;  // 2026-03-08 07:00 UTC: 02:00 EST -> 03:00 EDT
  const int64_t fall = 1793512800;    // 2026-11-01 06:00 UTC: 02:00 EDT -> 01:00 EST
  check_change(tz, spring, -18000, -14400);
  check_change(tz, fall, -14400, -18000);
  CHECK(tz.max_offset_change() == 3600);

  // 02:30 on 8 March does not exist: the gap ends at the change.
  int64_t gap_end = 0;
  CHECK(tz.resolve(utc(2026, 3, 8, 2, 30), &gap_end).empty());
  CHECK(gap_end == spring);
  CHECK(tz.resolve(utc(2026, 3, 8, 2, 0), &gap_end).empty());
  CHECK(tz.resolve(utc(2026, 3, 8, 1, 59)) == std::vector<int64_t>{spring - 60});
  CHECK(tz.resolve(utc(2026, 3, 8, 3, 0)) == std::vector<int64_t>{spring});
  // 01:30 on 1 November happens twice, an hour apart.
  CHECK(tz.resolve(utc(2026, 11, 1, 1, 30)) == std::vector<int64_t>{fall - 1800, fall + 1800});
  CHECK(tz.resolve(utc(2026, 11, 1, 1, 0)) == std::vector<int64_t>{fall - 3600, fall});
  CHECK(tz.resolve(utc(2026, 11, 1, 2, 0)) == std::vector<int64_t>{fall + 3600});
  CHECK(tz.resolve(utc(2026, 11, 1, 0, 59)) == std::vector<int64_t>{fall - 3660});

  const auto seg = tz.segment_at(utc(2026, 6, 1));
  CHECK(seg.start == spring);
  CHECK(seg.end == fall);
  CHECK(seg.offset == -14400);
  CHECK(seg.previous_offset == -18000);

  // Before 1970: summer time in 1960; local mean time before 1883.
  CHECK(tz.offset_at(utc(1960, 7, 1)) == -14400);
  CHECK(tz.offset_at(utc(1960, 1, 1)) == -18000);
  CHECK(tz.offset_at(utc(1850, 7, 1)) == -17762);
  // Past the table of the file: the footer's rule (2050-03-13 and 2050-11-06).
  check_change(tz, 2530767600, -18000, -14400);
  check_change(tz, 2551327200, -14400, -18000);
  CHECK(tz.resolve(utc(2050, 3, 13, 2, 30), &gap_end).empty());
  CHECK(gap_end == 2530767600);
}

TEST_CASE("Europe/Berlin: last Sundays of March and October", "[time_zone]") {
  const TimeZone tz = zone("Europe/Berlin");
  const int64_t spring = 1774746000;  // 2026-03-29 01:00 UTC
  const int64_t fall = 1792890000;    // 2026-10-25 01:00 UTC
  check_change(tz, spring, 3600, 7200);
  check_change(tz, fall, 7200, 3600);
  int64_t gap_end = 0;
  CHECK(tz.resolve(utc(2026, 3, 29, 2, 15), &gap_end).empty());
  CHECK(gap_end == spring);
  CHECK(tz.resolve(utc(2026, 10, 25, 2, 15)) == std::vector<int64_t>{fall - 2700, fall + 900});
  // Beyond the expanded table (2200): the rule computed on the fly, 2301-03-31 and 2301-10-27.
  check_change(tz, 10453021200, 3600, 7200);
  check_change(tz, 10471165200, 7200, 3600);
  const auto seg = tz.segment_at(10453021200 + 86400);
  CHECK(seg.start == 10453021200);
  CHECK(seg.end == 10471165200);
  CHECK(seg.previous_offset == 3600);
  CHECK(tz.resolve(10471165200 + 7200 - 1800) ==
        std::vector<int64_t>{10471165200 - 1800, 10471165200 + 1800});
}

TEST_CASE("Australia/Sydney: summer time across the new year", "[time_zone]") {
  const TimeZone tz = zone("Australia/Sydney");
  const int64_t end = 1775318400;    // 2026-04-04 16:00 UTC: 03:00 AEDT -> 02:00 AEST
  const int64_t start = 1791043200;  // 2026-10-03 16:00 UTC: 02:00 AEST -> 03:00 AEDT
  CHECK(tz.offset_at(utc(2026, 1, 1)) == 39600);
  CHECK(tz.offset_at(utc(2026, 7, 1)) == 36000);
  CHECK(tz.offset_at(utc(2026, 12, 31)) == 39600);
  check_change(tz, end, 39600, 36000);
  check_change(tz, start, 36000, 39600);
  int64_t gap_end = 0;
  CHECK(tz.resolve(utc(2026, 10, 4, 2, 30), &gap_end).empty());
  CHECK(gap_end == start);
  CHECK(tz.resolve(utc(2026, 4, 5, 2, 30)) == std::vector<int64_t>{end - 1800, end + 1800});
  const auto seg = tz.segment_at(utc(2026, 12, 25));
  CHECK(seg.start == start);
  CHECK(seg.offset == 39600);
  CHECK(tz.offset_at(seg.end) == 36000);
  CHECK(civil_from_seconds(seg.end).year == 2027);
}

TEST_CASE("Australia/Lord_Howe: a half-hour change", "[time_zone]") {
  const TimeZone tz = zone("Australia/Lord_Howe");
  const int64_t end = 1775314800;    // 2026-04-04 15:00 UTC: 02:00 +11 -> 01:30 +1030
  const int64_t start = 1791041400;  // 2026-10-03 15:30 UTC: 02:00 +1030 -> 02:30 +11
  check_change(tz, end, 39600, 37800);
  check_change(tz, start, 37800, 39600);
  int64_t gap_end = 0;
  CHECK(tz.resolve(utc(2026, 10, 4, 2, 15), &gap_end).empty());
  CHECK(gap_end == start);
  CHECK(tz.resolve(utc(2026, 10, 4, 2, 30)) == std::vector<int64_t>{start});
  CHECK(tz.resolve(utc(2026, 4, 5, 1, 45)) == std::vector<int64_t>{end - 900, end + 900});
  CHECK(tz.resolve(utc(2026, 4, 5, 1, 29)).size() == 1);
  // Past the table: 2300-03-31 15:00 and 2300-10-06 15:30 UTC.
  check_change(tz, 10421535600, 39600, 37800);
  check_change(tz, 10437867000, 37800, 39600);
}

TEST_CASE("Asia/Kolkata: +05:30 without daylight saving now, other offsets before", "[time_zone]") {
  const TimeZone tz = zone("Asia/Kolkata");
  CHECK(tz.offset_at(utc(2026, 3, 8)) == 19800);
  CHECK(tz.offset_at(utc(2026, 11, 1)) == 19800);
  CHECK(tz.offset_at(utc(2100, 1, 1)) == 19800);
  CHECK(tz.offset_at(utc(1944, 7, 1)) == 23400);
  CHECK(tz.offset_at(utc(1850, 7, 1)) == 21208);
  CHECK(tz.resolve(utc(2026, 6, 1, 12, 0)) == std::vector<int64_t>{utc(2026, 6, 1, 6, 30)});
  check_change(tz, -872058600, 23400, 19800);  // 1942-05-14 17:30 UTC
}

TEST_CASE("offset_at agrees with python's zoneinfo across six centuries", "[time_zone]") {
  struct Case {
    const char* zone;
    std::vector<std::pair<int64_t, int64_t>> at_offset;
  };
  // python3 -c 'zoneinfo ... utcoffset()' at random instants of 1850-2450 and 1990-2060.
  // clang-format off
  const std::vector<Case> cases = {
    {"America/New_York",
     {{11844594890, -14400}, {-675985845, -14400}, {5087571001, -14400}, {12095374680, -14400},
      {-2176506040, -18000}, {14123580103, -14400}, {2111056283, -18000}, {2040067262, -14400},
      {1777750704, -14400}, {2046252021, -14400}, {1953394749, -18000}, {2662889094, -14400}}},
    {"Europe/Berlin",
     {{2229305561, 7200}, {13755407360, 3600}, {2606270893, 7200}, {-2728345034, 3208},
      {6436890745, 3600}, {-1620179316, 7200}, {1258360201, 3600}, {2673554590, 7200},
      {1071172682, 3600}, {1705756649, 3600}, {1122913847, 7200}, {1181602947, 7200}}},
    {"Australia/Sydney",
     {{12936191287, 39600}, {-3414108136, 36292}, {12412200442, 36000}, {5588358227, 39600},
      {10896625063, 36000}, {1641428838, 39600}, {2493013849, 39600}, {1765652229, 39600},
      {1335220075, 36000}, {2232425465, 36000}, {968662190, 39600}, {1658505828, 36000}}},
    {"Australia/Lord_Howe",
     {{2946187914, 37800}, {474377830, 41400}, {12735855726, 37800}, {-3500239487, 38180},
      {8714004224, 39600}, {666366853, 39600}, {2254153485, 37800}, {1257356225, 39600},
      {2528115209, 39600}, {908799074, 37800}, {1324419713, 39600}, {831375452, 37800}}},
    {"Asia/Kolkata",
     {{11429960511, 19800}, {-354962229, 19800}, {9722379851, 19800}, {1640736654, 19800},
      {4943970477, 19800}, {7763608722, 19800}, {748459548, 19800}, {999990709, 19800},
      {2615519243, 19800}, {1525919274, 19800}, {1845834989, 19800}, {1754035456, 19800}}},
    {"America/Santiago",
     {{9672103873, -14400}, {-2991999652, -16965}, {7080380110, -14400}, {3555654636, -14400},
      {-2166192022, -16965}, {13797385934, -10800}, {965166019, -14400}, {2533555681, -14400},
      {2284212909, -14400}, {1856186765, -10800}, {660443832, -10800}, {2387303383, -14400}}},
    {"Europe/London",
     {{11791406331, 3600}, {6693558600, 0}, {1305576138, 3600}, {15124878330, 3600},
      {-734276005, 3600}, {14784522275, 3600}, {1837238335, 0}, {1357298743, 0},
      {725083793, 0}, {1672317302, 0}, {1537671482, 3600}, {1962779991, 0}}},
    {"Africa/Casablanca",
     {{-1240547737, 0}, {-2210506511, -1820}, {10923913846, 3600}, {11271454835, 3600},
      {3198694737, 3600}, {14357542491, 3600}, {2148939608, 3600}, {1796180339, 3600},
      {1089396891, 0}, {1292362472, 0}, {1748407813, 3600}, {2104819866, 3600}}},
    {"Pacific/Apia",
     {{97809083, -39600}, {6454934438, 46800}, {5887085473, 46800}, {8743516140, 46800},
      {13262646422, 46800}, {9633104561, 46800}, {2480839609, 46800}, {2535537975, 46800},
      {2552768572, 46800}, {1640035372, 46800}, {1409139811, 46800}, {2184778372, 46800}}},
    {"America/Sao_Paulo",
     {{13391409088, -10800}, {5936414636, -10800}, {1689455988, -10800}, {13222797067, -10800},
      {-714387576, -10800}, {234828232, -10800}, {2136754849, -10800}, {2719669190, -10800},
      {1942061116, -10800}, {1778904656, -10800}, {1309140059, -10800}, {1906478215, -10800}}},
    {"Asia/Tehran",
     {{-3776277535, 12344}, {528600577, 12600}, {6976806170, 12600}, {-237595583, 12600},
      {9711175154, 12600}, {8358246545, 12600}, {772748334, 16200}, {920234517, 12600},
      {2425066919, 12600}, {1640041109, 12600}, {2414629041, 12600}, {875769706, 12600}}},
    {"Europe/Dublin",
     {{1242993468, 3600}, {1034803004, 3600}, {12772793718, 3600}, {11410608487, 3600},
      {7809264316, 3600}, {-3175683101, -1521}, {1833019184, 0}, {2748208555, 0},
      {644896493, 3600}, {1411111043, 3600}, {699000528, 0}, {1780373581, 3600}}},
    {"America/Godthab",
     {{-1534631638, -10800}, {-266939045, -10800}, {10934620505, -3600}, {14028318984, -3600},
      {-1887132321, -12416}, {8097471817, -3600}, {1452223853, -10800}, {1498815983, -7200},
      {1420110347, -10800}, {1858235105, -7200}, {2795188510, -3600}, {1670738849, -10800}}},
  };
  // clang-format on
  for (const Case& c : cases) {
    const TimeZone tz = zone(c.zone);
    for (const auto& [at, offset] : c.at_offset) {
      INFO(c.zone << " at " << at);
      CHECK(tz.offset_at(at) == offset);
      CHECK(tz.segment_at(at).offset == offset);
      check_round_trip(tz, at);
    }
  }
}

TEST_CASE("segments tile time and resolve inverts offset_at", "[time_zone]") {
  for (const char* name : {"America/New_York", "Europe/Berlin", "Australia/Sydney",
                           "Australia/Lord_Howe", "Asia/Kolkata", "Europe/Dublin",
                           "America/Santiago", "Pacific/Apia", "Africa/Casablanca", "UTC"}) {
    const TimeZone tz = zone(name);
    // Walk the segments from 1900 to 2500: each starts where the last ended, with its offset.
    auto seg = tz.segment_at(utc(1900, 1, 1));
    int64_t changes = 0;
    while (seg.end < utc(2500, 1, 1)) {
      const auto next = tz.segment_at(seg.end);
      INFO(name << " at " << seg.end);
      REQUIRE(next.start == seg.end);
      REQUIRE(next.previous_offset == seg.offset);
      REQUIRE(next.offset != seg.offset);
      REQUIRE(tz.offset_at(seg.end - 1) == seg.offset);
      REQUIRE(tz.offset_at(seg.end) == next.offset);
      const int64_t change = next.offset - seg.offset;
      REQUIRE(std::abs(change) <= tz.max_offset_change());
      // Local times around the change: the gap resolves to nothing and names the change.
      if (change > 0) {
        int64_t gap_end = 0;
        REQUIRE(tz.resolve(seg.end + seg.offset, &gap_end).empty());
        REQUIRE(gap_end == seg.end);
        REQUIRE(tz.resolve(seg.end + next.offset - 1, &gap_end).empty());
      } else {
        REQUIRE(tz.resolve(seg.end + next.offset).size() == 2);
      }
      seg = next;
      ++changes;
    }
    if (std::string(name) == "UTC") CHECK(changes == 0);
    if (std::string(name) == "Europe/Berlin") CHECK(changes > 2 * 400);
  }
  std::mt19937_64 random(38);
  for (const char* name : {"America/New_York", "Australia/Lord_Howe", "Europe/Dublin"}) {
    const TimeZone tz = zone(name);
    for (int i = 0; i < 2000; ++i) {
      check_round_trip(tz, static_cast<int64_t>(random() % 30000000000ULL) - 5000000000);
    }
  }
}

TEST_CASE("parse_posix_tz: names, offsets, rules", "[time_zone]") {
  std::string error;
  auto r = TimeZone::parse_posix_tz("EST5EDT,M3.2.0,M11.1.0", &error);
  REQUIRE(r);
  CHECK(r->std_offset == -18000);
  CHECK(r->has_dst);
  CHECK(r->dst_offset == -14400);
  CHECK(r->start.kind == TimeZone::Rule::Date::month_week_day);
  CHECK(r->start.month == 3);
  CHECK(r->start.week == 2);
  CHECK(r->start.weekday == 0);
  CHECK(r->start.time == 7200);

  r = TimeZone::parse_posix_tz("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", &error);
  REQUIRE(r);
  CHECK(r->std_offset == 37800);
  CHECK(r->dst_offset == 39600);

  r = TimeZone::parse_posix_tz("<-03>3<-02>,M3.5.0/-2,M10.5.0/-1", &error);
  REQUIRE(r);
  CHECK(r->std_offset == -10800);
  CHECK(r->dst_offset == -7200);
  CHECK(r->start.time == -7200);
  CHECK(r->end.time == -3600);

  r = TimeZone::parse_posix_tz("IST-2IDT,M3.4.4/26,M10.5.0", &error);
  REQUIRE(r);
  CHECK(r->start.time == 26 * 3600);

  r = TimeZone::parse_posix_tz("XXX3YYY,J60/1:30:15,300/167", &error);
  REQUIRE(r);
  CHECK(r->start.kind == TimeZone::Rule::Date::julian_no_leap);
  CHECK(r->start.day == 60);
  CHECK(r->start.time == 5415);
  CHECK(r->end.kind == TimeZone::Rule::Date::zero_based);
  CHECK(r->end.day == 300);
  CHECK(r->end.time == 167 * 3600);

  r = TimeZone::parse_posix_tz("<+0530>-5:30", &error);
  REQUIRE(r);
  CHECK(r->std_offset == 19800);
  CHECK_FALSE(r->has_dst);

  r = TimeZone::parse_posix_tz("CET-1CEST", &error);  // no rule: the US rules, as glibc
  REQUIRE(r);
  CHECK(r->start.month == 3);
  CHECK(r->end.month == 11);

  for (const char* bad :
       {"", "EST", "ES5", "EST5EDT,M3.2.0", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.6.0,M11.1.0",
        "EST5EDT,M3.2.7,M11.1.0", "EST25", "EST5EDT,J0,J365", "EST5EDT,M3.2.0/168,M11.1.0", "<AB>5",
        "<ABC5", "EST5:60", "EST5EDT,M3.2.0,M11.1.0,", "EST5 ", "EST5EDT4x"}) {
    INFO(bad);
    CHECK_FALSE(TimeZone::parse_posix_tz(bad, &error));
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("from_tzif: version 1 data, footers, zones without transitions", "[time_zone]") {
  std::string error;
  // Version 1: no footer, the last type holds for ever.
  auto v1 = TimeZone::from_tzif("v1", tzif('\0', {1000, 2000}, {1, 0}, {{3600, 0}, {7200, 1}}, ""),
                                &error);
  INFO(error);
  REQUIRE(v1);
  CHECK(v1->offset_at(999) == 3600);  // type 0 before the first transition
  CHECK(v1->offset_at(1000) == 7200);
  CHECK(v1->offset_at(2000) == 3600);
  CHECK(v1->offset_at(int64_t(1) << 40) == 3600);
  CHECK(v1->max_offset_change() == 3600);

  // Version 2 without transitions, a daylight-saving footer: the rule from the start.
  auto us =
      TimeZone::from_tzif("us", tzif('2', {}, {}, {{-18000, 0}}, "EST5EDT,M3.2.0,M11.1.0"), &error);
  REQUIRE(us);
  CHECK(us->offset_at(1772953200 - 1) == -18000);
  CHECK(us->offset_at(1772953200) == -14400);
  CHECK(us->offset_at(utc(1990, 7, 1)) == -14400);  // the rule as written, also back then

  // Daylight saving all year: the rule changes nothing, the offset stays.
  auto all_year =
      TimeZone::from_tzif("dst", tzif('3', {0}, {0}, {{-14400, 1}}, "EST5EDT,0/0,J365/25"), &error);
  REQUIRE(all_year);
  CHECK(all_year->offset_at(utc(2026, 1, 1)) == -14400);
  CHECK(all_year->offset_at(utc(2026, 7, 1)) == -14400);
  CHECK(all_year->offset_at(utc(2400, 12, 31, 23)) == -14400);

  // A fixed footer that disagrees with the last type governs from the last transition.
  auto fixed =
      TimeZone::from_tzif("f", tzif('2', {100}, {1}, {{0, 0}, {3600, 0}}, "<+02>-2"), &error);
  REQUIRE(fixed);
  CHECK(fixed->offset_at(99) == 0);
  CHECK(fixed->offset_at(100) == 7200);
  // An empty footer: the last type.
  auto empty = TimeZone::from_tzif("e", tzif('2', {100}, {1}, {{0, 0}, {3600, 0}}, ""), &error);
  REQUIRE(empty);
  CHECK(empty->offset_at(1000) == 3600);
  // Transitions that change nothing but the abbreviation or isdst are no transitions.
  auto same =
      TimeZone::from_tzif("s", tzif('2', {100, 200}, {1, 0}, {{0, 0}, {0, 1}}, "UTC0"), &error);
  REQUIRE(same);
  CHECK(same->segment_at(150).start == TimeZone::k_min_time);
  CHECK(same->max_offset_change() == 0);
}

TEST_CASE("from_tzif: bad or truncated data is an error, never a crash", "[time_zone]") {
  std::string error;
  CHECK_FALSE(TimeZone::from_tzif("x", "", &error));
  CHECK(error == "truncated TZif header");
  CHECK_FALSE(TimeZone::from_tzif("x", std::string(60, 'a'), &error));
  CHECK(error.find("magic") != std::string::npos);
  const std::string good = tzif('2', {100}, {0}, {{0, 0}}, "UTC0");
  REQUIRE(TimeZone::from_tzif("x", good, &error));

  // Every prefix of a real file fails cleanly (its footer ends it).
  const std::string ny = read_zone_file("America/New_York");
  for (size_t n = 0; n < ny.size(); ++n) {
    INFO(n);
    REQUIRE_FALSE(TimeZone::from_tzif("x", std::string_view(ny).substr(0, n), &error));
    REQUIRE_FALSE(error.empty());
  }
  REQUIRE(TimeZone::from_tzif("x", ny, &error));

  // Handmade faults.
  CHECK_FALSE(TimeZone::from_tzif("x", tzif('2', {100}, {1}, {{0, 0}}, "UTC0"), &error));
  CHECK(error.find("type") != std::string::npos);
  CHECK_FALSE(TimeZone::from_tzif("x", tzif('2', {200, 100}, {0, 0}, {{0, 0}}, "UTC0"), &error));
  CHECK(error.find("ascending") != std::string::npos);
  CHECK_FALSE(TimeZone::from_tzif("x", tzif('2', {}, {}, {}, "UTC0"), &error));
  CHECK_FALSE(TimeZone::from_tzif("x", tzif('2', {}, {}, {{100000, 0}}, "UTC0"), &error));
  CHECK_FALSE(TimeZone::from_tzif("x", tzif('2', {}, {}, {{0, 2}}, "UTC0"), &error));
  CHECK_FALSE(TimeZone::from_tzif("x", tzif('2', {}, {}, {{0, 0}}, "bad footer"), &error));
  CHECK(error.find("footer") != std::string::npos);
  CHECK_FALSE(
      TimeZone::from_tzif("x", tzif('2', {int64_t(1) << 62}, {0}, {{0, 0}}, "UTC0"), &error));
  std::string no_footer = tzif('2', {}, {}, {{0, 0}}, "UTC0");
  no_footer.resize(no_footer.size() - 6);
  CHECK_FALSE(TimeZone::from_tzif("x", no_footer, &error));
  std::string version = good;
  version[4] = '1';
  CHECK_FALSE(TimeZone::from_tzif("x", version, &error));

  // Random corruption of a real file: parsed or refused, and a parsed zone answers sanely.
  std::mt19937_64 random(38);
  for (int i = 0; i < 3000; ++i) {
    std::string data = ny;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int f = 0; f < flips; ++f) {
      data[random() % data.size()] = static_cast<char>(random() & 0xFF);
    }
    auto tz = TimeZone::from_tzif("x", data, &error);
    if (tz) {
      for (int64_t t : {int64_t(0), utc(2026, 3, 8, 7), utc(2300, 1, 1), utc(1800, 1, 1)}) {
        const int64_t off = tz->offset_at(t);
        CHECK(std::abs(off) < 100000);
        (void)tz->resolve(t);
      }
    }
  }
}

TEST_CASE("load_time_zone: names, TZDIR, UTC without files, one-line errors", "[time_zone]") {
  std::string error;
  for (const char* bad :
       {"", "/etc/passwd", "../etc/passwd", "Europe/../../etc/passwd", "Europe//Paris",
        "Europe/Paris/", "Europe/./Paris", "Euro pe", "Europe/Paris\n", "Europe\\Paris", "."}) {
    INFO(bad);
    CHECK_FALSE(load_time_zone(bad, &error));
    CHECK(error.find("time zone \"") == 0);
    CHECK(error.find('\n') == std::string::npos);
  }
  CHECK_FALSE(load_time_zone("Nowhere/Town", &error));
  CHECK(error ==
        "time zone \"Nowhere/Town\": no such zone (/usr/share/zoneinfo/Nowhere/Town "
        "not found)");
  CHECK_FALSE(load_time_zone("Europe", &error));
  CHECK(error.find("not a file") != std::string::npos);
  CHECK_FALSE(load_time_zone("right/Europe/Paris", &error));
  CHECK(error.find("leap seconds") != std::string::npos);
  CHECK_FALSE(load_time_zone("Europe/Paris/x", &error));
  CHECK(error.find("no such zone") != std::string::npos);

  auto utc_zone = load_time_zone("UTC", &error);
  REQUIRE(utc_zone);
  CHECK(utc_zone->offset_at(utc(2026, 7, 1)) == 0);

  idem::test::TempDir dir;
  {
    EnvGuard tzdir("TZDIR", dir.path());
    auto plain = load_time_zone("UTC", &error);
    REQUIRE(plain);  // no file there: built in
    CHECK(plain->name() == "UTC");
    auto etc = load_time_zone("Etc/UTC", &error);
    REQUIRE(etc);
    CHECK(etc->name() == "Etc/UTC");
    CHECK_FALSE(load_time_zone("Europe/Paris", &error));
    CHECK(error.find(dir.path()) != std::string::npos);
    std::ofstream(dir / "Mine", std::ios::binary)
        << tzif('2', {}, {}, {{19800, 0}}, "<+0530>-5:30");
    auto mine = load_time_zone("Mine", &error);
    REQUIRE(mine);
    CHECK(mine->offset_at(0) == 19800);
    std::ofstream(dir / "Broken", std::ios::binary) << "TZif2";
    CHECK_FALSE(load_time_zone("Broken", &error));
    CHECK(error.find("time zone \"Broken\": ") == 0);
    CHECK(error.find("truncated") != std::string::npos);
  }
}

TEST_CASE("local_zone_name: $TZ, then /etc/timezone, then the /etc/localtime link", "[time_zone]") {
  using idem::util::local_zone_name;
  idem::test::TempDir dir;
  const std::string timezone = dir / "timezone";
  const std::string localtime = dir / "localtime";
  CHECK(local_zone_name(nullptr, timezone, localtime) == "UTC");
  REQUIRE(::symlink("/usr/share/zoneinfo/Asia/Tokyo", localtime.c_str()) == 0);
  CHECK(local_zone_name(nullptr, timezone, localtime) == "Asia/Tokyo");
  std::ofstream(timezone) << "  Europe/Paris \nsecond line\n";
  CHECK(local_zone_name(nullptr, timezone, localtime) == "Europe/Paris");
  CHECK(local_zone_name("", timezone, localtime) == "Europe/Paris");
  CHECK(local_zone_name(":America/New_York", timezone, localtime) == "America/New_York");
  CHECK(local_zone_name("Australia/Lord_Howe", timezone, localtime) == "Australia/Lord_Howe");
  CHECK(local_zone_name(":/usr/share/zoneinfo/Asia/Kolkata", timezone, localtime) ==
        "Asia/Kolkata");
  // A POSIX TZ string or a path outside zoneinfo is no zone name: the files decide.
  CHECK(local_zone_name("EST5EDT,M3.2.0,M11.1.0", timezone, localtime) == "Europe/Paris");
  CHECK(local_zone_name(":/etc/mytime", timezone, localtime) == "Europe/Paris");
  std::ofstream(timezone) << "../etc/passwd\n";
  CHECK(local_zone_name(nullptr, timezone, localtime) == "Asia/Tokyo");
  std::ofstream(timezone) << "";
  CHECK(local_zone_name(nullptr, timezone, localtime) == "Asia/Tokyo");
  REQUIRE(::unlink(localtime.c_str()) == 0);
  REQUIRE(::symlink("../usr/share/zoneinfo/posix/America/Chicago", localtime.c_str()) == 0);
  CHECK(local_zone_name(nullptr, timezone, localtime) == "America/Chicago");
  REQUIRE(::unlink(localtime.c_str()) == 0);
  REQUIRE(::symlink("/usr/share/zoneinfo/right/Europe/Berlin", localtime.c_str()) == 0);
  CHECK(local_zone_name(nullptr, timezone, localtime) == "Europe/Berlin");
  REQUIRE(::unlink(localtime.c_str()) == 0);
  REQUIRE(::symlink("/etc/somewhere", localtime.c_str()) == 0);
  CHECK(local_zone_name(nullptr, timezone, localtime) == "UTC");
}

TEST_CASE("local_zone_name: $TZ when it names a zone", "[time_zone]") {
  {
    EnvGuard tz("TZ", ":Europe/Paris");
    CHECK(idem::util::local_zone_name() == "Europe/Paris");
  }
  {
    EnvGuard tz("TZ", "America/New_York");
    CHECK(idem::util::local_zone_name() == "America/New_York");
  }
  {
    EnvGuard tz("TZ", ":/usr/share/zoneinfo/Asia/Tokyo");
    CHECK(idem::util::local_zone_name() == "Asia/Tokyo");
  }
  {
    // Not a zone name: the system's, whatever it is, is still a zone name.
    EnvGuard tz("TZ", "EST5EDT,M3.2.0,M11.1.0");
    CHECK(idem::util::valid_zone_name(idem::util::local_zone_name()));
  }
}

}  // namespace unit_time_zone
