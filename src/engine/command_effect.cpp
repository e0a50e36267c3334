#include "engine/command_effect.hpp"

#include "core/exit_code.hpp"
#include "util/crash_point.hpp"

namespace idem::engine {

CommandEffect::CommandEffect(proc::CommandRunner& runner, proc::RunSpec spec, Capture capture,
                             int64_t stored_cap)
    : runner_(runner), spec_(std::move(spec)), capture_(capture), stored_cap_(stored_cap) {
  spec_.own_cgroup = true;  // an attempt's leftovers are looked for, whatever their group
}

std::optional<core::ProcessGroup> CommandEffect::prepare() {
  if (proc::pending_signal() != 0) return std::nullopt;
  prepared_ = runner_.prepare(spec_);
  if (!prepared_) return std::nullopt;
  return prepared_->group();
}

core::Outcome CommandEffect::perform(const Attempt& attempt) {
  if (int sig = proc::pending_signal()) {
    prepared_.reset();  // killed before it exec'd
    interrupted_by_ = sig;
    core::Outcome interrupted;
    interrupted.status = core::Status::failed;
    interrupted.signal = sig;
    interrupted.note = "idem received " + proc::signal_name(sig) + " before the command started";
    return interrupted;
  }
  proc::RunSpec spec = spec_;
  spec.extra_env.emplace_back("IDEM_ATTEMPT", std::to_string(attempt.number));
  if (!attempt.mark.empty()) spec.extra_env.emplace_back(core::k_attempt_mark_env, attempt.mark);
  // Its own spans are children of the attempt's (SPEC §12); without traces an inherited
  // TRACEPARENT is left as it was.
  if (!attempt.traceparent.empty()) spec.extra_env.emplace_back("TRACEPARENT", attempt.traceparent);
  spec.stop_fd = attempt.lease_lost_fd;
  spec.meanwhile = attempt.meanwhile;
  if (attempt.live) {
    // Followers see what the outcome will store: the capture's first stored_cap_ bytes.
    spec.on_output = [live = attempt.live, left = stored_cap_](core::Stream stream,
                                                               std::string_view bytes) mutable {
      if (left <= 0) return;
      if (int64_t(bytes.size()) > left) bytes = bytes.substr(0, size_t(left));
      left -= int64_t(bytes.size());
      live(stream, bytes);
    };
  }
  if (prepared_) {
    // Its group is durable already, written with the claim.
    result_ = runner_.run_prepared(std::move(prepared_), spec);
  } else {
    // Durable before the command starts, so if idem dies, a retry can find what it left running.
    spec.on_spawn = attempt.record_group;
    result_ = runner_.run(spec);
  }
  if (capture_ == Capture::handed_to_outcome) return proc::outcome_taking_output(result_, 0);
  // The outcome takes a copy of the head; result() keeps the whole capture.
  core::CapturedOutput whole = std::move(result_.output);
  result_.output = whole.head(stored_cap_);
  core::Outcome outcome = proc::outcome_taking_output(result_, 0);
  result_.output = std::move(whole);
  return outcome;
}

std::string CommandEffect::performed() const {
  if (result_.stopped) return "the command was stopped (exit " + std::to_string(exit_code()) + ")";
  return "the command ran (exit " + std::to_string(exit_code()) + ")";
}

int CommandEffect::exit_code() const {
  if (interrupted_by_ != 0) return k_exit_signal_base + interrupted_by_;
  return proc::exit_code_for(result_);
}

}  // namespace idem::engine
