#pragma once
// Running a command the way `idem run` needs: its own process group, stdin passed through,
// stdout and stderr streamed live and captured in order, signals forwarded, a timeout.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/output.hpp"
#include "core/record.hpp"

namespace idem::proc {

struct RunSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> extra_env;  // added to idem's environment
  std::vector<std::string> unset_env;  // names removed from idem's environment (not extra_env)
  int stdin_fd = 0;                    // the command's stdin (idem's own by default)
  // The command's working directory; empty: idem's. One that cannot be entered is an exec
  // failure (started false, exec_errno chdir's errno): nothing of the command runs.
  std::string cwd;
  // stderr goes down stdout's pipe: the capture holds both in the exact order they were written
  // (webhook's "combined output"), all of it as stdout. Live output then goes to live_stdout_fd.
  // Also done, whatever this says, when the two live fds are one open file that is not a
  // character device (`>log 2>&1`, `2>&1 | ...`): see run_command.
  bool stderr_to_stdout = false;
  // The command's stdout and stderr are one pseudo-terminal, so that what buffers when piped
  // (Python's print, stdio) writes as to a terminal; the capture is what the terminal received
  // (its line discipline's "\r\n" included), all of it as stdout in the order written. Its
  // window size is the terminal's of live_stdout_fd, where that is one. `idem run --pty`.
  bool pty = false;
  int live_stdout_fd = 1;  // where live output goes; -1 to only capture
  int live_stderr_fd = 2;
  int64_t max_output = INT64_MAX;  // capture cap; live output always passes whole
  // Called on the running thread with each piece the capture kept, in order, as it is read: the
  // capture's bytes, cut at its cap (a follower's feed, engine/live_feed.hpp). May block a while
  // (the command then waits on its pipe, as for a slow terminal).
  std::function<void(core::Stream, std::string_view)> on_output;
  int64_t timeout_ms = 0;  // 0: none
  // After the TERM of a timeout, or after forwarding a first INT/TERM/HUP, KILL the group this
  // much later (a second such signal KILLs it at once).
  int64_t kill_after_ms = 10000;
  // Once the command has exited, its pipes are read on until EOF (what its background processes
  // still write) for this long at most; then they are closed, and a process still writing to
  // them gets SIGPIPE (EPIPE where it ignores that). 0: only what they already hold.
  int64_t drain_ms = 0;
  // Once the command has exited, the run goes on while anything of its process group lives (what
  // it started in the background), its pipes read meanwhile: the timeout and stop_fd then TERM
  // and KILL the whole group, so nothing of it outlives them. drain_ms counts from the group's
  // end. (A notify command: it ends, all of it, by its timeout.)
  bool wait_group = false;
  // When this descriptor becomes readable (the attempt's lease was lost), the command's group is
  // stopped as by a timeout: TERM, KILL kill_after_ms later. -1: none.
  int stop_fd = -1;
  // The controlling terminal, when it is idem's stdin: while idem's group is its foreground,
  // the command's group gets the foreground for its run, as a shell's job control gives it to
  // a job (a prompt reads the terminal rather than stopping on SIGTTIN; Ctrl-C and Ctrl-Z reach
  // the command's group), and idem's gets it back after. A stop of the command (Ctrl-Z, or a
  // read of the terminal from the background) stops idem's own group with the same signal, so
  // the shell sees its job stopped; once idem is continued, so is the command (with the
  // terminal when idem is in the foreground again). For `run` only: not for commands started
  // several at a time (each, the daemon).
  bool terminal = false;
  // Called with the command's process group (the child is its leader) after fork and before the
  // command is exec'd: what it records is durable before the command can start anything. If it
  // throws, the child is killed before it ran, and the exception propagates.
  std::function<void(const core::ProcessGroup&)> on_spawn;
  // Called once on the running thread after the command has exec'd, before its output is read
  // (its pipes hold what it writes meanwhile, up to their size); its timeout counts already.
  // What idem does while the command runs rather than after it (engine::Attempt::meanwhile).
  // Must not throw.
  std::function<void()> meanwhile;
  // The command runs in a cgroup of its own (proc/cgroup.hpp) where one can be made: the group
  // given to on_spawn (or the prepared command's) names it, and it is removed after the run when
  // nothing of the command is left in it. For attempts (engine::CommandEffect).
  bool own_cgroup = false;
};

struct RunResult {
  bool started = false;  // false: exec failed (see exec_errno)
  int exec_errno = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;  // the command died of this signal
  bool timed_out = false;
  bool stopped = false;  // stop_fd became readable while the command ran
  core::CapturedOutput output;
  // The first of SIGINT/SIGTERM/SIGHUP idem received and forwarded, if any.
  std::optional<int> forwarded_signal;
  // The group got KILL because it outlived a forwarded signal by kill_after_ms, or a second one.
  bool escalated = false;
};

// Installs idem's handlers for SIGINT, SIGTERM and SIGHUP (recorded, later forwarded to the
// command's group), then install_child_handlers(). For `run`, which has one command at a time.
// Call once, before the claim: a signal that arrives between the claim and the start of the
// command is then seen, not fatal.
void install_signal_handlers();
// Only what run_command needs: a SIGCHLD handler waking its loop, SIGPIPE ignored. For callers
// that run several commands at once (each, serve) and handle INT/TERM/HUP themselves.
void install_child_handlers();
// The first forwarded-kind signal received so far, or 0.
int pending_signal();
// Whether idem installed its handler for `sig` (the handlers above). Only those numbers are taken
// from the self-pipe; any other byte there was not written by a handler and is ignored.
bool handles_signal(int sig);
// A signal's abbreviation ("INT", "TERM"), or "signal N" for a number that has none (a real-time
// signal, or not a signal at all): never a null pointer, as sigabbrev_np() can return.
std::string signal_name(int sig);

// Runs the command to completion. Never throws for the command's own failures. When
// live_stdout_fd and live_stderr_fd are one open file description that keeps writes in order (a
// regular file, a pipe or a socket: `>log 2>&1`, `2>&1 | ...`), the command gets one pipe for
// both, as with stderr_to_stdout, so they reach it in the order written; the capture then holds
// all of it as stdout. The command starts in a child created with clone(CLONE_VM) (a fork on a
// CPU proc/child_exec.cpp has no system calls for), which copies nothing of idem's memory and
// execs the command itself: its own group, recorded by on_spawn before it starts; signals reset;
// PDEATHSIG; exec errors in exec_errno.
RunResult run_command(const RunSpec& spec);

// A command made ready ahead of its claim: its child exists, the leader of its own process group,
// and waits to exec, so the group can be recorded in the claim's own write. Dropped unstarted (the
// claim went another way), the child is killed and reaped before anything of the command ran.
// Started and dropped on the thread that prepared it, which starts no other command meanwhile.
class PreparedCommand {
 public:
  virtual ~PreparedCommand() = default;
  virtual core::ProcessGroup group() const = 0;
};

// Prepares `spec`'s command (prepare_command) where the child can wait in idem's memory (see
// proc/child_exec.hpp); nullptr elsewhere, or when no child could be created now (run_command
// then meets the failure again, and reports it).
std::unique_ptr<PreparedCommand> prepare_command(const RunSpec& spec);
// Starts a prepared command and runs it as run_command does, with `spec`: the one it was prepared
// with, plus extra_env added since (the environment is made again before the command execs). Its
// on_spawn is not called: the group is known already. A `prepared` of another kind: run_command.
RunResult run_prepared_command(std::unique_ptr<PreparedCommand> prepared, const RunSpec& spec);

// Runs commands for the attempt engine: the real one spawns (run_command); the tests' fake
// records each spec and returns scripted results, so the engine is tested without processes.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // As run_command: calls spec.on_spawn before the command starts, and lets what it throws out.
  virtual RunResult run(const RunSpec& spec) = 0;
  // As prepare_command; nullptr: this runner creates the child in run() only.
  virtual std::unique_ptr<PreparedCommand> prepare(const RunSpec&) { return nullptr; }
  // As run_prepared_command.
  virtual RunResult run_prepared(std::unique_ptr<PreparedCommand>, const RunSpec& spec) {
    return run(spec);
  }
};

class SpawningRunner final : public CommandRunner {
 public:
  RunResult run(const RunSpec& spec) override { return run_command(spec); }
  std::unique_ptr<PreparedCommand> prepare(const RunSpec& spec) override {
    return prepare_command(spec);
  }
  RunResult run_prepared(std::unique_ptr<PreparedCommand> prepared, const RunSpec& spec) override {
    return run_prepared_command(std::move(prepared), spec);
  }
};

// The runner of run, each and the daemon.
CommandRunner& spawning_runner();

// The exit code a shell would report for this result (126/127 for exec failures, 124 timeout).
int exit_code_for(const RunResult& result);

// The outcome to record: succeeded only for exit 0 without a signal or timeout; the exit code
// (126/127 when it could not start), signal, timeout flag, captured output, and a note saying why
// when it is not an exit code. Callers may replace the note.
core::Outcome outcome_of(const RunResult& result, int64_t finished_ms);
// The same, taking the captured output over instead of copying it (result.output is left empty).
core::Outcome outcome_taking_output(RunResult& result, int64_t finished_ms);

}  // namespace idem::proc
