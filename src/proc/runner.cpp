#include "proc/runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "proc/liveness.hpp"
#include "util/clock.hpp"
#include "util/crash_point.hpp"
#include "util/fd.hpp"

extern char** environ;

namespace idem::proc {

namespace {

// Self-pipe: the handler writes the signal number; the poll loop reads and forwards it.
int g_signal_pipe[2] = {-1, -1};
volatile sig_atomic_t g_first_signal = 0;
// The signals handle() installed on_signal for (bit N: signal N). Set before any of them can
// arrive, read only by the poll loop.
uint64_t g_handled = 0;

void on_signal(int sig) {
  int saved = errno;
  if (sig != SIGCHLD && g_first_signal == 0) g_first_signal = sig;
  char byte = char(sig);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

void handle(int sig) {
  g_handled |= uint64_t(1) << sig;
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: a signal must not turn SQLite's or stdio's system calls into errors.
  sa.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
  ::sigaction(sig, &sa, nullptr);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

struct Pipe {
  util::Fd read;
  util::Fd write;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  return Pipe{util::Fd(fds[0]), util::Fd(fds[1])};
}

// A live destination (idem's stdout or stderr). If the reader goes away (EPIPE), live output
// stops but capture goes on: the command must not be killed because a terminal closed.
struct LiveSink {
  int fd;
  void write(std::string_view bytes) {
    while (fd >= 0 && !bytes.empty()) {
      ssize_t n = ::write(fd, bytes.data(), bytes.size());
      if (n >= 0) {
        bytes.remove_prefix(size_t(n));
      } else if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, -1);
      } else if (errno != EINTR) {
        fd = -1;
      }
    }
  }
};

// What idem handles or ignores, given back their defaults in the command.
constexpr int k_reset_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT, SIGXFSZ};

// Everything the child needs, prepared before fork so the child only calls async-signal-safe
// functions.
struct ExecPlan {
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecPlan make_plan(const RunSpec& spec) {
  ExecPlan plan;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool overridden = std::any_of(spec.extra_env.begin(), spec.extra_env.end(), [&](auto& kv) {
      return entry.size() > kv.first.size() && entry.substr(0, kv.first.size()) == kv.first &&
             entry[kv.first.size()] == '=';
    });
    bool removed = std::any_of(spec.unset_env.begin(), spec.unset_env.end(), [&](auto& name) {
      return entry.size() > name.size() && entry.substr(0, name.size()) == name &&
             entry[name.size()] == '=';
    });
    if (!overridden && !removed) plan.env_storage.emplace_back(entry);
  }
  for (const auto& [name, value] : spec.extra_env) plan.env_storage.push_back(name + "=" + value);
  for (auto& e : plan.env_storage) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  for (const auto& a : spec.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  return plan;
}

[[noreturn]] void exec_child(const RunSpec& spec, ExecPlan& plan, pid_t parent, int out_fd,
                             int err_fd, int status_fd, int go_fd, int go_write_fd) {
  ::setpgid(0, 0);
  // If idem is killed (even with SIGKILL) the command is killed too, so a record shown as
  // abandoned is not still doing its work behind the user's back. That reaches this process
  // only: what it starts is found again through the process group idem records.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(127);
  // Wait until idem has recorded the group: one byte means go, EOF means idem gave up or died.
  ::close(go_write_fd);
  char go = 0;
  ssize_t got;
  do got = ::read(go_fd, &go, 1);
  while (got < 0 && errno == EINTR);
  if (got != 1) _exit(127);
  for (int sig : k_reset_signals) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (spec.stdin_fd != 0) ::dup2(spec.stdin_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(spec.stderr_to_stdout ? out_fd : err_fd, 2);
  if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) {
    int err = errno;
    [[maybe_unused]] ssize_t n = ::write(status_fd, &err, sizeof err);
    _exit(127);
  }
  ::execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
  int err = errno;
  [[maybe_unused]] ssize_t n = ::write(status_fd, &err, sizeof err);
  _exit(127);
}

// A forked command: its pid (the leader of its own group) and the read ends of its stdout and
// stderr.
struct Child {
  pid_t pid;
  util::Fd out;
  util::Fd err;
};

// Hands the group to on_spawn before the command can start anything. If it throws, the child
// (which has not exec'd: nothing of the command ran) is killed and reaped.
void record_group(const RunSpec& spec, pid_t pid) {
  if (!spec.on_spawn) return;
  try {
    spec.on_spawn(core::ProcessGroup{int64_t(pid), start_ticks(pid)});
  } catch (...) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw;
  }
}

// Lets the child exec: one byte, then EOF.
void send_go(util::Fd& go) {
  const char byte = 1;
  while (::write(go.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  go.reset();
}

// The errno exec failed with, written by the child; 0 (EOF: close-on-exec) when exec succeeded.
int read_exec_error(const util::Fd& status) {
  int exec_error = 0;
  for (;;) {
    ssize_t n = ::read(status.get(), &exec_error, sizeof exec_error);
    if (n < 0 && errno == EINTR) continue;
    if (n != ssize_t(sizeof exec_error)) exec_error = 0;
    return exec_error;
  }
}

// The pipes between idem and a starting command: its stdout and stderr, the exec status (the
// errno of a failed exec; EOF at exec) and the go byte.
struct ChildPipes {
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  Pipe status = make_pipe();
  Pipe go = make_pipe();
};

// After the child exists in its own group: records the group, lets it exec, and notes in
// `result` whether exec succeeded.
Child start(const RunSpec& spec, pid_t pid, ChildPipes& pipes, RunResult& result) {
  pipes.out.write.reset();
  pipes.err.write.reset();
  pipes.status.write.reset();
  pipes.go.read.reset();
  record_group(spec, pid);
  send_go(pipes.go.write);
  result.exec_errno = read_exec_error(pipes.status.read);
  result.started = result.exec_errno == 0;
  if (result.started) IDEM_CRASH_POINT("running");
  return Child{pid, std::move(pipes.out.read), std::move(pipes.err.read)};
}

// Forks the command into its own process group; the child waits for the go byte itself. Cheap
// in a small process; fork() copies the page tables of a big many-threaded one.
std::optional<Child> spawn_forked(const RunSpec& spec, RunResult& result) {
  ExecPlan plan = make_plan(spec);
  ChildPipes pipes;
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    result.exec_errno = errno;
    return std::nullopt;
  }
  if (pid == 0)
    exec_child(spec, plan, parent, pipes.out.write.get(), pipes.err.write.get(),
               pipes.status.write.get(), pipes.go.read.get(), pipes.go.write.get());
  // Both sides set the group, so it exists before either uses it.
  ::setpgid(pid, pid);
  return start(spec, pid, pipes, result);
}

// The same descriptor, moved above the ones the helper's file actions write (0-4) if needed.
void move_above_helper_fds(util::Fd& fd) {
  if (fd.get() > 4) return;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 5);
  if (moved < 0) throw std::runtime_error(std::string("fcntl: ") + strerror(errno));
  fd = util::Fd(moved);
}

// What posix_spawn gives the helper: fds 0-4 (see spawn_helper.cpp), its own group, the
// signals idem handles at their defaults, an empty mask.
struct HelperAttributes {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  HelperAttributes(const RunSpec& spec, ChildPipes& pipes) {
    for (util::Fd* fd : {&pipes.out.write, &pipes.err.write, &pipes.go.read, &pipes.status.write})
      move_above_helper_fds(*fd);
    posix_spawn_file_actions_init(&actions);
    if (spec.stdin_fd != 0) posix_spawn_file_actions_adddup2(&actions, spec.stdin_fd, 0);
    posix_spawn_file_actions_adddup2(&actions, pipes.out.write.get(), 1);
    posix_spawn_file_actions_adddup2(
        &actions, spec.stderr_to_stdout ? pipes.out.write.get() : pipes.err.write.get(), 2);
    posix_spawn_file_actions_adddup2(&actions, pipes.go.read.get(), 3);
    posix_spawn_file_actions_adddup2(&actions, pipes.status.write.get(), 4);
    // The helper is found by an absolute path, so entering the directory first changes only
    // where the command runs (and where a relative PATH entry points, as with fork).
    if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int sig : k_reset_signals) sigaddset(&defaults, sig);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
  }
  ~HelperAttributes() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  HelperAttributes(const HelperAttributes&) = delete;
  HelperAttributes& operator=(const HelperAttributes&) = delete;
};

// Starts the command through the spawn helper: posix_spawn (no page-table copy) of the helper,
// which waits for the go byte and execs the command. Falls back to fork when the helper cannot
// be started (removed since idem found it).
std::optional<Child> spawn_with_helper(const RunSpec& spec, RunResult& result,
                                       const std::string& helper) {
  ExecPlan plan = make_plan(spec);
  ChildPipes pipes;
  HelperAttributes attributes(spec, pipes);
  std::string parent = std::to_string(::getpid());
  const char* path = ::getenv("PATH");
  std::string path_entry = path != nullptr ? std::string("PATH=") + path : std::string();
  std::vector<char*> argv = {const_cast<char*>(helper.c_str()), parent.data(), path_entry.data()};
  argv.insert(argv.end(), plan.argv.begin(), plan.argv.end());
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, helper.c_str(), &attributes.actions, &attributes.attr, argv.data(),
                         plan.envp.data());
  // A directory that cannot be entered fails the spawn too: the forked child then reports it.
  if (rc != 0) return spawn_forked(spec, result);
  return start(spec, pid, pipes, result);
}

// Watches a spawned command to its end: one loop drains both pipes (a full 64 KiB pipe would
// block the writer), forwards signals and enforces the timeout; then the command is reaped.
class Watch {
 public:
  Watch(const RunSpec& spec, Child& child, RunResult& result)
      : spec_(spec),
        child_(child),
        result_(result),
        live_out_{spec.live_stdout_fd},
        live_err_{spec.live_stderr_fd},
        term_at_(spec.timeout_ms > 0 ? util::monotonic_ms() + spec.timeout_ms : -1) {
    set_nonblocking(child_.out.get());
    set_nonblocking(child_.err.get());
  }

  // Ends at EOF on both pipes, or drain_ms after the command exited: a background process
  // that keeps a pipe open has that long to write what it still has, and then does not hold
  // idem hostage (its pipes are closed).
  void loop() {
    while (child_.out.valid() || child_.err.valid()) {
      const int64_t now = util::monotonic_ms();
      if (exited_ && drain_until_ < 0) {
        term_at_ = -1;  // the command ended before its timeout: no TERM for what it left
        drain_until_ = now + spec_.drain_ms;
      }
      if (exited_ && now >= drain_until_) {
        // Take what is already buffered, then stop.
        if (child_.out.valid()) drain(child_.out, core::Stream::out, live_out_);
        if (child_.err.valid()) drain(child_.err, core::Stream::err, live_err_);
        child_.out.reset();
        child_.err.reset();
        break;
      }
      std::vector<pollfd> fds;
      fds.push_back({g_signal_pipe[0], POLLIN, 0});
      if (spec_.stop_fd >= 0 && !result_.stopped) fds.push_back({spec_.stop_fd, POLLIN, 0});
      if (child_.out.valid()) fds.push_back({child_.out.get(), POLLIN, 0});
      if (child_.err.valid()) fds.push_back({child_.err.get(), POLLIN, 0});
      int ready = ::poll(fds.data(), fds.size(), poll_timeout(now));
      if (ready < 0 && errno != EINTR) break;
      enforce_deadlines(util::monotonic_ms());
      if (ready <= 0) continue;
      for (const auto& p : fds) {
        if (p.revents == 0) continue;
        if (p.fd == g_signal_pipe[0]) {
          read_signals();
        } else if (p.fd == spec_.stop_fd) {
          stop();
        } else if (child_.out.valid() && p.fd == child_.out.get()) {
          drain(child_.out, core::Stream::out, live_out_);
        } else if (child_.err.valid() && p.fd == child_.err.get()) {
          drain(child_.err, core::Stream::err, live_err_);
        }
      }
      if (!child_.out.valid() && !child_.err.valid()) reap(0);
    }
  }

  // Reaps the command and notes how it ended.
  void finish() {
    reap(0);
    // After a forwarded signal or a timeout, nothing of the command's group may outlive it.
    if (result_.forwarded_signal || result_.timed_out || result_.stopped)
      ::kill(-child_.pid, SIGKILL);
    if (WIFEXITED(wait_status_)) {
      result_.exit_code = WEXITSTATUS(wait_status_);
    } else if (WIFSIGNALED(wait_status_)) {
      result_.signal = WTERMSIG(wait_status_);
    }
  }

 private:
  // Until the next deadline (the timeout's TERM, a KILL, the end of the drain), or forever when
  // there is none.
  int poll_timeout(int64_t now) const {
    int64_t next = -1;
    for (int64_t at : {term_at_, kill_at_, drain_until_})
      if (at >= 0) next = next < 0 ? at : std::min(next, at);
    return next < 0 ? -1 : int(std::min<int64_t>(INT32_MAX, std::max<int64_t>(0, next - now)));
  }

  // The timeout TERMs the group, then KILLs it kill_after_ms later if it is still there.
  void enforce_deadlines(int64_t now) {
    if (term_at_ >= 0 && now >= term_at_) {
      result_.timed_out = true;
      ::kill(-child_.pid, SIGTERM);
      term_at_ = -1;
      if (kill_at_ < 0) kill_at_ = now + spec_.kill_after_ms;
    } else if (kill_at_ >= 0 && now >= kill_at_) {
      ::kill(-child_.pid, SIGKILL);
      if (result_.forwarded_signal) result_.escalated = true;
      kill_at_ = -1;
    }
  }

  // The caller asked for the command to end (stop_fd): TERM now, KILL after the grace.
  void stop() {
    result_.stopped = true;
    ::kill(-child_.pid, SIGTERM);
    const int64_t grace_end = util::monotonic_ms() + spec_.kill_after_ms;
    kill_at_ = kill_at_ < 0 ? grace_end : std::min(kill_at_, grace_end);
  }

  // What the handlers wrote to the self-pipe: SIGCHLD reaps, the others are forwarded. A byte no
  // handler could have written (the pipe took a closed stdout's or stderr's number, and
  // something wrote there) is no signal idem received: it is dropped, never sent on.
  void read_signals() {
    unsigned char sigs[64];
    ssize_t n;
    while ((n = ::read(g_signal_pipe[0], sigs, sizeof sigs)) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        const int sig = sigs[i];
        if (!handles_signal(sig)) continue;
        if (sig == SIGCHLD) {
          reap(WNOHANG);
        } else {
          forward(sig);
        }
      }
    }
  }

  void forward(int sig) {
    if (!result_.forwarded_signal) {
      // A command that ignores the signal still ends: KILL after the grace.
      result_.forwarded_signal = sig;
      ::kill(-child_.pid, sig);
      const int64_t grace_end = util::monotonic_ms() + spec_.kill_after_ms;
      kill_at_ = kill_at_ < 0 ? grace_end : std::min(kill_at_, grace_end);
    } else {
      // A second signal: the user does not want to wait for the grace.
      ::kill(-child_.pid, SIGKILL);
      result_.escalated = true;
      kill_at_ = -1;
    }
  }

  // Reads what is available on one pipe; closes it at EOF or on an error.
  void drain(util::Fd& fd, core::Stream stream, LiveSink& live) {
    for (;;) {
      ssize_t n = ::read(fd.get(), buf_, sizeof buf_);
      if (n > 0) {
        std::string_view bytes(buf_, size_t(n));
        live.write(bytes);
        result_.output.append(stream, bytes);
        continue;
      }
      if (n == 0) {
        fd.reset();
        return;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN) fd.reset();
      return;
    }
  }

  void reap(int flags) {
    if (exited_) return;
    pid_t r;
    do r = ::waitpid(child_.pid, &wait_status_, flags);
    while (r < 0 && errno == EINTR);
    if (r == child_.pid) exited_ = true;
  }

  const RunSpec& spec_;
  Child& child_;
  RunResult& result_;
  LiveSink live_out_;
  LiveSink live_err_;
  int64_t term_at_;       // monotonic ms of the timeout's TERM; -1: none (any more)
  int64_t kill_at_ = -1;  // monotonic ms of the KILL after a grace; -1: none
  int64_t drain_until_ = -1;  // monotonic ms the pipes are closed at, once the command exited
  bool exited_ = false;
  int wait_status_ = 0;
  char buf_[65536];
};

// Whether idem's live stdout and stderr are one open file description that keeps writes in the
// order they are made: a regular file, a pipe or a socket (`>log 2>&1`, `2>&1 | ...`, a
// service's journal). Two pipes, read in turn, cannot tell which of two writes on different
// streams came first; one pipe for both gives that file exactly the command's order. Not a
// terminal: a person watches it at a person's pace, and the record keeps the streams apart for
// a later replay to two places (the capture of one pipe is all stdout); nor /dev/null, which
// keeps nothing.
bool one_ordered_destination(const RunSpec& spec) {
  if (spec.live_stdout_fd < 0 || spec.live_stderr_fd < 0) return false;
  struct stat st{};
  if (::fstat(spec.live_stdout_fd, &st) != 0) return false;
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) return false;
  return util::same_open_file(spec.live_stdout_fd, spec.live_stderr_fd);
}

}  // namespace

void install_child_handlers() {
  if (g_signal_pipe[0] < 0) {
    if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
      throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  }
  handle(SIGCHLD);
  ::signal(SIGPIPE, SIG_IGN);
}

void install_signal_handlers() {
  install_child_handlers();
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) handle(sig);
}

int pending_signal() { return g_first_signal; }

bool handles_signal(int sig) { return sig > 0 && sig < 64 && (g_handled >> sig) & 1; }

std::string signal_name(int sig) {
  const char* abbreviation = sigabbrev_np(sig);
  return abbreviation != nullptr ? abbreviation : "signal " + std::to_string(sig);
}

RunResult run_command(const RunSpec& spec, const std::string& helper) {
  if (!spec.stderr_to_stdout && one_ordered_destination(spec)) {
    RunSpec one_pipe = spec;
    one_pipe.stderr_to_stdout = true;
    return run_command(one_pipe, helper);
  }
  RunResult result;
  result.output = core::CapturedOutput(spec.max_output);
  if (g_signal_pipe[0] < 0) install_child_handlers();
  std::optional<Child> child =
      helper.empty() ? spawn_forked(spec, result) : spawn_with_helper(spec, result, helper);
  if (!child) return result;
  Watch watch(spec, *child, result);
  watch.loop();
  watch.finish();
  return result;
}

core::Outcome outcome_of(const RunResult& result, int64_t finished_ms) {
  RunResult without_output = result;  // copies the output, which the next call then takes
  return outcome_taking_output(without_output, finished_ms);
}

core::Outcome outcome_taking_output(RunResult& result, int64_t finished_ms) {
  core::Outcome o;
  o.status = result.started && !result.timed_out && !result.stopped && !result.signal &&
                     result.exit_code == 0
                 ? core::Status::succeeded
                 : core::Status::failed;
  o.exit_code = result.started ? result.exit_code : exit_code_for(result);
  o.signal = result.signal;
  o.timed_out = result.timed_out;
  o.output_truncated = result.output.truncated();
  o.output_bytes = result.output.stored_bytes();
  o.output = result.output.take_encoded();
  o.finished_ms = finished_ms;
  if (!result.started) o.note = std::string("could not start: ") + strerror(result.exec_errno);
  else if (result.timed_out) o.note = "stopped by its timeout";
  else if (result.stopped) o.note = "stopped: its attempt's lease was lost";
  else if (result.forwarded_signal && result.escalated)
    o.note = "idem received " + signal_name(*result.forwarded_signal) +
             "; the command outlived it and was killed";
  else if (result.forwarded_signal)
    o.note = "idem received " + signal_name(*result.forwarded_signal);
  return o;
}

CommandRunner& spawning_runner() {
  static SpawningRunner runner;
  return runner;
}

CommandRunner& daemon_runner() {
  static SpawningRunner runner(find_spawn_helper());
  return runner;
}

std::string find_spawn_helper() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string exe(buf, size_t(n));
  std::string dir = exe.substr(0, exe.rfind('/') + 1);
  for (std::string candidate : {dir + "idem-spawn", dir + "../libexec/idem/idem-spawn"})
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  return {};
}

int exit_code_for(const RunResult& result) {
  if (!result.started) return result.exec_errno == ENOENT ? 127 : 126;
  if (result.timed_out) return 124;
  if (result.signal) return 128 + *result.signal;
  return result.exit_code.value_or(0);
}

}  // namespace idem::proc
