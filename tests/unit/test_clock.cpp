// Wall time formatting (util/clock.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "util/clock.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_clock {

using idem::util::human_duration;
using idem::util::iso8601_utc;

TEST_CASE("iso8601_utc: UTC with milliseconds and a Z", "[clock]") {
  CHECK(iso8601_utc(0) == "1970-01-01T00:00:00.000Z");
  CHECK(iso8601_utc(1) == "1970-01-01T00:00:00.001Z");
  CHECK(iso8601_utc(1790000000123) == "2026-09-21T14:13:20.123Z");
  CHECK(iso8601_utc(951868799999) == "2000-02-29T23:59:59.999Z");  // leap day, last ms
  CHECK(iso8601_utc(951868800000) == "2000-03-01T00:00:00.000Z");
  // Before the epoch the milliseconds still count forward within the second.
  CHECK(iso8601_utc(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(iso8601_utc(-1000) == "1969-12-31T23:59:59.000Z");
  CHECK(iso8601_utc(-1001) == "1969-12-31T23:59:58.999Z");
}

TEST_CASE("iso8601_utc: does not depend on TZ", "[clock]") {
  const char* old = getenv("TZ");
  std::string saved = old ? old : "";
  setenv("TZ", "Pacific/Kiritimati", 1);
  tzset();
  std::string formatted = iso8601_utc(1790000000123);
  if (old)
    setenv("TZ", saved.c_str(), 1);
  else
    unsetenv("TZ");
  tzset();
  CHECK(formatted == "2026-09-21T14:13:20.123Z");
}

TEST_CASE("human_duration: compact forms", "[clock]") {
  CHECK(human_duration(-5) == "0ms");
  CHECK(human_duration(0) == "0ms");
  CHECK(human_duration(850) == "850ms");
  CHECK(human_duration(999) == "999ms");
  CHECK(human_duration(1000) == "1.0s");
  CHECK(human_duration(1500) == "1.5s");
  CHECK(human_duration(9900) == "9.9s");
  CHECK(human_duration(9999) == "9.9s");  // never "10.0s" below ten seconds
  CHECK(human_duration(10000) == "10s");
  CHECK(human_duration(12345) == "12s");
  CHECK(human_duration(59999) == "59s");
  CHECK(human_duration(60000) == "1m 0s");
  CHECK(human_duration(184000) == "3m 4s");
  CHECK(human_duration((5 * 60 + 2) * 60000) == "5h 2m");
  CHECK(human_duration(int64_t(51) * 3600000) == "2d 3h");
}

TEST_CASE("clocks: wall clock is in Unix ms, monotonic never goes back", "[clock]") {
  idem::util::SystemClock clock;
  int64_t now = clock.now_ms();
  CHECK(now > 1'600'000'000'000);  // after 2020
  CHECK(now < 4'000'000'000'000);  // before 2096
  int64_t a = idem::util::monotonic_ms();
  int64_t b = idem::util::monotonic_ms();
  CHECK(b >= a);
}

}  // namespace unit_clock
