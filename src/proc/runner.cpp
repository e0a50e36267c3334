#include "proc/runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/errors.hpp"
#include "proc/cgroup.hpp"
#include "proc/child_exec.hpp"
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
  struct sigaction sa {};
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
  if (::pipe2(fds, O_CLOEXEC) != 0) throw os_error("pipe", errno);
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

// What idem handles or ignores, given back their defaults in the command (and any other signal
// idem has a handler for: see ChildPlan::reset_signals).
constexpr int k_reset_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT, SIGXFSZ};

// Everything the child needs, prepared before it exists: it only makes raw system calls.
struct ExecPlan {
  std::vector<std::string> env_storage;
  // A free slot, then the command's argv: a file without '#!' runs as `/bin/sh file args`.
  std::vector<char*> argv;
  std::vector<char*> envp;
  ChildPlan child;
};

// The command's environment: idem's, less unset_env, with extra_env. For a command prepared ahead
// of its claim, made only before the go byte (its IDEM_ATTEMPT is known only then).
void make_env(const RunSpec& spec, ExecPlan& plan) {
  plan.env_storage.clear();
  plan.envp.clear();
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
  plan.child.envp = plan.envp.data();
}

// All of the child's plan but the environment (make_env), which the child reads after the go byte.
void make_plan(const RunSpec& spec, ExecPlan& plan) {
  plan.argv.push_back(nullptr);
  for (const auto& a : spec.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  ChildPlan& child = plan.child;
  child.argv = plan.argv.data() + 1;
  child.path = ::getenv("PATH");  // execvpe's rule: idem's PATH, not the command's
  child.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  child.parent = ::getpid();
  child.stdin_fd = spec.stdin_fd;
  for (int sig : k_reset_signals) child.reset_signals |= uint64_t(1) << sig;
}

// A started command: its pid (the leader of its own group) and the read ends of its stdout and
// stderr.
struct Child {
  pid_t pid;
  util::Fd out;
  util::Fd err;
  std::string cgroup;  // the attempt's, or empty
  // Readable once the command has exited; invalid where the kernel has no pidfd_open (SIGCHLD
  // through the self-pipe tells then).
  util::Fd exit;
};

// A descriptor that becomes readable when `pid` exits. It replaces SIGCHLD for the wait: a
// signal goes to one thread of the process and its byte to the one self-pipe every thread
// running a command polls, so in the daemon each command's exit woke every such thread (all but
// one for nothing), and the thread whose command it was learnt of it from the pipe's EOF only.
util::Fd exit_descriptor(pid_t pid) { return util::Fd(int(::syscall(SYS_pidfd_open, pid, 0))); }

// Lets the child exec: one byte, then EOF.
void send_go(util::Fd& go) {
  const char byte = 1;
  while (::write(go.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  go.reset();
}

// The errno a failed chdir or exec wrote; 0 when exec succeeded. Reads to EOF (close-on-exec,
// or the child's exit): only then has the child left idem's memory, its stack and the plan.
int read_exec_error(const util::Fd& status) {
  int exec_error = 0;
  size_t have = 0;
  for (;;) {
    int more = 0;
    pollfd wait_for{status.get(), POLLIN, 0};
    if (::poll(&wait_for, 1, -1) < 0 && errno == EINTR) continue;
    ssize_t n = ::read(status.get(), &more, sizeof more);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return have == sizeof exec_error ? exec_error : 0;
    if (have == 0 && n == ssize_t(sizeof more)) exec_error = more;
    have += size_t(n);
  }
}

// The same descriptor, moved above 0-2 if needed: the child makes fds 0-2 the command's, which
// must not overwrite one it has still to use.
void move_above_std_fds(util::Fd& fd) {
  if (fd.get() > 2) return;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) throw os_error("fcntl", errno);
  fd = util::Fd(moved);
}

// A pseudo-terminal as a pipe: its master to read (EIO, once every slave is closed, ends it as
// EOF ends a pipe), its slave to write. The window size of `like`'s terminal, where it is one.
Pipe make_pty(int like) {
  util::Fd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (master.get() < 0 || ::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0)
    throw os_error("posix_openpt", errno);
  char name[64];
  if (::ptsname_r(master.get(), name, sizeof name) != 0) throw os_error("ptsname", errno);
  util::Fd slave(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (slave.get() < 0) throw os_error("open " + std::string(name), errno);
  winsize size{};
  if (like >= 0 && ::ioctl(like, TIOCGWINSZ, &size) == 0) ::ioctl(slave.get(), TIOCSWINSZ, &size);
  return Pipe{std::move(master), std::move(slave)};
}

// The pipes between idem and a starting command: its stdout and stderr (or the one terminal of
// RunSpec::pty), the exec status (the errno of a failed exec; EOF at exec) and the go byte.
struct ChildPipes {
  Pipe out;
  Pipe err = make_pipe();
  Pipe status = make_pipe();
  Pipe go = make_pipe();
  ChildPipes(const RunSpec& spec, ChildPlan& plan)
      : out(spec.pty ? make_pty(spec.live_stdout_fd) : make_pipe()) {
    for (util::Fd* fd : {&out.write, &err.write, &status.write, &go.read}) move_above_std_fds(*fd);
    plan.out_fd = out.write.get();
    plan.err_fd = spec.stderr_to_stdout || spec.pty ? out.write.get() : err.write.get();
    plan.go_fd = go.read.get();
    plan.go_write_fd = go.write.get();
    plan.status_fd = status.write.get();
  }
};

// The child's stack: one per thread that starts commands, kept for the thread's life (mapping
// and unmapping one per command would cost a TLB shoot-down across the daemon's threads each
// time). Reused safely: a thread starts its next command only once the last one has exec'd or
// exited. 64 KiB: the child's deepest frame is a 4 KiB path buffer; a guard page below.
class ChildStack {
 public:
  static constexpr size_t k_size = 64 * 1024;
  ~ChildStack() {
    if (base_ != nullptr) ::munmap(base_, k_size);
  }
  void* top() {
    if (base_ == nullptr) {
      void* base = ::mmap(nullptr, k_size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
      if (base == MAP_FAILED) throw os_error("mmap", errno);
      ::mprotect(base, size_t(::sysconf(_SC_PAGESIZE)), PROT_NONE);
      base_ = base;
    }
    return static_cast<char*>(base_) + k_size;
  }
  // Its lowest address (top() maps it first).
  void* base() const { return base_; }
  // A child on it has not exec'd or exited yet (PendingChild).
  bool busy = false;

 private:
  void* base_ = nullptr;
};

// Creates the child that runs child_exec: on this CPU clone(CLONE_VM), which shares idem's
// memory, so nothing is copied (fork() copies the page tables of the whole process, which in the
// many-threaded daemon was most of what a new delivery cost) and the command is the only exec;
// without CLONE_VFORK, as the child waits for the go byte while this thread records the group
// (or claims the key with it). Every signal is blocked in this thread across the clone, so the
// child starts with them all blocked and none of idem's handlers runs on its stack before it has
// reset them. With `cgroup_fd` (>= 0), created in that cgroup (clone3). Elsewhere, a fork.
// Returns the pid, or -errno.
pid_t create_child(ChildPlan& plan, ChildStack& stack, int cgroup_fd) {
#if IDEM_CHILD_SHARES_MEMORY
  void* top = stack.top();
  sigset_t all;
  sigset_t saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  const long pid = cgroup_fd >= 0 ? clone_child_into(plan, stack.base(), top, cgroup_fd)
                                  : clone_child(plan, top);
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return pid_t(pid);
#else
  (void)stack;
  (void)cgroup_fd;
  pid_t pid = ::fork();
  if (pid == 0) child_exec(&plan);
  return pid < 0 ? -errno : pid;
#endif
}

// A command's child between its creation and its go byte: the leader of its own process group,
// reading the go pipe, nothing of the command run yet. Dropped before start() (a claim that did
// not go to it, an error), the child is killed and reaped. Kept at one address (the child reads
// the plan) and on the thread that made it (the child runs on that thread's stack), which makes
// no other child until this one has exec'd or exited.
class PendingChild final : public PreparedCommand {
 public:
  explicit PendingChild(RunSpec spec) : spec_(std::move(spec)), pipes_(spec_, plan_.child) {
    make_plan(spec_, plan_);
  }
  PendingChild(const PendingChild&) = delete;
  PendingChild& operator=(const PendingChild&) = delete;
  ~PendingChild() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      remove_cgroup_if_empty(group_.cgroup);
    }
    if (holds_stack_) stack_.busy = false;
  }

  // Creates the child; 0, or the errno of the failure.
  int create() {
    if (stack_.busy) throw std::logic_error("a command is already starting on this thread");
#if !IDEM_CHILD_SHARES_MEMORY
    make_env(spec_, plan_);  // a forked child has its own copy of the plan from here on
#endif
    // All that the command starts is in its cgroup from its exec on: the child is created in it,
    // or (a kernel that cannot) moved into it before the go byte.
    AttemptCgroup cgroup;
    if (spec_.own_cgroup && IDEM_CHILD_SHARES_MEMORY) cgroup = make_attempt_cgroup();
    pid_t pid = create_child(plan_.child, stack_, cgroup.dir.valid() ? cgroup.dir.get() : -1);
    if (pid < 0 && cgroup.dir.valid()) {
      drop_attempt_cgroup(cgroup, -pid);
      pid = create_child(plan_.child, stack_, -1);
    }
    if (pid < 0) return -pid;
    cgroup.dir.reset();
    stack_.busy = holds_stack_ = true;
    pid_ = pid;
    // Both sides set the group, so it exists before either uses it.
    ::setpgid(pid_, pid_);
    group_ = core::ProcessGroup{int64_t(pid_), start_ticks(pid_), std::move(cgroup.path)};
    if (spec_.own_cgroup && group_.cgroup.empty())
      group_.cgroup = place_in_attempt_cgroup(pid_, group_.leader_start_ticks);
    pipes_.out.write.reset();
    pipes_.err.write.reset();
    pipes_.status.write.reset();
    pipes_.go.read.reset();
    return 0;
  }

  // The spec it was made with (as run: see as_run).
  const RunSpec& spec() const { return spec_; }

  // The child's pid, its group's id; -1 once started.
  pid_t pid() const { return pid_; }

  core::ProcessGroup group() const override { return group_; }

  // Lets the child exec, with the environment of `env_of` (the spec given at creation, or one
  // with more extra_env), and notes in `result` whether exec succeeded.
  Child start(RunResult& result, const RunSpec& env_of) {
    make_env(env_of, plan_);
    send_go(pipes_.go.write);
    result.exec_errno = read_exec_error(pipes_.status.read);
    result.started = result.exec_errno == 0;
    stack_.busy = holds_stack_ = false;
    const pid_t pid = std::exchange(pid_, -1);
    if (result.started) IDEM_CRASH_POINT("running");
    return Child{pid, std::move(pipes_.out.read), std::move(pipes_.err.read), group_.cgroup,
                 exit_descriptor(pid)};
  }

 private:
  static ChildStack& thread_stack() {
    thread_local ChildStack stack;
    return stack;
  }

  const RunSpec spec_;  // the plan's argv and cwd point into it
  ExecPlan plan_;
  ChildPipes pipes_;
  ChildStack& stack_ = thread_stack();
  bool holds_stack_ = false;
  pid_t pid_ = -1;
  core::ProcessGroup group_;
};

// The controlling terminal, idem's stdin, lent to a command's group (RunSpec::terminal), as a
// shell's job control lends it to a job: for the command's run when idem's group holds its
// foreground, and
// again after each stop of the command once idem is continued in the foreground. While it
// watches, SIGCHLD also reports the command's stops (no SA_NOCLDSTOP), and SIGTTOU is blocked in
// this thread: tcsetpgrp from the background, and live output to a terminal set to `tostop`, go
// through. Given back at its end, whatever ended the run (an exception too).
class Terminal {
 public:
  Terminal(const RunSpec& spec, pid_t group) : group_(group) {
    // idem's stdin is its controlling terminal (tcgetpgrp fails on any other descriptor): an
    // interactive use. Not a background job of a script, whose stdin is /dev/null.
    if (!spec.terminal || ::tcgetpgrp(k_tty) < 0) return;
    watched_ = true;
    sigset_t ttou;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    ::pthread_sigmask(SIG_BLOCK, &ttou, &saved_mask_);
    report_stops(true);
    lend();
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  ~Terminal() {
    if (!watched_) return;
    take_back();
    report_stops(false);
    ::pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
  }

  // Whether the command's stops are watched (and handed to command_stopped).
  bool watched() const { return watched_; }

  // The command's leader stopped on `sig`: the terminal back to idem's group, which then stops
  // on the same signal (the shell's job is idem's group: it says "Stopped" and takes the
  // terminal). Once continued (`fg`, `bg`), the terminal goes to the command again if idem is in
  // the foreground, and the command's group is continued. Where the stop cannot happen (idem's
  // group is orphaned, no shell could continue it, or ignores the signal), the command goes on
  // at once.
  void command_stopped(int sig) {
    take_back();
    const int own = sig == SIGTTIN || sig == SIGTTOU ? sig : SIGTSTP;
    sigset_t only;
    sigset_t before;
    sigemptyset(&only);
    sigaddset(&only, own);
    ::pthread_sigmask(SIG_UNBLOCK, &only, &before);  // stops this thread too, before going on
    ::kill(0, own);
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    lend();
    ::kill(-group_, SIGCONT);
  }

 private:
  void lend() {
    if (::tcgetpgrp(k_tty) != ::getpgrp()) return;  // in the background: idem has none
    lent_ = ::tcsetpgrp(k_tty, group_) == 0;
  }
  void take_back() {
    if (lent_) ::tcsetpgrp(k_tty, ::getpgrp());
    lent_ = false;
  }
  static void report_stops(bool on) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | (on ? 0 : SA_NOCLDSTOP);
    ::sigaction(SIGCHLD, &sa, nullptr);
  }

  static constexpr int k_tty = 0;  // idem's stdin
  const pid_t group_;
  bool watched_ = false;
  sigset_t saved_mask_{};
  bool lent_ = false;
};

// Watches a spawned command to its end: one loop drains both pipes (a full 64 KiB pipe would
// block the writer), forwards signals and enforces the timeout; then the command is reaped.
class Watch {
 public:
  Watch(const RunSpec& spec, Child& child, RunResult& result, Terminal& terminal)
      : spec_(spec),
        child_(child),
        result_(result),
        terminal_(terminal),
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
    while (child_.out.valid() || child_.err.valid() || (spec_.wait_group && !over())) {
      const int64_t now = util::monotonic_ms();
      // After the group's KILL, what is left is dying, or a zombie an init that does not reap
      // keeps: nothing more to wait for.
      if (exited_ && spec_.wait_group && !group_gone_)
        group_gone_ = group_killed_ || (::kill(-child_.pid, 0) != 0 && errno == ESRCH);
      if (over() && drain_until_ < 0) {
        term_at_ = -1;  // the command ended before its timeout: no TERM for what it left
        drain_until_ = now + spec_.drain_ms;
      }
      if (over() && now >= drain_until_) {
        // Take what is already buffered, then stop.
        if (child_.out.valid()) drain(child_.out, core::Stream::out, live_out_);
        if (child_.err.valid()) drain(child_.err, core::Stream::err, live_err_);
        child_.out.reset();
        child_.err.reset();
        break;
      }
      std::vector<pollfd> fds;
      // The self-pipe only when it can say something to this command: a signal to forward (run
      // handles INT, TERM and HUP), or SIGCHLD when there is no pidfd or a stop is watched.
      if (!child_.exit.valid() || terminal_.watched() ||
          (g_handled & ~(uint64_t(1) << SIGCHLD)) != 0)
        fds.push_back({g_signal_pipe[0], POLLIN, 0});
      if (child_.exit.valid() && !exited_) fds.push_back({child_.exit.get(), POLLIN, 0});
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
        } else if (child_.exit.valid() && p.fd == child_.exit.get()) {
          reap(WNOHANG);
        } else if (p.fd == spec_.stop_fd) {
          stop();
        } else if (child_.out.valid() && p.fd == child_.out.get()) {
          drain(child_.out, core::Stream::out, live_out_);
        } else if (child_.err.valid() && p.fd == child_.err.get()) {
          drain(child_.err, core::Stream::err, live_err_);
        }
      }
      if (!child_.out.valid() && !child_.err.valid() && !spec_.wait_group) reap(0);
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
  // Whether the command is over: it exited and, under wait_group, its group is empty too.
  bool over() const { return exited_ && (!spec_.wait_group || group_gone_); }

  // Until the next deadline (the timeout's TERM, a KILL, the end of the drain), or forever when
  // there is none. A group outliving its leader is looked at every k_group_poll_ms: nothing
  // signals its end.
  int poll_timeout(int64_t now) const {
    static constexpr int64_t k_group_poll_ms = 20;
    int64_t next = exited_ && spec_.wait_group && !group_gone_ ? now + k_group_poll_ms : -1;
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
      group_killed_ = true;
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
      ssize_t n = ::read(fd.get(), buf_.data(), buf_.size());
      if (n > 0) {
        std::string_view bytes(buf_.data(), size_t(n));
        live.write(bytes);
        const int64_t before = result_.output.stored_bytes();
        result_.output.append(stream, bytes);
        const int64_t kept = result_.output.stored_bytes() - before;
        if (kept > 0 && spec_.on_output) spec_.on_output(stream, bytes.substr(0, size_t(kept)));
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

  // Notes the command's exit once it has exited (at once with WNOHANG, else waiting for it). A
  // stop, where the terminal watches for them, goes to it; the command is continued then.
  void reap(int flags) {
    if (terminal_.watched()) flags |= WUNTRACED;
    while (!exited_) {
      int status = 0;
      const pid_t r = ::waitpid(child_.pid, &status, flags);
      if (r < 0 && errno == EINTR) continue;
      if (r != child_.pid) return;
      if (WIFSTOPPED(status)) {
        terminal_.command_stopped(WSTOPSIG(status));
        continue;
      }
      wait_status_ = status;
      exited_ = true;
    }
  }

  const RunSpec& spec_;
  Child& child_;
  RunResult& result_;
  Terminal& terminal_;
  LiveSink live_out_;
  LiveSink live_err_;
  int64_t term_at_;           // monotonic ms of the timeout's TERM; -1: none (any more)
  int64_t kill_at_ = -1;      // monotonic ms of the KILL after a grace; -1: none
  int64_t drain_until_ = -1;  // monotonic ms the pipes are closed at, once the command exited
  bool exited_ = false;
  bool group_gone_ = false;    // under wait_group: nothing of the group is left after the leader
  bool group_killed_ = false;  // the group got its KILL (a grace ran out)
  int wait_status_ = 0;
  // On the heap: the Watch is on the stack, which may be 64 KiB in all (`ulimit -s 64`).
  std::vector<char> buf_ = std::vector<char>(65536);
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
  struct stat st {};
  if (::fstat(spec.live_stdout_fd, &st) != 0) return false;
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) return false;
  return util::same_open_file(spec.live_stdout_fd, spec.live_stderr_fd);
}

}  // namespace

void install_child_handlers() {
  if (g_signal_pipe[0] < 0) {
    if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw os_error("pipe", errno);
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

namespace {

// `spec` as run: stderr down stdout's pipe when both go to one ordered destination.
RunSpec as_run(const RunSpec& spec) {
  RunSpec run = spec;
  if (!spec.stderr_to_stdout && one_ordered_destination(spec)) run.stderr_to_stdout = true;
  return run;
}

RunResult watch_to_end(const RunSpec& spec, Child& child, RunResult& result, Terminal& terminal) {
  Watch watch(spec, child, result, terminal);
  if (result.started && spec.meanwhile) spec.meanwhile();
  watch.loop();
  watch.finish();
  // What the command left running (a daemon it started) keeps the cgroup, and shows in it.
  remove_cgroup_if_empty(child.cgroup);
  return std::move(result);
}

}  // namespace

// Starts the command in its own process group: records the group (on_spawn: what it throws kills
// the child unstarted), lets the child exec, and watches it to its end.
RunResult run_command(const RunSpec& given) {
  if (g_signal_pipe[0] < 0) install_child_handlers();
  PendingChild pending(as_run(given));
  const RunSpec& spec = pending.spec();
  RunResult result;
  result.output = core::CapturedOutput(spec.max_output);
  if (int error = pending.create()) {
    result.exec_errno = error;
    return result;
  }
  if (spec.on_spawn) spec.on_spawn(pending.group());
  Terminal terminal(spec, pending.pid());  // the group recorded, before its go byte
  Child child = pending.start(result, spec);
  return watch_to_end(spec, child, result, terminal);
}

std::unique_ptr<PreparedCommand> prepare_command(const RunSpec& given) {
#if IDEM_CHILD_SHARES_MEMORY
  if (g_signal_pipe[0] < 0) install_child_handlers();
  auto pending = std::make_unique<PendingChild>(as_run(given));
  if (pending->create() != 0) return nullptr;  // run_command then meets (and reports) it again
  return pending;
#else
  (void)given;
  return nullptr;
#endif
}

RunResult run_prepared_command(std::unique_ptr<PreparedCommand> prepared, const RunSpec& given) {
  auto* pending = dynamic_cast<PendingChild*>(prepared.get());
  if (pending == nullptr) return run_command(given);
  // `given` adds to the prepared spec what is known once claimed (IDEM_ATTEMPT, the lease's
  // stop_fd): the environment is made from it, and the command watched as it says.
  const RunSpec spec = as_run(given);
  RunResult result;
  result.output = core::CapturedOutput(spec.max_output);
  Terminal terminal(spec, pending->pid());
  Child child = pending->start(result, spec);
  return watch_to_end(spec, child, result, terminal);
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
  if (!result.started)
    o.note = std::string("could not start: ") + strerror(result.exec_errno);
  else if (result.timed_out)
    o.note = "stopped by its timeout";
  else if (result.stopped)
    o.note = "stopped: its attempt's lease was lost";
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

int exit_code_for(const RunResult& result) {
  if (!result.started) return result.exec_errno == ENOENT ? 127 : 126;
  if (result.timed_out) return 124;
  if (result.signal) return 128 + *result.signal;
  return result.exit_code.value_or(0);
}

}  // namespace idem::proc
