#pragma once
// The effect of `run`, `each` and serve's hooks: run a command once for the attempt.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/attempt.hpp"
#include "proc/runner.hpp"

namespace idem::engine {

class CommandEffect final : public Effect {
 public:
  // Whether result().output still holds the capture after perform(), or only the outcome does
  // (a front that never reads it again saves holding a capture of up to --max-output twice).
  enum class Capture { kept, handed_to_outcome };

  // `spec` as the front wants the command run; perform() adds IDEM_ATTEMPT and records the
  // command's process group before it starts. With Capture::kept, the outcome stores only the
  // first `stored_cap` bytes of the capture, marked truncated if more were captured: `each`
  // writes a handler's whole output once it ends, so its capture is not capped by --max-output,
  // only what is stored.
  CommandEffect(proc::CommandRunner& runner, proc::RunSpec spec, Capture capture = Capture::kept,
                int64_t stored_cap = INT64_MAX);

  // Runs the command, unless idem already received a signal it forwards (INT, TERM, HUP: `run`
  // installs those handlers) since the claim: then nothing starts, and the outcome says why.
  core::Outcome perform(const Attempt& attempt) override;
  std::string performed() const override;
  // The command's child, created ahead of the claim and waiting to exec (CommandRunner::prepare);
  // nullopt when the runner cannot, or a signal came already (perform() then starts nothing).
  std::optional<core::ProcessGroup> prepare() override;
  void unprepare() override { prepared_.reset(); }

  const proc::RunResult& result() const { return result_; }
  // The signal that stopped the command before it started, or 0.
  int interrupted_by() const { return interrupted_by_; }
  // What idem exits with for this attempt: the command's code as a shell reports it (126/127,
  // 124, 128+N), or 128+N for a signal that came before the start.
  int exit_code() const;

 private:
  proc::CommandRunner& runner_;
  proc::RunSpec spec_;
  Capture capture_;
  int64_t stored_cap_;
  std::unique_ptr<proc::PreparedCommand> prepared_;
  proc::RunResult result_;
  int interrupted_by_ = 0;
};

}  // namespace idem::engine
