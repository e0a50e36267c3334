#include "engine/notify.hpp"

#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <exception>

#include "core/key.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::engine {

std::string NotifyReport::text() const {
  std::string head = "notify for key '" + core::display_key(key) + "' (" +
                     std::string(core::to_string(event)) + ")";
  switch (result) {
    case Result::ran:
      return head + " ran";
    case Result::failed:
      return head + " exited " + std::to_string(exit_code);
    case Result::timed_out:
      return head + " timed out after " + util::human_duration(duration_ms) + " and was stopped";
    case Result::not_started:
      return head + " could not start (exit " + std::to_string(exit_code) + ")";
    case Result::dropped:
      return head + " dropped: " + why;
    case Result::cut:
      return head + " was stopped after " + util::human_duration(duration_ms) +
             ": the daemon is stopping";
  }
  return head;
}

Notifier::Notifier(Options options, Limits limits)
    : options_(std::move(options)),
      limits_(limits),
      cut_fd_(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) {}

Notifier::~Notifier() {
  if (cut_fd_ >= 0) ::close(cut_fd_);
}

void Notifier::report(const NotifyReport& r) const {
  if (!options_.report) return;
  try {
    options_.report(r);
  } catch (const std::exception&) {
    // A report that cannot be written (stderr closed) changes nothing either.
  }
}

void Notifier::drop(const std::string& key, core::NotifyEvent event, std::string why) {
  ++dropped_;
  NotifyReport dropped;
  dropped.key = key;
  dropped.event = event;
  dropped.result = NotifyReport::Result::dropped;
  dropped.why = std::move(why);
  report(dropped);
}

void Notifier::set_limits(Limits limits) {
  std::lock_guard lock(mutex_);
  limits_ = limits;
  turn_.notify_all();
}

Notifier::Stats Notifier::stats() const {
  std::lock_guard lock(mutex_);
  return {running_, int(queue_.size()) + waiting_, dropped_.load()};
}

void Notifier::finish_by(int64_t deadline_ms) {
  deadline_ms_ = deadline_ms;
  if (cut_fd_ < 0) return;
  // The running ones get TERM at `term_ms` (now if that passed), KILL kill_after_ms later.
  const int64_t term_ms = std::max<int64_t>(deadline_ms - options_.kill_after_ms, 1);
  itimerspec at{};
  at.it_value.tv_sec = time_t(term_ms / 1000);
  at.it_value.tv_nsec = long(term_ms % 1000) * 1000000L;
  ::timerfd_settime(cut_fd_, TFD_TIMER_ABSTIME, &at, nullptr);
}

bool Notifier::may_start(const Job& job) const {
  return busy_.count(job.key) == 0 && running_ < limits_.max_running;
}

void Notifier::fire(std::shared_ptr<const core::NotifySpec> spec, core::NotifyEvent event,
                    const std::string& key, std::string document) {
  if (!spec || spec->argv.empty() || !core::notifies(spec->on, event)) return;
  Job job{std::move(spec), event, key, std::move(document)};
  std::unique_lock lock(mutex_);
  int& queued = per_key_[key];
  if (queued >= 2) {
    lock.unlock();
    drop(key, event, "one is running for this key and another waits");
    return;
  }
  const bool now = may_start(job);
  if (!now && int(queue_.size()) + waiting_ >= limits_.max_queue) {
    if (queued == 0) per_key_.erase(key);
    const std::string why = "the queue is full (" + std::to_string(limits_.max_queue) +
                            " waiting for one of " + std::to_string(limits_.max_running) +
                            " places)";
    lock.unlock();
    drop(key, event, why);
    return;
  }
  ++queued;
  if (!options_.defer) {
    // On the calling thread, which waits for its turn (the CLI: it never exits before its
    // notify command ended).
    ++waiting_;
    turn_.wait(lock, [&] { return may_start(job); });
    --waiting_;
    start(job.key);
    lock.unlock();
    run_job(job);
    lock.lock();
    end(job.key);
    return;
  }
  if (!now) {
    queue_.push_back(std::move(job));  // a worker takes it when it is done with its own
    return;
  }
  // A worker of its own, which then takes the queue's jobs until none can start.
  start(job.key);
  lock.unlock();
  try {
    options_.defer([this, job = std::move(job)]() mutable { work(std::move(job)); });
  } catch (const std::exception&) {
    lock.lock();
    end(key);
    lock.unlock();
    drop(key, event, "no thread could be started to run it");
  }
}

void Notifier::start(const std::string& key) {
  busy_.insert(key);
  ++running_;
}

void Notifier::end(const std::string& key) {
  busy_.erase(key);
  --running_;
  if (--per_key_[key] == 0) per_key_.erase(key);
  turn_.notify_all();
}

void Notifier::work(Job job) {
  for (;;) {
    run_job(job);
    std::lock_guard lock(mutex_);
    end(job.key);
    auto it = std::find_if(queue_.begin(), queue_.end(),
                           [&](const Job& next) { return may_start(next); });
    if (it == queue_.end()) return;
    job = std::move(*it);
    queue_.erase(it);
    start(job.key);
  }
}

void Notifier::run_job(const Job& job) {
  try {
    run(*job.spec, job.event, job.key, job.document);
  } catch (const std::exception& e) {
    NotifyReport failed;
    failed.key = job.key;
    failed.event = job.event;
    failed.result = NotifyReport::Result::not_started;
    failed.exit_code = 126;
    failed.output = e.what();
    report(failed);
  }
}

void Notifier::run(const core::NotifySpec& spec, core::NotifyEvent event, const std::string& key,
                   const std::string& document) {
  // From an anonymous file, not a pipe: a command that never reads its stdin cannot block the
  // writer, and one that reads it all gets EOF.
  int64_t timeout_ms = spec.timeout_ms;
  if (const int64_t deadline = deadline_ms_; deadline >= 0) {
    // The daemon drains: TERM early enough for KILL to come before its end.
    const int64_t left = deadline - options_.kill_after_ms - util::monotonic_ms();
    if (left <= 0) {
      drop(key, event, "the daemon is stopping and its grace leaves no time to run it");
      return;
    }
    timeout_ms = std::min(timeout_ms, left);
  }
  util::Fd input = util::memory_file("idem-notify", document);
  if (!input.valid()) throw std::runtime_error("cannot buffer its document");
  proc::RunSpec run_spec;
  run_spec.argv = spec.argv;
  run_spec.extra_env = {{"IDEM_EVENT", std::string(core::to_string(event))}, {"IDEM_KEY", key}};
  run_spec.unset_env = spec.withheld_env;
  run_spec.stdin_fd = input.get();
  run_spec.live_stdout_fd = options_.live_output_fd;
  run_spec.live_stderr_fd = options_.live_output_fd;
  run_spec.stderr_to_stdout = true;
  run_spec.max_output = k_notify_output_cap;
  run_spec.timeout_ms = timeout_ms;
  run_spec.kill_after_ms = options_.kill_after_ms;
  // Whatever it leaves running is waited for, and ends with it at its timeout.
  run_spec.wait_group = true;
  run_spec.stop_fd = cut_fd_;
  const int64_t start_ms = util::monotonic_ms();
  proc::CommandRunner& runner = options_.runner ? *options_.runner : proc::spawning_runner();
  proc::RunResult result = runner.run(run_spec);
  NotifyReport r;
  r.key = key;
  r.event = event;
  r.duration_ms = util::monotonic_ms() - start_ms;
  r.exit_code = proc::exit_code_for(result);
  if (!result.started)
    r.result = NotifyReport::Result::not_started;
  else if (result.stopped || (result.timed_out && timeout_ms < spec.timeout_ms))
    r.result = NotifyReport::Result::cut;
  else if (result.timed_out)
    r.result = NotifyReport::Result::timed_out;
  else
    r.result = r.exit_code == 0 ? NotifyReport::Result::ran : NotifyReport::Result::failed;
  for (const auto& chunk : result.output.chunks()) r.output += chunk.bytes;
  r.output_truncated = result.output.truncated();
  report(r);
}

}  // namespace idem::engine
