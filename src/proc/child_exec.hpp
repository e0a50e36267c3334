#pragma once
// The child's half of starting a command (proc/runner.cpp): a process created by
// clone(CLONE_VM) that shares idem's memory until it execs. It runs on a stack of its own,
// concurrently with the idem thread that created it (which records the command's process group
// meanwhile), so it may only make raw system calls: a libc call could take a lock another
// thread of idem holds, or write errno, which lives in the creating thread's TLS (the child
// runs with that thread's thread pointer). So child_exec.cpp uses no libc, no allocation and no
// sanitizer instrumentation (the sanitizers' shadow stacks and state are per thread too).
#include <cstdint>

// Whether child_exec.cpp speaks this CPU's system call convention itself, so that the child may
// share idem's memory (clone(CLONE_VM)). Elsewhere it calls libc's syscall(), which writes
// errno, and the runner forks instead (a forked child's errno is its own).
#if defined(__x86_64__) || defined(__aarch64__)
#define IDEM_CHILD_SHARES_MEMORY 1
#else
#define IDEM_CHILD_SHARES_MEMORY 0
#endif

namespace idem::proc {

// Everything the child reads, prepared by the parent, which keeps it (and the child's stack)
// alive until the child has exec'd or exited: the status pipe's EOF, or the child reaped.
struct ChildPlan {
  char** argv = nullptr;  // argv[-1] must be a free slot: a file without '#!' runs as /bin/sh file
  char** envp = nullptr;
  const char* path = nullptr;  // idem's PATH, where argv[0] is looked up; null: glibc's default
  const char* cwd = nullptr;   // null: idem's
  long parent = 0;             // idem's pid: the child gives up when its parent is already another
  int stdin_fd = 0;            // becomes fd 0 (0: idem's own)
  int out_fd = -1;             // becomes fd 1
  int err_fd = -1;             // becomes fd 2
  int go_fd = -1;              // one byte: exec; EOF: idem gave up or died, exit 127
  int go_write_fd = -1;        // idem's end of the go pipe, closed in the child
  int status_fd = -1;          // close-on-exec; gets the errno of a failed chdir or exec
  // Signals (bit N: signal N) set back to SIG_DFL even when idem ignores them; any signal with a
  // handler is set back to SIG_DFL too (before the mask is emptied: no handler of idem may run
  // in the child).
  uint64_t reset_signals = 0;
};

// Creates a process that shares this one's memory (CLONE_VM, and SIGCHLD to its parent when it
// ends) and runs child_exec(plan) on the stack that ends at `stack_top`. Returns its pid, or
// -errno. Not libc's clone(): a sanitizer intercepts that one as a fork, and would update its
// per-process state from the child, in the parent's memory. Only where
// IDEM_CHILD_SHARES_MEMORY.
long clone_child(ChildPlan& plan, void* stack_top);
// The same, created in the cgroup of `cgroup_fd` (clone3, CLONE_INTO_CGROUP: Linux 5.7), on the
// stack from `stack_base` to `stack_top`. -errno: -ENOSYS or -EINVAL on an older kernel, -EPERM
// or -EACCES where this process may not put processes there.
long clone_child_into(ChildPlan& plan, void* stack_base, void* stack_top, int cgroup_fd);

// Keeps `fd` open in a process of its own until the peer has written to it (it is readable: a
// receiver's answer) or `timeout_ms` has passed, then exits. For a request written just before
// this process exits (the CLI's spans): the exit would close the connection at once, and a
// receiver that sees its client go (Go's net/http cancels the request's context) may drop what
// it was still handling. The process is created as clone_child's are (sharing this one's memory,
// which it does not touch: it runs on a stack of its own), with every signal blocked, no other
// fd of this process's, and no exit signal: nobody waits for it (init reaps it). At most one a
// process. Returns its pid, or -errno (-EBUSY for a second one). Only where
// IDEM_CHILD_SHARES_MEMORY.
long hold_open_until_readable(int fd, int timeout_ms);

// The child's body: its own process group, PR_SET_PDEATHSIG SIGKILL and the parent
// check, the go byte, signals at their defaults and an empty mask, fds 0-2, cwd, then the PATH
// lookup of glibc's execvpe (EACCES wins over ENOENT; ENOEXEC runs the file under /bin/sh). A
// failure writes its errno to status_fd and exits 127. Never returns. `plan` is a ChildPlan*.
int child_exec(void* plan);

}  // namespace idem::proc
