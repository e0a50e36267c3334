#pragma once
// Running notify commands (--on-failure, --on-change, a hook's or the proxy's "notify"): one per
// event, with the event's document on stdin, bounded in time, at most one at a time per key. Its
// own failure is reported, never raised: it changes no outcome, exit code or answer.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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
    dropped,      // one ran and one waited for the key already: this one was left out
  };
  std::string key;
  core::NotifyEvent event = core::NotifyEvent::failed;
  Result result = Result::ran;
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
  explicit Notifier(Options options);

  // Runs `spec`'s command for `event` of `key`, with `document` on its stdin and IDEM_EVENT,
  // IDEM_KEY in its environment, unless spec->on leaves the event out. One runs per key at a
  // time; one more waits for it, and any further one meanwhile is dropped (and reported). Never
  // throws.
  void fire(std::shared_ptr<const core::NotifySpec> spec, core::NotifyEvent event,
            const std::string& key, std::string document);

 private:
  void run(const core::NotifySpec& spec, core::NotifyEvent event, const std::string& key,
           const std::string& document);
  void report(const NotifyReport& r) const;

  Options options_;
  std::mutex mutex_;
  std::condition_variable turn_;
  std::map<std::string, int> per_key_;  // notifications of a key running or waiting (1 or 2)
  std::map<std::string, bool> busy_;    // whether one of the key's is running now
};

}  // namespace idem::engine
