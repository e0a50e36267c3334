#include "proc/liveness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::proc {

namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

struct ProcStat {
  char state = '?';
  int64_t pgrp = 0;
  int64_t start_ticks = 0;  // 0: the pid is gone or unreadable
};

// Fields 3 (state), 5 (process group) and 22 (start time in clock ticks after boot) of
// /proc/PID/stat. The command name (field 2) may hold spaces and parentheses, so parse after the
// last ')'.
ProcStat read_stat(pid_t pid) {
  // read(2), not a stream: reading the file of a process that exits meanwhile fails with ESRCH,
  // which libstdc++'s filebuf turns into an exception; here it only means "gone".
  std::string stat;
  {
    util::Fd fd(::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return {};
    char buf[1024];
    for (;;) {
      ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return {};
      if (n == 0) break;
      stat.append(buf, size_t(n));
    }
  }
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream fields(stat.substr(paren + 1));
  ProcStat result;
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return {};
    if (i == 3) result.state = field.empty() ? '?' : field[0];
    if (i == 5) result.pgrp = std::atoll(field.c_str());
  }
  try {
    result.start_ticks = std::stoll(field);
  } catch (...) {
    return {};
  }
  return result;
}

const std::string& this_boot_id() {
  static const std::string id = read_first_line("/proc/sys/kernel/random/boot_id");
  return id;
}

const std::string& this_host() {
  static const std::string host = host_name();
  return host;
}

// /etc/machine-id, when it holds one (32 hex digits; "uninitialized" early in a boot, or an
// empty file, is none): what tells two hosts of one name apart (cloned machines, containers given
// one host name). Absent in many containers: the host name stands in (same_host).
const std::string& this_machine_id() {
  static const std::string id = [] {
    std::string line = read_first_line("/etc/machine-id");
    const bool valid = line.size() == 32 && std::all_of(line.begin(), line.end(), [](char c) {
                         return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                       });
    return valid ? line : std::string();
  }();
  return id;
}

// The inode of this process's pid namespace: a recorded pid is a number of that namespace only.
int64_t this_pid_ns() {
  static const int64_t ino = [] {
    struct stat st {};
    return ::stat("/proc/self/ns/pid", &st) == 0 ? int64_t(st.st_ino) : int64_t(0);
  }();
  return ino;
}

// The owner's host is this one: the same machine id, or, where either side has none (no
// /etc/machine-id, or a record from before machine ids were recorded), the same host name.
bool same_host(const core::Owner& owner) {
  if (!owner.machine_id.empty() && !this_machine_id().empty())
    return owner.machine_id == this_machine_id();
  return owner.host == this_host();
}

bool same_boot(const core::Owner& owner) {
  return same_host(owner) && !owner.boot_id.empty() && owner.boot_id == this_boot_id();
}

// The owner's pid is a number this process can look up: same host, same boot, and the same pid
// namespace. Another namespace (another container on this kernel) numbers its processes apart,
// and a record without its namespace (claimed before it was recorded) cannot say which it was.
bool pid_checkable(const core::Owner& owner) {
  return same_boot(owner) && owner.pid_ns != 0 && owner.pid_ns == this_pid_ns();
}

// A member of the group other than a zombie, found by scanning /proc: kill(-pgid, 0) alone would
// count zombies (which can do no more work) as members.
bool has_live_member(int64_t pgid) {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return ::kill(-pid_t(pgid), 0) == 0 || errno == EPERM;
  bool found = false;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    ProcStat st = read_stat(pid_t(pid));
    if (st.start_ticks != 0 && st.pgrp == pgid && st.state != 'Z') {
      found = true;
      break;
    }
  }
  ::closedir(dir);
  return found;
}

}  // namespace

int64_t start_ticks(pid_t pid) { return read_stat(pid).start_ticks; }

bool process_group_alive(const core::Owner& owner, const core::ProcessGroup& group) {
  // A record from before namespaces were recorded is looked at as before (same host and boot):
  // a group found alive only delays a retry, the safe side.
  if (group.pgid <= 1 || !same_boot(owner) || (owner.pid_ns != 0 && !pid_checkable(owner)))
    return false;
  if (::kill(-pid_t(group.pgid), 0) != 0 && errno == ESRCH) return false;
  ProcStat leader = read_stat(pid_t(group.pgid));
  // The leader's pid belongs to a younger process: the number was free again, so the recorded
  // group had emptied first (any group now using the number is another one).
  if (leader.start_ticks != 0 && leader.start_ticks != group.leader_start_ticks) return false;
  return has_live_member(group.pgid);
}

bool kill_process_group(const core::Owner& owner, const core::ProcessGroup& group,
                        int64_t grace_ms) {
  auto wait_empty = [&](int64_t ms) {
    const int64_t give_up = util::monotonic_ms() + ms;
    for (;;) {
      if (!process_group_alive(owner, group)) return true;
      if (util::monotonic_ms() >= give_up) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  if (!process_group_alive(owner, group)) return true;
  ::kill(-pid_t(group.pgid), SIGTERM);
  ::kill(-pid_t(group.pgid), SIGCONT);  // a stopped member must run to act on TERM
  if (wait_empty(grace_ms)) return true;
  if (process_group_alive(owner, group)) ::kill(-pid_t(group.pgid), SIGKILL);
  return wait_empty(std::max<int64_t>(grace_ms, 1000));
}

core::Owner describe_owner(pid_t pid) {
  if (pid == 0) pid = ::getpid();
  // The namespace is this process's: `pid` is a number as this process sees it.
  return core::Owner{this_host(),       this_boot_id(), int64_t(pid), read_stat(pid).start_ticks,
                     this_machine_id(), this_pid_ns()};
}

bool owner_gone(const core::Owner& owner) {
  if (!same_host(owner)) return false;  // cannot see another host's processes
  if (owner.boot_id.empty() || this_boot_id().empty()) return false;
  if (owner.boot_id != this_boot_id()) return true;  // the host rebooted since the claim
  if (!pid_checkable(owner)) return false;  // another pid namespace (container), or unknown
  if (owner.pid <= 0) return true;
  if (::kill(pid_t(owner.pid), 0) != 0 && errno == ESRCH) return true;
  ProcStat now = read_stat(pid_t(owner.pid));
  if (now.start_ticks == 0)  // exited just now, or unreadable (hidepid): only ESRCH proves it
    return ::kill(pid_t(owner.pid), 0) != 0 && errno == ESRCH;
  if (now.start_ticks != owner.start_ticks) return true;  // the pid was reused
  // A zombie has exited and can do no more work, whether or not its parent has reaped it yet.
  return now.state == 'Z';
}

}  // namespace idem::proc
