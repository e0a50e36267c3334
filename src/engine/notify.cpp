#include "engine/notify.hpp"

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
      return head + " dropped: one is running for this key and another waits";
  }
  return head;
}

Notifier::Notifier(Options options) : options_(std::move(options)) {}

void Notifier::report(const NotifyReport& r) const {
  if (!options_.report) return;
  try {
    options_.report(r);
  } catch (const std::exception&) {
    // A report that cannot be written (stderr closed) changes nothing either.
  }
}

void Notifier::fire(std::shared_ptr<const core::NotifySpec> spec, core::NotifyEvent event,
                    const std::string& key, std::string document) {
  if (!spec || spec->argv.empty() || !core::notifies(spec->on, event)) return;
  {
    std::lock_guard lock(mutex_);
    int& queued = per_key_[key];
    if (queued >= 2) {
      NotifyReport dropped;
      dropped.key = key;
      dropped.event = event;
      dropped.result = NotifyReport::Result::dropped;
      report(dropped);
      return;
    }
    ++queued;
  }
  auto work = [this, spec, event, key, document = std::move(document)] {
    {
      std::unique_lock lock(mutex_);
      turn_.wait(lock, [&] { return !busy_[key]; });
      busy_[key] = true;
    }
    try {
      run(*spec, event, key, document);
    } catch (const std::exception& e) {
      NotifyReport failed;
      failed.key = key;
      failed.event = event;
      failed.result = NotifyReport::Result::not_started;
      failed.exit_code = 126;
      failed.output = e.what();
      report(failed);
    }
    std::lock_guard lock(mutex_);
    busy_.erase(key);
    if (--per_key_[key] == 0) per_key_.erase(key);
    turn_.notify_all();
  };
  if (!options_.defer) {
    work();
    return;
  }
  try {
    options_.defer(std::move(work));
  } catch (const std::exception&) {
    std::lock_guard lock(mutex_);
    if (--per_key_[key] == 0) per_key_.erase(key);
  }
}

void Notifier::run(const core::NotifySpec& spec, core::NotifyEvent event, const std::string& key,
                   const std::string& document) {
  // From an anonymous file, not a pipe: a command that never reads its stdin cannot block the
  // writer, and one that reads it all gets EOF.
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
  run_spec.timeout_ms = spec.timeout_ms;
  run_spec.kill_after_ms = options_.kill_after_ms;
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
  else if (result.timed_out)
    r.result = NotifyReport::Result::timed_out;
  else
    r.result = r.exit_code == 0 ? NotifyReport::Result::ran : NotifyReport::Result::failed;
  for (const auto& chunk : result.output.chunks()) r.output += chunk.bytes;
  r.output_truncated = result.output.truncated();
  report(r);
}

}  // namespace idem::engine
