#pragma once
// Test doubles for the engine's seams: a clock that moves only when told (or when something
// sleeps on it; a thread waiting on it wakes when it is moved past its deadline), and a command
// runner that records what it was asked to run and returns scripted results.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
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
    std::lock_guard guard(mutex_);
    wall_ms_ += ms;
    monotonic_ms_ += ms;
    for (const Waiter& w : waiting_) w.wake->notify_all();
    moved_.notify_all();
  }
  // Waits without a limit: the time moves only through advance() (or sleep_ms) from another
  // thread, which wakes this one, or `wake` is notified.
  void wait_until(std::condition_variable_any& wake, std::unique_lock<std::mutex>& lock,
                  int64_t deadline_ms) const override {
    // The clock's mutex is held from the look at the time until the wait has begun (released
    // with the caller's lock, at once), so an advance() in between cannot go unnoticed.
    std::unique_lock guard(mutex_);
    if (monotonic_ms_ >= deadline_ms) return;
    waiting_.push_back({&wake, deadline_ms});
    moved_.notify_all();
    Both both{lock, guard};
    wake.wait(both);
    waiting_.erase(std::find_if(waiting_.begin(), waiting_.end(),
                                [&](const Waiter& w) { return w.wake == &wake; }));
  }
  // Blocks until a thread waits on the clock for a time later than the monotonic `after_ms`:
  // it has seen the time move to `after_ms` and done what it does then. What a test awaits
  // before it moves the time again, instead of sleeping.
  void await_waiter(int64_t after_ms) const {
    std::unique_lock guard(mutex_);
    moved_.wait(guard, [&] {
      return std::any_of(waiting_.begin(), waiting_.end(),
                         [&](const Waiter& w) { return w.deadline_ms > after_ms; });
    });
  }
  // As await_waiter, or until `done()` holds: whoever makes it hold calls advance(0) after, which
  // wakes this look.
  void await_waiter_or(int64_t after_ms, const std::function<bool()>& done) const {
    std::unique_lock guard(mutex_);
    moved_.wait(guard, [&] {
      return done() || std::any_of(waiting_.begin(), waiting_.end(),
                                   [&](const Waiter& w) { return w.deadline_ms > after_ms; });
    });
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
  // The waiter's lock and the clock's, released and taken again together around its wait.
  struct Both {
    std::unique_lock<std::mutex>& caller;
    std::unique_lock<std::mutex>& clock;
    void lock() {
      caller.lock();
      clock.lock();
    }
    void unlock() {
      clock.unlock();
      caller.unlock();
    }
  };
  mutable std::mutex mutex_;
  mutable std::condition_variable_any moved_;
  struct Waiter {
    std::condition_variable_any* wake;
    int64_t deadline_ms;
  };
  mutable std::vector<Waiter> waiting_;
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

  // With `prepares`: a command made ready ahead of its claim, `group` its group; counts how many
  // were made and how many dropped unstarted (their child would have been killed).
  std::unique_ptr<proc::PreparedCommand> prepare(const proc::RunSpec&) override {
    if (!prepares) return nullptr;
    ++prepared;
    if (on_prepare) on_prepare();
    return std::make_unique<Prepared>(*this);
  }
  // As run(), without on_spawn: the group was recorded with the claim.
  proc::RunResult run_prepared(std::unique_ptr<proc::PreparedCommand> p,
                               const proc::RunSpec& spec) override {
    static_cast<Prepared&>(*p).started = true;
    proc::RunSpec without = spec;
    without.on_spawn = nullptr;
    return run(without);
  }

  std::vector<proc::RunSpec> calls;
  std::deque<proc::RunResult> script;
  std::function<void()> during;
  core::ProcessGroup group{4242, 777};
  bool prepares = false;
  std::function<void()> on_prepare;  // what happens between the look and the claim
  int prepared = 0;
  int dropped = 0;

 private:
  struct Prepared final : proc::PreparedCommand {
    explicit Prepared(FakeRunner& r) : runner(r) {}
    ~Prepared() override {
      if (!started) ++runner.dropped;
    }
    core::ProcessGroup group() const override { return runner.group; }
    FakeRunner& runner;
    bool started = false;
  };
};

// The value of `name` in a spec's extra environment, or "" when absent.
inline std::string env_of(const proc::RunSpec& spec, const std::string& name) {
  for (const auto& [n, v] : spec.extra_env)
    if (n == name) return v;
  return "";
}

}  // namespace idem::test
