#include "util/clock.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace idem::util {

int64_t SystemClock::now_ms() const {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int64_t SystemClock::now_ns() const {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t SystemClock::monotonic_ms() const { return util::monotonic_ms(); }

void SystemClock::sleep_ms(int64_t ms) const {
  if (ms <= 0) return;
  timespec left{time_t(ms / 1000), long(ms % 1000) * 1000000L};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

void SystemClock::wait_until(std::condition_variable_any& wake, std::unique_lock<std::mutex>& lock,
                             int64_t deadline_ms) const {
  const int64_t left_ms = deadline_ms - monotonic_ms();
  if (left_ms > 0) wake.wait_for(lock, std::chrono::milliseconds(left_ms));
}

const Clock& process_clock() {
#ifdef IDEM_TEST_HOOKS
  static const OffsetClock clock([] {
    const char* offset = std::getenv("IDEM_TEST_CLOCK_OFFSET_MS");
    return offset != nullptr ? std::strtoll(offset, nullptr, 10) : 0LL;
  }());
#else
  static const SystemClock clock;
#endif
  return clock;
}

int64_t monotonic_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string iso8601_utc(int64_t unix_ms) {
  time_t secs = time_t(unix_ms / 1000);
  int millis = int(unix_ms % 1000);
  if (millis < 0) {
    millis += 1000;
    --secs;
  }
  tm parts{};
  gmtime_r(&secs, &parts);
  // Sized for the widest int fields, so the compiler can prove nothing is cut off.
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, millis);
  return buf;
}

std::string human_duration(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return std::to_string(ms) + "ms";
  int64_t s = ms / 1000;
  if (s < 60) {
    // Tenths are truncated, not rounded: 9999ms is "9.9s", never "10.0s" below ten seconds.
    if (ms < 10000) return std::to_string(s) + "." + std::to_string(ms % 1000 / 100) + "s";
    return std::to_string(s) + "s";
  }
  int64_t m = s / 60;
  if (m < 60) return std::to_string(m) + "m " + std::to_string(s % 60) + "s";
  int64_t h = m / 60;
  if (h < 24) return std::to_string(h) + "h " + std::to_string(m % 60) + "m";
  return std::to_string(h / 24) + "d " + std::to_string(h % 24) + "h";
}

}  // namespace idem::util
