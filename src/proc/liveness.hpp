#pragma once
// Who is this process, and is a recorded owner still alive? Reads /proc.
#include <sys/types.h>

#include "core/record.hpp"

namespace idem::proc {

// The owner identity of `pid` on this host (host name, machine id, boot id, pid namespace, pid,
// start time). For pid 0, this process.
core::Owner describe_owner(pid_t pid = 0);

// True only when the owner is provably gone: same host (machine id, else host name) and a
// different boot id (rebooted), or same boot and pid namespace and the pid is dead or now belongs
// to a process with another start time. An owner on another host, in another pid namespace, or
// recorded without its namespace is never provably gone here (only a lease can tell).
bool owner_gone(const core::Owner& owner);

// The start time of `pid` in clock ticks after boot, 0 if it is gone or unreadable.
int64_t start_ticks(pid_t pid);
// This process's, read once (again in a child of a process that had read it).
int64_t own_start_ticks();

// What is left of the recorded process group of an attempt owned by `owner`, whose processes
// carry `mark` (core::attempt_mark) in their environment. An empty mark (a group idem did not
// start: begin's caller's) proves nothing: any live member then counts as the attempt's.
// A recorded cgroup named for the group answers alone while it can be read: populated is ours,
// empty or gone is empty, whatever the process group holds.
enum class GroupLook {
  // No live (not zombie) member; or nothing to look at: no recorded group, another boot, another
  // host or another pid namespace.
  empty,
  // A live member proven the attempt's: its leader (same pid and start time), or a process of
  // the group whose environment holds the mark. A group id is a pid the kernel does not hand out
  // again while the group has members, so every member is then the attempt's.
  ours,
  // Live members, none proven: the leader is gone and no member carries the mark (it cleared its
  // environment, or it is another user's, or the number now leads another group after the
  // recorded one emptied). Not to be waited on or killed.
  unproven,
};
GroupLook look_at_group(const core::Owner& owner, const core::ProcessGroup& group,
                        const std::string& mark);
// look_at_group(...) == GroupLook::ours.
bool process_group_alive(const core::Owner& owner, const core::ProcessGroup& group,
                         const std::string& mark);

// Removes the attempt's recorded cgroup once nothing lives in it (leftovers that ended on their
// own after the run).
void remove_empty_cgroup(const core::Owner& owner, const core::ProcessGroup& group);

// Ends a recorded group proven the attempt's: TERM, then KILL after `grace_ms`, then waits up to
// `grace_ms` more for it to empty; with a recorded cgroup, all of the cgroup (proc/cgroup.hpp).
// Returns true when it is empty (or not proven: left alone), false if members remain (other
// users' processes, or ones stuck in the kernel).
bool kill_process_group(const core::Owner& owner, const core::ProcessGroup& group,
                        const std::string& mark, int64_t grace_ms);

}  // namespace idem::proc
