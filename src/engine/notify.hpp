#pragma once
// Running notify commands (--on-failure, --on-change, a hook's or the proxy's "notify"): one per
// event, with the event's document on stdin, bounded in time (its whole process group), at most
// one at a time per key and a bounded number at once, with a bounded queue. Its own failure is
// reported, never raised: it changes no outcome, exit code or answer.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "core/notify.hpp"
#include "proc/runner.hpp"

namespace idem::engine {

// How one notification went, for its front to report: the CLI's stderr, the daemon's log.
struct NotifyReport {
  enum class Result {
    ran,          // it exited 0
    failed,       // it exited non-zero or died of a signal
    timed_out,    // it outlived its timeout and was stopped
    not_started,  // it could not be started
    dropped,      // left out: see `why`
    cut,          // still running when the daemon's drain had to end it (finish_by)
  };
  std::string key;
  core::NotifyEvent event = core::NotifyEvent::failed;
  Result result = Result::ran;
  std::string why;     // of a drop: "one is running for this key and another waits", ...
  int exit_code = 0;   // as a shell reports it (128+N for signal N, 124 timed out, 126/127)
  std::string output;  // what it wrote, both streams in order, up to k_notify_output_cap
  bool output_truncated = false;
  int64_t duration_ms = 0;

  // One line: "notify for key 'k' (failed) exited 3", "... timed out after 30s", ...
  std::string text() const;
};

inline constexpr int64_t k_notify_output_cap = 64 * 1024;

class Notifier {
 public:
  struct Options {
    // Runs a notification; unset: on the calling thread, which waits for it (the CLI, which so
    // never exits before its notify command ended). The daemon runs them in the background.
    std::function<void(std::function<void()>)> defer;
    // Told how every notification went (never called concurrently for one key).
    std::function<void(const NotifyReport&)> report;
    // Where its output goes as it is written (-1: only captured, for the report).
    int live_output_fd = -1;
    // Spawns the command; null: proc::spawning_runner().
    proc::CommandRunner* runner = nullptr;
    // TERM at the timeout, KILL this much later.
    int64_t kill_after_ms = 2000;
  };
  using Limits = core::NotifyLimits;
  struct Stats {
    int running = 0;
    int queued = 0;
    int64_t dropped = 0;  // since the start
  };
  explicit Notifier(Options options, Limits limits = {});
  ~Notifier();

  // Runs `spec`'s command for `event` of `key`, with `document` on its stdin and IDEM_EVENT,
  // IDEM_KEY in its environment, unless spec->on leaves the event out. One runs per key at a
  // time and at most max_running at once; one more per key waits, and at most max_queue wait in
  // all: any further one is dropped (reported, and counted in stats()). Never throws.
  void fire(std::shared_ptr<const core::NotifySpec> spec, core::NotifyEvent event,
            const std::string& key, std::string document);

  // New limits, for the notifications from now on (a reload).
  void set_limits(Limits limits);
  Stats stats() const;

  // Every notify command ends by `deadline_ms` (monotonic; the daemon's drain): those running
  // get TERM kill_after_ms before it, then KILL; those that start later run until then at most,
  // and those with no time left are dropped. Each still ends with its report.
  void finish_by(int64_t deadline_ms);

 private:
  struct Job {
    std::shared_ptr<const core::NotifySpec> spec;
    core::NotifyEvent event;
    std::string key;
    std::string document;
  };
  // Runs `job`, then the queue's jobs that can start, until none can (the daemon's workers).
  void work(Job job);
  // Whether `job` may start now: its key is free and the cap has room. Under mutex_.
  bool may_start(const Job& job) const;
  // A job of `key` starts, ends (its bookkeeping, under mutex_).
  void start(const std::string& key);
  void end(const std::string& key);
  void run_job(const Job& job);
  void run(const core::NotifySpec& spec, core::NotifyEvent event, const std::string& key,
           const std::string& document);
  void report(const NotifyReport& r) const;
  void drop(const std::string& key, core::NotifyEvent event, std::string why);

  Options options_;
  mutable std::mutex mutex_;
  std::condition_variable turn_;  // a key or a place under the cap came free
  Limits limits_;
  std::map<std::string, int> per_key_;  // notifications of a key running or waiting (1 or 2)
  std::set<std::string> busy_;          // the keys one of whose notifications runs now
  std::deque<Job> queue_;               // waiting for a worker (the daemon's)
  int running_ = 0;                     // commands running (the daemon's: one per worker)
  int waiting_ = 0;                     // callers waiting for their turn (without defer)
  std::atomic<int64_t> dropped_{0};
  std::atomic<int64_t> deadline_ms_{-1};  // finish_by's; -1: none
  int cut_fd_ = -1;                       // a timerfd readable from deadline - kill_after
};

}  // namespace idem::engine
