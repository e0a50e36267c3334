#pragma once
// Test doubles for the engine's seams: a clock that moves only when told (or when something
// sleeps on it), and a command runner that records what it was asked to run and returns scripted
// results.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "proc/runner.hpp"
#include "util/clock.hpp"

namespace idem::test {

class FakeClock final : public util::Clock {
 public:
  explicit FakeClock(int64_t wall_ms = 1'800'000'000'000) : wall_ms_(wall_ms) {}
  int64_t now_ms() const override { return wall_ms_; }
  int64_t monotonic_ms() const override { return monotonic_ms_; }
  // Returns at once: the time moves on by `ms`, then `on_sleep` runs (what happens meanwhile).
  void sleep_ms(int64_t ms) const override {
    slept.push_back(ms);
    advance(ms);
    if (on_sleep) on_sleep();
  }
  void advance(int64_t ms) const {
    wall_ms_ += ms;
    monotonic_ms_ += ms;
  }
  int64_t total_slept() const {
    int64_t total = 0;
    for (int64_t ms : slept) total += ms;
    return total;
  }

  mutable std::vector<int64_t> slept;
  std::function<void()> on_sleep;

 private:
  // Atomic: a lease's renewals read the clock from a thread of their own.
  mutable std::atomic<int64_t> wall_ms_;
  mutable std::atomic<int64_t> monotonic_ms_{1'000'000};
};

class FakeRunner final : public proc::CommandRunner {
 public:
  // Hands `group` to on_spawn as the real runner does (what it throws propagates, nothing "runs"),
  // then runs `during` (what happens while the command runs) and returns the next scripted
  // result (default: exit 0, no output).
  proc::RunResult run(const proc::RunSpec& spec) override {
    calls.push_back(spec);
    if (spec.on_spawn) spec.on_spawn(group);
    if (during) during();
    if (script.empty()) return exited(0);
    proc::RunResult result = std::move(script.front());
    script.pop_front();
    return result;
  }

  static proc::RunResult exited(int code, const std::string& out = "") {
    proc::RunResult r;
    r.started = true;
    r.exit_code = code;
    if (!out.empty()) r.output.append(core::Stream::out, out);
    return r;
  }
  static proc::RunResult timed_out() {
    proc::RunResult r;
    r.started = true;
    r.signal = 15;
    r.timed_out = true;
    return r;
  }

  std::vector<proc::RunSpec> calls;
  std::deque<proc::RunResult> script;
  std::function<void()> during;
  core::ProcessGroup group{4242, 777};
};

// The value of `name` in a spec's extra environment, or "" when absent.
inline std::string env_of(const proc::RunSpec& spec, const std::string& name) {
  for (const auto& [n, v] : spec.extra_env)
    if (n == name) return v;
  return "";
}

}  // namespace idem::test
