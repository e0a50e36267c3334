// Durations (--ttl, --wait, --timeout, --kill-after, gc --older-than) and sizes (--max-output).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "core/duration.hpp"
#include "core/errors.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_duration {

using idem::core::duration_arg;
using idem::core::format_size;
using idem::core::parse_duration_ms;
using idem::core::parse_size;
using idem::core::size_arg;

namespace {
constexpr int64_t k_second = 1000;
constexpr int64_t k_minute = 60 * k_second;
constexpr int64_t k_hour = 60 * k_minute;
constexpr int64_t k_day = 24 * k_hour;
constexpr int64_t k_hundred_years = 36500 * k_day;
constexpr int64_t k_mib = 1024 * 1024;
constexpr int64_t k_tib = int64_t(1) << 40;
}  // namespace

TEST_CASE("duration: single units", "[duration]") {
  CHECK(parse_duration_ms("90s") == 90 * k_second);
  CHECK(parse_duration_ms("15m") == 15 * k_minute);
  CHECK(parse_duration_ms("24h") == 24 * k_hour);
  CHECK(parse_duration_ms("7d") == 7 * k_day);
  CHECK(parse_duration_ms("250ms") == 250);
  CHECK(parse_duration_ms("2w") == 14 * k_day);
  CHECK(parse_duration_ms("0s") == 0);
  CHECK(parse_duration_ms("007s") == 7 * k_second);
}

TEST_CASE("duration: a bare number is seconds", "[duration]") {
  CHECK(parse_duration_ms("0") == 0);
  CHECK(parse_duration_ms("1") == 1000);
  CHECK(parse_duration_ms("3600") == k_hour);
  CHECK(parse_duration_ms("86400") == k_day);
}

TEST_CASE("duration: compound forms, largest unit first", "[duration]") {
  CHECK(parse_duration_ms("1h30m") == k_hour + 30 * k_minute);
  CHECK(parse_duration_ms("1d12h") == k_day + 12 * k_hour);
  CHECK(parse_duration_ms("2m30s") == 2 * k_minute + 30 * k_second);
  CHECK(parse_duration_ms("1s500ms") == 1500);
  CHECK(parse_duration_ms("1w1d1h1m1s1ms") == 8 * k_day + k_hour + k_minute + k_second + 1);
}

TEST_CASE("duration: malformed text is refused", "[duration]") {
  const char* bad[] = {
      "",      "5x",    "-1",   "-5s",    "+5s", " 5s", "5s ",   "5 s",  "1m1h",
      "30m1h", "1h1h",  "1.5h", "1,5h",   "h",   "s",   "ms",    "5S",   "5H",
      "5sec",  "5mins", "1h30", "1h 30m", "5ss", "5us", "5ns",   "0x10", "1e3",
      "5s\n",  "\t5s",  "inf",  "nan",    "5y",  "5M",  "1m-1s", "ms5",
  };
  for (const char* text : bad) {
    INFO("'" << text << "'");
    CHECK_FALSE(parse_duration_ms(text).has_value());
  }
  // Embedded NUL: the length is part of the input, so "5\0s" must not parse as "5".
  CHECK_FALSE(parse_duration_ms(std::string_view("5\0s", 3)).has_value());
}

TEST_CASE("duration: values above 100 years or overflowing are refused", "[duration]") {
  CHECK(parse_duration_ms("36500d") == k_hundred_years);
  CHECK_FALSE(parse_duration_ms("36501d").has_value());
  CHECK(parse_duration_ms("3153600000") == k_hundred_years);  // bare seconds, exactly 100y
  CHECK_FALSE(parse_duration_ms("3153600001").has_value());
  CHECK_FALSE(parse_duration_ms("99999999999999999999").has_value());
  CHECK_FALSE(parse_duration_ms("9223372036854775807").has_value());
  CHECK_FALSE(parse_duration_ms("9223372036854775808s").has_value());
  CHECK_FALSE(parse_duration_ms("18446744073709551617ms").has_value());
  CHECK_FALSE(parse_duration_ms("99999999999999h").has_value());
  // The sum of valid parts may overflow the limit too.
  CHECK_FALSE(parse_duration_ms("36500d1ms").has_value());
  CHECK(parse_duration_ms("36499d24h") == k_hundred_years);
}

TEST_CASE("duration_arg: UsageError naming the flag and the text", "[duration]") {
  CHECK(duration_arg("--ttl", "24h") == 24 * k_hour);
  try {
    duration_arg("--ttl", "5x");
    FAIL("duration_arg accepted 5x");
  } catch (const idem::UsageError& e) {
    CHECK(e.code() == idem::k_exit_usage);
    CHECK(std::string(e.what()) ==
          "bad duration for --ttl: '5x' (use e.g. 90s, 15m, 24h, 7d or seconds)");
  }
}

TEST_CASE("duration: too long is told from malformed", "[duration]") {
  using idem::core::DurationProblem;
  using idem::core::parse_duration;
  CHECK(idem::core::k_max_duration_ms == k_hundred_years);
  CHECK(parse_duration("36500d").problem == DurationProblem::none);
  for (const char* text : {"36501d", "3153600001", "99999999999999999999", "9223372036854775807",
                           "9223372036854775808s", "18446744073709551617ms", "99999999999999h",
                           "36500d1ms", "5300w", "1000000000000000000000000000000000000000w1ms"}) {
    INFO(text);
    CHECK(parse_duration(text).problem == DurationProblem::too_long);
  }
  // Malformed stays malformed, however large its numbers.
  for (const char* text : {"", "-1s", "99999999999999999999x", "99999999999999999999s5",
                           "1m99999999999999999999h", "1y"}) {
    INFO(text);
    CHECK(parse_duration(text).problem == DurationProblem::malformed);
  }
  CHECK_THROWS_WITH(duration_arg("--ttl", "200y"),
                    "bad duration for --ttl: '200y' (use e.g. 90s, 15m, 24h, 7d or seconds)");
  CHECK_THROWS_WITH(duration_arg("--ttl", "36501d"),
                    "duration for --ttl is too large: '36501d' (at most 100 years: 36500d)");
  CHECK_THROWS_WITH(duration_arg("--timeout", "9223372036854775808ms"),
                    "duration for --timeout is too large: '9223372036854775808ms' (at most 100 "
                    "years: 36500d)");
}

TEST_CASE("size: units", "[size]") {
  CHECK(parse_size("16MiB") == 16 * k_mib);
  CHECK(parse_size("1M") == k_mib);
  CHECK(parse_size("10MB") == 10'000'000);
  CHECK(parse_size("4096") == 4096);
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("100B") == 100);
  CHECK(parse_size("512KiB") == 512 * 1024);
  CHECK(parse_size("512K") == 512 * 1024);
  CHECK(parse_size("512k") == 512 * 1024);
  CHECK(parse_size("100kB") == 100'000);
  CHECK(parse_size("100KB") == 100'000);
  CHECK(parse_size("1GiB") == 1024 * k_mib);
  CHECK(parse_size("1G") == 1024 * k_mib);
  CHECK(parse_size("2GB") == 2'000'000'000);
}

TEST_CASE("size: the 1 TiB limit", "[size]") {
  CHECK(parse_size("1024GiB") == k_tib);
  CHECK(parse_size("1099511627776") == k_tib);
  CHECK_FALSE(parse_size("1025GiB").has_value());
  CHECK_FALSE(parse_size("1099511627777").has_value());
  CHECK_FALSE(parse_size("99999999999999999999999").has_value());
  CHECK_FALSE(parse_size("9223372036854775807MiB").has_value());
}

TEST_CASE("size: malformed text is refused", "[size]") {
  const char* bad[] = {"",     "MiB",  "-1",      "-1M",   "+1M",  " 1M", "1M ",  "1 M",
                       "1.5M", "1,5M", "16mib",   "16Mib", "16mb", "1T",  "1TiB", "1MiBB",
                       "0x10", "1e6",  "16MiB\n", "b",     "1b",   "1KIB"};
  for (const char* text : bad) {
    INFO("'" << text << "'");
    CHECK_FALSE(parse_size(text).has_value());
  }
}

TEST_CASE("size_arg: UsageError naming the flag and the text", "[size]") {
  CHECK(size_arg("--max-output", "16MiB") == 16 * k_mib);
  try {
    size_arg("--max-output", "lots");
    FAIL("size_arg accepted 'lots'");
  } catch (const idem::UsageError& e) {
    CHECK(e.code() == idem::k_exit_usage);
    CHECK(std::string(e.what()) ==
          "bad size for --max-output: 'lots' (use e.g. 16MiB, 512KiB or bytes)");
  }
}

TEST_CASE("format_size: human sizes", "[size]") {
  CHECK(format_size(0) == "0B");
  CHECK(format_size(1023) == "1023B");
  CHECK(format_size(1024) == "1KiB");
  CHECK(format_size(1536) == "1.5KiB");
  CHECK(format_size(16 * k_mib) == "16MiB");
  CHECK(format_size(1024 * k_mib) == "1GiB");
  CHECK(format_size(k_tib) == "1TiB");
  // Round trip for whole units.
  CHECK(parse_size(format_size(16 * k_mib)) == 16 * k_mib);
  CHECK(parse_size(format_size(512 * 1024)) == 512 * 1024);
}

}  // namespace unit_duration
