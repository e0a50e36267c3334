// idem-spawn: how a many-threaded idem (the daemon) starts a command without fork(). fork()
// copies the page tables of every thread's memory; posix_spawn() of this small static program
// shares them until it execs (CLONE_VFORK), and this program then does what a forked child of
// idem would: wait until idem has recorded the command's process group, then exec the command.
// It is no part of idem_core.
//
//     idem-spawn PARENT_PID PATH_ENTRY COMMAND [ARG...]
//
// Started by proc/runner.cpp with: its own process group, the signals idem handles reset to
// their defaults and an empty mask (posix_spawn attributes); fd 0-2 the command's; fd 3 the go
// pipe (one byte: exec; EOF: idem gave up or died, exit 127 without running anything); fd 4 the
// status pipe, close-on-exec here, which gets the errno of a failed exec. PATH_ENTRY is idem's
// own "PATH=..." (or empty): the command is looked up on idem's PATH as glibc's execvpe() does
// (a file without a '#!' line runs under /bin/sh). The environment is the command's.
//
// On x86-64 it is built without libc (IDEM_SPAWN_NOLIBC: its own _start and system
// calls): a static glibc program spends most of its start-up asking the CPU what it is (cpuid,
// for glibc's string functions and cache sizes), which in a virtual machine traps to the
// hypervisor each time: it was a tenth of all the CPU a new delivery cost. Elsewhere it uses libc.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cstddef>
#include <cstdint>

#ifndef IDEM_SPAWN_NOLIBC
#include <stdlib.h>
#include <unistd.h>
#endif

namespace {

constexpr int k_go_fd = 3;
constexpr int k_status_fd = 4;
// glibc's posix_spawn leaves its two internal signals (32 and 33, below SIGRTMIN) ignored in
// the program it starts, and an ignored signal stays ignored across exec: they are reset here.
constexpr int k_first_internal_signal = 32;
constexpr int k_end_internal_signals = 34;

#ifdef IDEM_SPAWN_NOLIBC
// Returns the result, or -errno.
long sys(long number, long a = 0, long b = 0, long c = 0, long d = 0) {
  long ret;
#if defined(__x86_64__)
  register long r10 asm("r10") = d;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10)
               : "rcx", "r11", "memory");
#else
#error "IDEM_SPAWN_NOLIBC: no system call convention for this CPU"
#endif
  return ret;
}
#else
long sys(long number, long a = 0, long b = 0, long c = 0, long d = 0) {
  long ret = ::syscall(number, a, b, c, d);
  return ret < 0 ? -errno : ret;
}
#endif

long as_arg(const void* p) { return long(reinterpret_cast<uintptr_t>(p)); }

[[noreturn]] void exit_now(int code) {
  for (;;) sys(SYS_exit_group, code);
}

[[noreturn]] void fail_exec(int err) {
  while (sys(SYS_write, k_status_fd, as_arg(&err), sizeof err) == -EINTR) {
  }
  exit_now(127);
}

// The kernel's generic struct sigaction (x86-64, arm64, riscv64); glibc's sigaction() refuses
// to touch its internal signals, so the kernel is asked directly.
void reset_internal_signals() {
  struct KernelSigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    uint64_t mask;
  };
  KernelSigaction defaults{SIG_DFL, 0, nullptr, 0};
  for (int sig = k_first_internal_signal; sig < k_end_internal_signals; ++sig)
    sys(SYS_rt_sigaction, sig, as_arg(&defaults), 0, sizeof defaults.mask);
}

size_t length(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

bool has_slash(const char* s) {
  for (; *s != '\0'; ++s)
    if (*s == '/') return true;
  return false;
}

bool starts_with(const char* s, const char* prefix) {
  for (; *prefix != '\0'; ++s, ++prefix)
    if (*s != *prefix) return false;
  return true;
}

// execve, and for a file the kernel cannot run (no '#!', ENOEXEC) the same under /bin/sh, as
// execvpe does. argv[-1] is free to use (it is PATH_ENTRY's slot, read before). Returns errno.
int exec_file(const char* file, char** argv, char** envp) {
  int err = int(-sys(SYS_execve, as_arg(file), as_arg(argv), as_arg(envp)));
  if (err != ENOEXEC) return err;
  char* const saved_before = argv[-1];
  char* const saved_first = argv[0];
  argv[-1] = const_cast<char*>("/bin/sh");
  argv[0] = const_cast<char*>(file);
  err = int(-sys(SYS_execve, as_arg("/bin/sh"), as_arg(argv - 1), as_arg(envp)));
  argv[-1] = saved_before;
  argv[0] = saved_first;
  return err;
}

// Looks `argv[0]` up on `path` (a PATH value; glibc's default when there is none) and execs the
// first that runs, with glibc's rules: an entry that is not there or not a folder is skipped,
// one without permission remembered (EACCES wins over ENOENT), any other error ends the search.
int exec_on_path(const char* path, char** argv, char** envp) {
  const char* file = argv[0];
  if (*file == '\0') return ENOENT;
  if (has_slash(file)) return exec_file(file, argv, envp);
  if (path == nullptr) path = "/bin:/usr/bin";
  const size_t file_len = length(file);
  char buffer[4096];
  bool denied = false;
  int err = ENOENT;
  for (const char* dir = path;; ) {
    const char* end = dir;
    while (*end != '\0' && *end != ':') ++end;
    const size_t dir_len = size_t(end - dir);
    if (dir_len + 1 + file_len + 1 <= sizeof buffer) {
      size_t n = 0;
      for (const char* p = dir; p != end; ++p) buffer[n++] = *p;
      if (dir_len > 0) buffer[n++] = '/';  // an empty entry is the current folder
      for (size_t i = 0; i <= file_len; ++i) buffer[n++] = file[i];
      err = exec_file(buffer, argv, envp);
      if (err == EACCES) denied = true;
      else if (err != ENOENT && err != ENOTDIR && err != ESTALE && err != ENODEV &&
               err != ETIMEDOUT)
        return err;
    }
    if (*end == '\0') break;
    dir = end + 1;
  }
  return denied ? EACCES : err;
}

long parse_pid(const char* s) {
  long n = 0;
  for (; *s >= '0' && *s <= '9'; ++s) n = n * 10 + (*s - '0');
  return *s == '\0' ? n : -1;
}

[[noreturn]] void helper_main(int argc, char** argv, char** envp) {
  if (argc < 4) exit_now(127);
  // If idem dies (even of SIGKILL), the command dies too (see runner.cpp). It fires when the
  // thread that spawned this program ends: that thread waits for the command to its end.
  sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (sys(SYS_getppid) != parse_pid(argv[1])) exit_now(127);
  sys(SYS_fcntl, k_status_fd, F_SETFD, FD_CLOEXEC);
  char go = 0;
  long got;
  while ((got = sys(SYS_read, k_go_fd, as_arg(&go), 1)) == -EINTR) {
  }
  if (got != 1) exit_now(127);
  sys(SYS_close, k_go_fd);
  reset_internal_signals();
  const char* path = starts_with(argv[2], "PATH=") ? argv[2] + 5 : nullptr;
  fail_exec(exec_on_path(path, argv + 3, envp));
}

}  // namespace

#ifdef IDEM_SPAWN_NOLIBC
// The compiler may turn loops and struct copies into calls of these.
extern "C" void* memset(void* dest, int c, size_t n) {
  auto* d = static_cast<volatile unsigned char*>(dest);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<unsigned char>(c);
  return dest;
}
extern "C" void* memcpy(void* dest, const void* src, size_t n) {
  auto* d = static_cast<volatile unsigned char*>(dest);
  const auto* s = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = s[i];
  return dest;
}

// The kernel starts the program with the stack pointer at argc, then argv[], NULL, envp[], NULL.
extern "C" [[noreturn]] void idem_spawn_start(long* stack) {
  const int argc = int(stack[0]);
  char** argv = reinterpret_cast<char**>(stack + 1);
  helper_main(argc, argv, argv + argc + 1);
}

#if defined(__x86_64__)
asm(".text\n.global _start\n_start:\n  xor %rbp, %rbp\n  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n  call idem_spawn_start\n  hlt\n");
#endif
#else
extern char** environ;

int main(int argc, char** argv) { helper_main(argc, argv, environ); }
#endif
