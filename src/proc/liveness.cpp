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
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "proc/cgroup.hpp"
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

enum class Environ { holds, lacks, empty };

// Whether `pid`'s environment (as it exec'd) holds `entry` ("NAME=value") as a whole entry.
// Read in windows: an environment may be as big as the argument limit. `lacks` when unreadable
// (another user's process, unless root; gone); `empty` when it read nothing, as for a process in
// the middle of an exec (its new environment not yet in place) or one with none at all.
Environ read_environment(pid_t pid, const std::string& entry) {
  util::Fd fd(::open(("/proc/" + std::to_string(pid) + "/environ").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Environ::lacks;
  // Each entry is compared as it completes; only the entry being read is kept.
  std::string current;
  char buf[4096];
  bool any = false;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Environ::lacks;
    if (n == 0) return current == entry ? Environ::holds : any ? Environ::lacks : Environ::empty;
    any = true;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\0') {
        if (current.size() <= entry.size()) current.push_back(buf[i]);  // longer never matches
        continue;
      }
      if (current == entry) return Environ::holds;
      current.clear();
    }
  }
}

// read_environment, looked at again a few times while it reads empty: a member caught in an exec
// (a script starting its next command) shows its environment once the exec is done.
bool environment_holds(pid_t pid, const std::string& entry) {
  constexpr int k_tries = 5;
  for (int i = 0; i < k_tries; ++i) {
    const Environ found = read_environment(pid, entry);
    if (found != Environ::empty) return found == Environ::holds;
    std::this_thread::sleep_for(std::chrono::milliseconds(2 << i));
  }
  return false;
}

// Scans /proc for the live (not zombie) members of `group`: kill(-pgid, 0) alone would count
// zombies, which can do no more work. With `proving`, stops at the first member proven the
// attempt's (the leader of the recorded start time, or one whose environment holds `mark_entry`).
GroupLook scan_group(const core::ProcessGroup& group, const std::string& mark_entry, bool proving) {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return GroupLook::unproven;  // members may live; none can be proven
  GroupLook found = GroupLook::empty;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    ProcStat st = read_stat(pid_t(pid));
    if (st.start_ticks == 0 || st.pgrp != group.pgid || st.state == 'Z') continue;
    found = GroupLook::unproven;
    if (!proving) break;
    const bool leader = pid == group.pgid && st.start_ticks == group.leader_start_ticks;
    if (leader || (!mark_entry.empty() && environment_holds(pid_t(pid), mark_entry))) {
      found = GroupLook::ours;
      break;
    }
  }
  ::closedir(dir);
  return found;
}

// A cgroup the record names, and named for its owner or its group (proc/cgroup.hpp): nothing else
// is acted on.
bool recorded_cgroup(const core::Owner& owner, const core::ProcessGroup& group) {
  return !group.cgroup.empty() &&
         (is_owned_cgroup(group.cgroup, owner.pid, owner.start_ticks) ||
          is_attempt_cgroup(group.cgroup, group.pgid, group.leader_start_ticks));
}

}  // namespace

int64_t start_ticks(pid_t pid) { return read_stat(pid).start_ticks; }

int64_t own_start_ticks() {
  static std::mutex mutex;
  static pid_t pid = 0;
  static int64_t start = 0;
  std::lock_guard lock(mutex);
  if (pid != ::getpid()) {
    pid = ::getpid();
    start = read_stat(pid).start_ticks;
  }
  return start;
}

GroupLook look_at_group(const core::Owner& owner, const core::ProcessGroup& group,
                        const std::string& mark) {
  // A record from before namespaces were recorded is looked at as before (same host and boot).
  if (group.pgid <= 1 || !same_boot(owner) || (owner.pid_ns != 0 && !pid_checkable(owner)))
    return GroupLook::empty;
  // The attempt's cgroup holds all it started, its group or not; only the attempt's processes
  // are in it (its name is unique to the attempt in this boot: its owner's, or its leader's).
  if (recorded_cgroup(owner, group)) {
    switch (look_at_cgroup(group.cgroup)) {
      case CgroupLook::gone:
      case CgroupLook::empty:
        return GroupLook::empty;
      case CgroupLook::populated:
        return GroupLook::ours;
      case CgroupLook::unreadable:
        break;  // the process group tells, as without a cgroup
    }
  }
  if (::kill(-pid_t(group.pgid), 0) != 0 && errno == ESRCH) return GroupLook::empty;
  ProcStat leader = read_stat(pid_t(group.pgid));
  // The leader's pid belongs to a younger process: the number was free again, so the recorded
  // group had emptied first (any group now using the number is another one).
  if (leader.start_ticks != 0 && leader.start_ticks != group.leader_start_ticks)
    return GroupLook::empty;
  // The leader is gone: the group's number is free for another group once the last member
  // ends, so a member is the attempt's only by its mark. A group without one (begin's caller's)
  // has only its number: any live member counts, as before marks.
  if (mark.empty())
    return scan_group(group, "", false) == GroupLook::empty ? GroupLook::empty : GroupLook::ours;
  return scan_group(group, std::string(core::k_attempt_mark_env) + "=" + mark, true);
}

bool process_group_alive(const core::Owner& owner, const core::ProcessGroup& group,
                         const std::string& mark) {
  return look_at_group(owner, group, mark) == GroupLook::ours;
}

void remove_empty_cgroup(const core::Owner& owner, const core::ProcessGroup& group) {
  if (recorded_cgroup(owner, group) && same_boot(owner)) remove_cgroup_if_empty(group.cgroup);
}

bool kill_process_group(const core::Owner& owner, const core::ProcessGroup& group,
                        const std::string& mark, int64_t grace_ms) {
  if (look_at_group(owner, group, mark) != GroupLook::ours) return true;
  if (recorded_cgroup(owner, group) && look_at_cgroup(group.cgroup) != CgroupLook::unreadable)
    return kill_cgroup(group.cgroup, grace_ms);
  // Proven the attempt's: while a member lives the kernel gives its number to no other group,
  // so from here any live member is one of it (a 20 ms poll cannot miss a whole pid cycle).
  auto wait_empty = [&](int64_t ms) {
    const int64_t give_up = util::monotonic_ms() + ms;
    for (;;) {
      if (scan_group(group, "", false) == GroupLook::empty) return true;
      if (util::monotonic_ms() >= give_up) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  ::kill(-pid_t(group.pgid), SIGTERM);
  ::kill(-pid_t(group.pgid), SIGCONT);  // a stopped member must run to act on TERM
  if (wait_empty(grace_ms)) return true;
  ::kill(-pid_t(group.pgid), SIGKILL);
  return wait_empty(std::max<int64_t>(grace_ms, 1000));
}

core::Owner describe_owner(pid_t pid) {
  if (pid == 0) pid = ::getpid();
  // The namespace is this process's: `pid` is a number as this process sees it.
  const int64_t start = pid == ::getpid() ? own_start_ticks() : read_stat(pid).start_ticks;
  return core::Owner{this_host(), this_boot_id(),    int64_t(pid),
                     start,       this_machine_id(), this_pid_ns()};
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
