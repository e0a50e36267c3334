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

// True when the recorded process group of an attempt owned by `owner` still has a live (not
// zombie) member: same host and boot, and either its leader (same pid and start time) or another
// process with that process group id. A group id is a pid the kernel does not hand out again while
// the group has members, so a leader pid that now belongs to a younger process means the group
// emptied. False for no recorded group, another boot, another host and another pid namespace
// (which cannot be looked at).
bool process_group_alive(const core::Owner& owner, const core::ProcessGroup& group);

// Ends a live recorded group: TERM, then KILL after `grace_ms`, then waits up to `grace_ms` more
// for it to empty. Returns true when it is empty (or was not alive), false if members remain
// (other users' processes, or ones stuck in the kernel).
bool kill_process_group(const core::Owner& owner, const core::ProcessGroup& group,
                        int64_t grace_ms);

}  // namespace idem::proc
