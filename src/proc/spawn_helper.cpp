// idem-spawn: how a many-threaded idem (the daemon) starts a command without fork(). fork()
// copies the page tables of every thread's memory; posix_spawn() of this small static program
// shares them until it execs (CLONE_VFORK), and this program then does what a forked child of
// idem would: wait until idem has recorded the command's process group, then exec the command.
// It is no part of idem_core and uses libc alone, so it starts in a fraction of a millisecond.
//
//     idem-spawn PARENT_PID PATH_ENTRY COMMAND [ARG...]
//
// Started by proc/runner.cpp with: its own process group, the signals idem handles reset to
// their defaults and an empty mask (posix_spawn attributes); fd 0-2 the command's; fd 3 the go
// pipe (one byte: exec; EOF: idem gave up or died, exit 127 without running anything); fd 4 the
// status pipe, close-on-exec here, which gets the errno of a failed exec. PATH_ENTRY is idem's
// own "PATH=..." (or empty): the command is looked up on idem's PATH, as execvpe() in idem would.
// The environment is the command's.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

extern char** environ;

namespace {

constexpr int k_go_fd = 3;
constexpr int k_status_fd = 4;

[[noreturn]] void fail_exec(int err) {
  ssize_t n;
  do n = ::write(k_status_fd, &err, sizeof err);
  while (n < 0 && errno == EINTR);
  _exit(127);
}

// glibc's posix_spawn leaves its two internal signals (32 and 33, below SIGRTMIN) ignored in
// the program it starts, and an ignored signal stays ignored across exec; glibc's sigaction()
// refuses to touch them, so the kernel is asked directly. The struct is the kernel's generic one
// (x86-64, arm64, riscv64).
void reset_internal_signals() {
  struct KernelSigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    uint64_t mask;
  };
  KernelSigaction defaults{SIG_DFL, 0, nullptr, 0};
  for (int sig = 32; sig < SIGRTMIN; ++sig)
    ::syscall(SYS_rt_sigaction, sig, &defaults, nullptr, sizeof defaults.mask);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return 127;
  // If idem dies (even of SIGKILL), the command dies too (see runner.cpp). It fires when the
  // thread that spawned this program ends: that thread waits for the command to its end.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != pid_t(::strtol(argv[1], nullptr, 10))) _exit(127);
  ::fcntl(k_status_fd, F_SETFD, FD_CLOEXEC);
  char go = 0;
  ssize_t got;
  do got = ::read(k_go_fd, &go, 1);
  while (got < 0 && errno == EINTR);
  if (got != 1) _exit(127);
  ::close(k_go_fd);
  reset_internal_signals();
  char** command_env = environ;
  char* lookup_env[2] = {argv[2][0] != '\0' ? argv[2] : nullptr, nullptr};
  environ = lookup_env;  // execvpe() searches the PATH of environ, not of its envp
  ::execvpe(argv[3], argv + 3, command_env);
  fail_exec(errno);
}
