#pragma once
// Wall and monotonic time in milliseconds, and pauses, behind one interface: logic that waits,
// expires or times out is given a Clock, so tests drive it with a fake one and never sleep.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace idem::util {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t now_ms() const = 0;
  // Nanoseconds since the Unix epoch, for what is measured finer than a millisecond (a trace's
  // spans); a clock that keeps only milliseconds gives now_ms() in nanoseconds.
  virtual int64_t now_ns() const { return now_ms() * 1000000; }
  // Milliseconds on a clock that never jumps (deadlines, waits).
  virtual int64_t monotonic_ms() const = 0;
  // Pauses the calling thread for `ms` (a poll interval while waiting for a key).
  virtual void sleep_ms(int64_t ms) const = 0;
  // Blocks on `wake` (with `lock` held around the caller's checks, as for any condition
  // variable) until monotonic_ms() reaches `deadline_ms` or `wake` is notified; it may return
  // early for no reason, so the caller looks again. A thread that waits between two deadlines
  // (the lease keeper's renewals) waits here, so a fake clock moved past the deadline wakes it.
  virtual void wait_until(std::condition_variable_any& wake, std::unique_lock<std::mutex>& lock,
                          int64_t deadline_ms) const = 0;
};

class SystemClock : public Clock {
 public:
  int64_t now_ms() const override;
  int64_t now_ns() const override;
  int64_t monotonic_ms() const override;
  void sleep_ms(int64_t ms) const override;
  void wait_until(std::condition_variable_any& wake, std::unique_lock<std::mutex>& lock,
                  int64_t deadline_ms) const override;
};

// The system clock with its wall time moved by a fixed offset: what `process_clock()` is in a
// test build when IDEM_TEST_CLOCK_OFFSET_MS is set, so end-to-end scripts can step past a TTL or
// a lease without sleeping.
class OffsetClock final : public SystemClock {
 public:
  explicit OffsetClock(int64_t offset_ms) : offset_ms_(offset_ms) {}
  int64_t now_ms() const override { return SystemClock::now_ms() + offset_ms_; }
  int64_t now_ns() const override { return SystemClock::now_ns() + offset_ms_ * 1000000; }

 private:
  int64_t offset_ms_;
};

// The clock every front hands to the logic it drives: the system clock; in a build with
// IDEM_TEST_HOOKS, moved by $IDEM_TEST_CLOCK_OFFSET_MS (a signed integer) when that is set.
const Clock& process_clock();

int64_t monotonic_ms();

// ISO-8601 UTC with milliseconds: 2026-11-29T19:40:55.123Z
std::string iso8601_utc(int64_t unix_ms);
// Compact human duration: 850ms, 12s, 3m 4s, 5h 2m, 2d 3h.
std::string human_duration(int64_t ms);

}  // namespace idem::util
