// See child_exec.hpp. Compiled on its own (no unity build), without sanitizers, stack protector
// or loop-to-memcpy rewriting (CMakeLists.txt), and every function here is marked so as well:
// the child must not call into libc or a sanitizer runtime, even through code the compiler adds.
#include "proc/child_exec.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <ctime>

#if defined(__clang__)
#define IDEM_RAW_CHILD \
  __attribute__((disable_sanitizer_instrumentation, noinline, no_stack_protector))
#else
#define IDEM_RAW_CHILD                                                                        \
  __attribute__((no_sanitize("address", "thread", "undefined"), noinline, no_stack_protector, \
                 optimize("no-tree-loop-distribute-patterns")))
#endif

namespace idem::proc {
namespace {

// Returns the result, or -errno; never touches errno.
IDEM_RAW_CHILD long sys(long number, long a = 0, long b = 0, long c = 0, long d = 0) {
#if defined(__x86_64__)
  long ret;
  register long r10 asm("r10") = d;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10)
               : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 asm("x8") = number;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  asm volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
#else
  long ret = ::syscall(number, a, b, c, d);  // only ever in a forked child: errno is its own
  return ret < 0 ? -errno : ret;
#endif
}

IDEM_RAW_CHILD long as_arg(const void* p) { return reinterpret_cast<long>(p); }

[[noreturn]] IDEM_RAW_CHILD void exit_now(int code) {
  for (;;) sys(SYS_exit_group, code);
}

[[noreturn]] IDEM_RAW_CHILD void fail(int status_fd, int err) {
  while (sys(SYS_write, status_fd, as_arg(&err), sizeof err) == -EINTR) {
  }
  exit_now(127);
}

// `from` becomes `to`, without close-on-exec (dup3 refuses from == to: then only the flag).
IDEM_RAW_CHILD void move_fd(int from, int to) {
  if (from == to)
    sys(SYS_fcntl, to, F_SETFD, 0);
  else
    sys(SYS_dup3, from, to, 0);
}

// The kernel's generic struct sigaction (x86-64, arm64); glibc's sigaction() would refuse its
// own internal signals (32, 33), which keep glibc's handlers here.
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  uint64_t mask;
};

// What has a handler in idem, or is in `reset` (what idem ignores on purpose), goes back to
// SIG_DFL; what idem inherited ignored and left alone stays ignored, as across a plain exec.
IDEM_RAW_CHILD void reset_signals(uint64_t reset) {
  KernelSigaction defaults{SIG_DFL, 0, nullptr, 0};
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    KernelSigaction old{SIG_DFL, 0, nullptr, 0};
    if (sys(SYS_rt_sigaction, sig, 0, as_arg(&old), sizeof old.mask) != 0) continue;
    if (old.handler == SIG_DFL) continue;
    if (old.handler == SIG_IGN && ((reset >> sig) & 1) == 0) continue;
    sys(SYS_rt_sigaction, sig, as_arg(&defaults), 0, sizeof defaults.mask);
  }
}

IDEM_RAW_CHILD bool has_slash(const char* s) {
  for (; *s != '\0'; ++s)
    if (*s == '/') return true;
  return false;
}

// execve, and for a file the kernel cannot run (no '#!', ENOEXEC) the same under /bin/sh, as
// execvpe does, in argv[-1]'s free slot. Returns errno.
IDEM_RAW_CHILD int exec_file(const char* file, char** argv, char** envp) {
  int err = int(-sys(SYS_execve, as_arg(file), as_arg(argv), as_arg(envp)));
  if (err != ENOEXEC) return err;
  char* const saved_first = argv[0];
  argv[-1] = const_cast<char*>("/bin/sh");
  argv[0] = const_cast<char*>(file);
  err = int(-sys(SYS_execve, as_arg("/bin/sh"), as_arg(argv - 1), as_arg(envp)));
  argv[0] = saved_first;
  return err;
}

// Without PATH (cron's `env -i`, a bare unit), the search path of dash and of `sh -c`, so that
// `idem run -- CMD` finds what `sh -c CMD` finds (docs/cron-and-scripts.md, "Cron"; idem(1),
// ENVIRONMENT).
constexpr const char* k_default_path =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

IDEM_RAW_CHILD size_t length_of(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

// Where the PATH entry that begins at `dir` ends (at ':' or the end of the path).
IDEM_RAW_CHILD const char* entry_end(const char* dir) {
  while (*dir != '\0' && *dir != ':') ++dir;
  return dir;
}

// `dir` (up to `end`; empty: the current folder) and `file` joined into `buffer` (4096 bytes);
// false when they do not fit.
IDEM_RAW_CHILD bool join_path(char* buffer, const char* dir, const char* end, const char* file,
                              size_t file_len) {
  const size_t dir_len = size_t(end - dir);
  if (dir_len + 1 + file_len + 1 > 4096) return false;
  // Written through a volatile pointer: no compiler turns the copies into a memcpy call.
  volatile char* out = buffer;
  size_t n = 0;
  for (const char* p = dir; p != end; ++p) out[n++] = *p;
  if (dir_len > 0) out[n++] = '/';
  for (size_t i = 0; i <= file_len; ++i) out[n++] = file[i];
  return true;
}

// Looks argv[0] up on `path` (k_default_path when there is none) and execs the first that
// runs, with glibc's rules: an entry that is not there or not a folder is skipped, one without
// permission remembered (EACCES wins over ENOENT), any other error ends the search. The search
// begins `skip` bytes into the path (path_entries_to_skip: entries known not to hold argv[0]).
IDEM_RAW_CHILD int exec_on_path(const char* path, size_t skip, char** argv, char** envp) {
  const char* file = argv[0];
  if (*file == '\0') return ENOENT;
  if (has_slash(file)) return exec_file(file, argv, envp);
  if (path == nullptr) path = k_default_path;
  const size_t file_len = length_of(file);
  char buffer[4096];
  bool denied = false;
  int err = ENOENT;
  for (const char* dir = path + skip;;) {
    const char* end = entry_end(dir);
    if (join_path(buffer, dir, end, file, file_len)) {
      err = exec_file(buffer, argv, envp);
      if (err == EACCES)
        denied = true;
      else if (err != ENOENT && err != ENOTDIR && err != ESTALE && err != ENODEV &&
               err != ETIMEDOUT)
        return err;
    }
    if (*end == '\0') break;
    dir = end + 1;
  }
  return denied ? EACCES : err;
}

// How many bytes of `path` (as exec_on_path takes it) are entries that do not hold argv[0]:
// ones where the name is not there (ENOENT, ENOTDIR), up to the first absolute entry that has it
// or that cannot be told, or the first relative one (the command's folder is not yet its own).
// Asked before the go byte, so that the execs after it do not each fail in turn on what comes
// first on the path; exec_on_path then begins there. 0 when nothing can be skipped, or nothing
// holds it (the whole search then gives the error glibc's would).
IDEM_RAW_CHILD size_t path_entries_to_skip(const char* path, char** argv) {
  const char* file = argv[0];
  if (*file == '\0' || has_slash(file)) return 0;
  if (path == nullptr) path = k_default_path;
  const size_t file_len = length_of(file);
  char buffer[4096];
  for (const char* dir = path;;) {
    const char* end = entry_end(dir);
    if (end == dir || *dir != '/' || !join_path(buffer, dir, end, file, file_len)) break;
    const long found = sys(SYS_faccessat, AT_FDCWD, as_arg(buffer), F_OK);
    if (found != -ENOENT && found != -ENOTDIR) return size_t(dir - path);
    if (*end == '\0') break;
    dir = end + 1;
  }
  return 0;
}

}  // namespace

// idem_clone_vm(flags, stack_top, fn, arg): the clone system call, whose child calls fn(arg) on
// the new stack and exits with what it returns. fn and arg travel on the new stack, as the
// child has no other memory of its own.
// idem_clone3_vm(args, size): the same through clone3, whose child finds fn and arg at the top of
// the stack `args` gives it (clone_child_into puts them there). The two share the child's part.
#if defined(__x86_64__)
asm(R"(
  .text
  .p2align 4
  .type idem_clone_vm, @function
idem_clone_vm:
  and $-16, %rsi
  sub $16, %rsi
  mov %rdx, 0(%rsi)
  mov %rcx, 8(%rsi)
  xor %edx, %edx
  xor %r10d, %r10d
  xor %r8d, %r8d
  mov $56, %eax
  jmp 2f
  .size idem_clone_vm, .-idem_clone_vm
  .p2align 4
  .type idem_clone3_vm, @function
idem_clone3_vm:
  mov $435, %eax
2:
  syscall
  test %rax, %rax
  jnz 1f
  xor %ebp, %ebp
  pop %rax
  pop %rdi
  call *%rax
  mov %eax, %edi
  mov $231, %eax
  syscall
  hlt
1:
  ret
  .size idem_clone3_vm, .-idem_clone3_vm
)");
#elif defined(__aarch64__)
asm(R"(
  .text
  .p2align 2
  .type idem_clone_vm, %function
idem_clone_vm:
  and x1, x1, #-16
  stp x2, x3, [x1, #-16]!
  mov x2, xzr
  mov x3, xzr
  mov x4, xzr
  mov x8, #220
  b 2f
  .size idem_clone_vm, .-idem_clone_vm
  .p2align 2
  .type idem_clone3_vm, %function
idem_clone3_vm:
  mov x8, #435
2:
  svc #0
  cbnz x0, 1f
  ldp x1, x0, [sp], #16
  blr x1
  mov x8, #94
  svc #0
1:
  ret
  .size idem_clone3_vm, .-idem_clone3_vm
)");
#endif

#if IDEM_CHILD_SHARES_MEMORY
extern "C" long idem_clone_vm(unsigned long flags, void* stack_top, int (*fn)(void*), void* arg);

long clone_child(ChildPlan& plan, void* stack_top) {
  return idem_clone_vm(CLONE_VM | SIGCHLD, stack_top, child_exec, &plan);
}

namespace {

// The kernel's struct clone_args (linux/sched.h) up to its cgroup field (CLONE_ARGS_SIZE_VER2).
struct CloneArgs {
  uint64_t flags = 0;
  uint64_t pidfd = 0;
  uint64_t child_tid = 0;
  uint64_t parent_tid = 0;
  uint64_t exit_signal = 0;
  uint64_t stack = 0;
  uint64_t stack_size = 0;
  uint64_t tls = 0;
  uint64_t set_tid = 0;
  uint64_t set_tid_size = 0;
  uint64_t cgroup = 0;
};
static_assert(sizeof(CloneArgs) == 88);
constexpr uint64_t k_clone_into_cgroup = 0x200000000ULL;

}  // namespace

extern "C" long idem_clone3_vm(CloneArgs* args, unsigned long size);

long clone_child_into(ChildPlan& plan, void* stack_base, void* stack_top, int cgroup_fd) {
  // fn and arg where the child's stack pointer starts, 16-byte aligned, as idem_clone_vm has them.
  auto top = reinterpret_cast<uintptr_t>(stack_top) & ~uintptr_t(15);
  top -= 16;
  int (*fn)(void*) = child_exec;
  void* arg = &plan;
  __builtin_memcpy(reinterpret_cast<void*>(top), &fn, sizeof fn);
  __builtin_memcpy(reinterpret_cast<void*>(top + 8), &arg, sizeof arg);
  CloneArgs args;
  args.flags = CLONE_VM | k_clone_into_cgroup;
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<uintptr_t>(stack_base);
  args.stack_size = top - reinterpret_cast<uintptr_t>(stack_base);
  args.cgroup = uint64_t(cgroup_fd);
  return idem_clone3_vm(&args, sizeof args);
}

namespace {

// What hold_open_until_readable's process reads, where the creating process will not change it.
struct Hold {
  int fd = -1;
  int timeout_ms = 0;
};
Hold g_hold;
alignas(16) char g_hold_stack[8192];
std::atomic<bool> g_hold_taken{false};

IDEM_RAW_CHILD int hold_open(void* opaque) {
  const Hold hold = *static_cast<const Hold*>(opaque);
  // Every fd but the connection: a pipe of this process's kept open would keep its reader (a
  // shell's `$(idem run ...)`) waiting for this process too.
  if (hold.fd > 0) sys(SYS_close_range, 0, hold.fd - 1, 0);
  if (sys(SYS_close_range, hold.fd + 1, ~0U, 0) != 0)
    for (int fd = 0; fd < 1024; ++fd)
      if (fd != hold.fd) sys(SYS_close, fd);
  pollfd answer{hold.fd, POLLIN, 0};
  const timespec wait{hold.timeout_ms / 1000, long(hold.timeout_ms % 1000) * 1000000L};
  sys(SYS_ppoll, as_arg(&answer), 1, as_arg(&wait), 0);
  exit_now(0);
}

}  // namespace

long hold_open_until_readable(int fd, int timeout_ms) {
  if (g_hold_taken.exchange(true)) return -EBUSY;
  g_hold.fd = fd;
  g_hold.timeout_ms = timeout_ms < 0 ? 0 : timeout_ms;
  // No handler of this process's may run on the new process's stack: it starts with every
  // signal blocked and keeps them so.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const long pid = idem_clone_vm(CLONE_VM, g_hold_stack + sizeof g_hold_stack, hold_open, &g_hold);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return pid;
}
#else
long hold_open_until_readable(int, int) { return -ENOSYS; }
#endif

IDEM_RAW_CHILD int child_exec(void* opaque) {
  const ChildPlan& plan = *static_cast<const ChildPlan*>(opaque);
  // Both sides set the group, so it exists before either uses it.
  sys(SYS_setpgid, 0, 0);
  // If idem is killed (even with SIGKILL) the command is killed too, so a record shown as
  // abandoned is not still doing its work behind the user's back. It fires when the *thread*
  // that created this process ends: that thread waits for the command to its end. What the
  // command starts is found again through the process group idem records.
  sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (sys(SYS_getppid) != plan.parent) exit_now(127);
  sys(SYS_close, plan.go_write_fd);
  // What changes nothing outside this process is done while idem records its claim, before the
  // go byte. Every signal is blocked (the parent blocked them across clone): no handler of idem
  // can run here before the handlers are gone; the command gets an empty mask at the exec.
  reset_signals(plan.reset_signals);
  if (plan.stdin_fd != 0) move_fd(plan.stdin_fd, 0);
  move_fd(plan.out_fd, 1);
  move_fd(plan.err_fd, 2);
  const size_t skip = path_entries_to_skip(plan.path, plan.argv);
  // Wait until idem has recorded the group: one byte means go, EOF means idem gave up or died.
  char go = 0;
  long got;
  while ((got = sys(SYS_read, plan.go_fd, as_arg(&go), 1)) == -EINTR) {
  }
  if (got != 1) exit_now(127);
  sys(SYS_close, plan.go_fd);
  if (plan.cwd != nullptr) {
    const long err = sys(SYS_chdir, as_arg(plan.cwd));
    if (err != 0) fail(plan.status_fd, int(-err));
  }
  const uint64_t none = 0;
  sys(SYS_rt_sigprocmask, SIG_SETMASK, as_arg(&none), 0, sizeof none);
  fail(plan.status_fd, exec_on_path(plan.path, skip, plan.argv, plan.envp));
}

}  // namespace idem::proc
