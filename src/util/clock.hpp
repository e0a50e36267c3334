#pragma once
// Wall and monotonic time in milliseconds, behind an interface so logic can be tested with a
// fixed clock.
#include <cstdint>
#include <string>

namespace idem::util {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t now_ms() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t now_ms() const override;
};

int64_t monotonic_ms();

// ISO-8601 UTC with milliseconds: 2026-11-29T19:40:55.123Z
std::string iso8601_utc(int64_t unix_ms);
// Compact human duration: 850ms, 12s, 3m 4s, 5h 2m, 2d 3h.
std::string human_duration(int64_t ms);

}  // namespace idem::util
