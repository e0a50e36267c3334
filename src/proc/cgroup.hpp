#pragma once
// An attempt's own cgroup (v2): every process its command starts stays in it, those that leave
// the process group (setsid: daemons, tmux, `ssh -f`) too, so leftovers are seen and ended
// whatever they did to their group. Made where this process may write its own cgroup (root, or
// a delegated subtree: a unit with Delegate=yes); elsewhere, and with IDEM_CGROUP=off, attempts
// have their process group only (proc/liveness.hpp), and `idem doctor` says so.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/fd.hpp"

namespace idem::proc {

// Where this process makes attempts' cgroups: the cgroup2 mount and its own cgroup under it,
// found once. `why_not` empty: usable (as far as is known before the first mkdir).
struct CgroupHome {
  std::string mount;  // "/sys/fs/cgroup"
  std::string own;    // "/user.slice/user-0.slice/session-1.scope"; "/" at the root
  std::string why_not;
};
const CgroupHome& cgroup_home();
// Whether attempts get cgroups here, tried as the first would be, and what that means (doctor).
struct CgroupUse {
  bool cgroups = false;
  std::string about;
};
CgroupUse cgroup_use();

// The mount point of the first cgroup2 file system in /proc/self/mountinfo's text, and the
// subtree it shows (its root field: "/" unless a part was bind-mounted); nullopt: none.
struct Cgroup2Mount {
  std::string point;
  std::string root;
};
std::optional<Cgroup2Mount> cgroup2_mount_of(std::string_view mountinfo);
// The unified hierarchy's path in /proc/self/cgroup's text (its "0::PATH" line); nullopt: none.
std::optional<std::string> unified_cgroup_of(std::string_view proc_cgroup);

// The names an attempt's cgroup has, so that a record's cgroup is checked against the record
// before anything is done to it (a store edited by hand, or imported, never names another cgroup
// to kill):
// - idem-OWNERPID-OWNERSTART-N, made before the command's process and the process created in it
//   (make_attempt_cgroup): the pid and start time of the idem process that ran the attempt, which
//   the record names as its owner, and N, that process's count of them;
// - idem-PGID-START, the command's group (place_in_attempt_cgroup, where a process cannot be
//   created in a cgroup: kernels before 5.7), as every record before it had.
std::string owned_cgroup_name(int64_t owner_pid, int64_t owner_start_ticks, int64_t n);
bool is_owned_cgroup(const std::string& path, int64_t owner_pid, int64_t owner_start_ticks);
std::string attempt_cgroup_name(int64_t pgid, int64_t leader_start_ticks);
bool is_attempt_cgroup(const std::string& path, int64_t pgid, int64_t leader_start_ticks);

// A new attempt's cgroup below this process's own, made empty for the command's process to be
// created in (clone3's CLONE_INTO_CGROUP): its path under the mount and an O_PATH descriptor of
// it. Moving a running process instead (a write to cgroup.procs) waits for an RCU grace period
// of the kernel's, 5 to 30 ms on a 2-core machine: more than all the rest of a first run.
// `path` empty: none could be made; the first refusal (no permission, a read-only mount) stops
// later tries in this process.
struct AttemptCgroup {
  std::string path;
  util::Fd dir;
};
AttemptCgroup make_attempt_cgroup();
// The process could not be created in it (clone3's -errno): the cgroup is removed, and a refusal
// (no permission) stops later tries in this process.
void drop_attempt_cgroup(AttemptCgroup& cgroup, int err);

// Makes the attempt's cgroup below this process's own and moves `pid` (the command's child,
// before it execs) into it. Returns its path under the mount, or "" when none could be made: the
// first refusal (no permission, a read-only mount) stops later tries in this process.
std::string place_in_attempt_cgroup(pid_t pid, int64_t start_ticks);

enum class CgroupLook {
  gone,        // no such cgroup (removed once empty, or another boot's)
  empty,       // no live process in it or below it
  populated,   // live processes: the attempt's
  unreadable,  // cannot tell (no permission): the process group must tell
};
CgroupLook look_at_cgroup(const std::string& path);

// Ends every process in the cgroup: TERM (and CONT), then after `grace_ms` cgroup.kill (KILL to
// all of it at once), then waits up to max(grace_ms, 1 s) for it to empty, and removes it. True
// when it is empty.
bool kill_cgroup(const std::string& path, int64_t grace_ms);

// Removes the cgroup if nothing lives in it (an attempt that left nothing behind).
void remove_cgroup_if_empty(const std::string& path);

}  // namespace idem::proc
