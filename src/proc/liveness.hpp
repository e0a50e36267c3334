#pragma once
// Who is this process, and is a recorded owner still alive? Reads /proc.
#include <sys/types.h>

#include "core/record.hpp"

namespace idem::proc {

// The owner identity of `pid` on this host (host name, boot id, pid, start time). For pid 0, this
// process.
core::Owner describe_owner(pid_t pid = 0);

// True only when the owner is provably gone: same host and a different boot id (rebooted), or
// same boot and the pid is dead or now belongs to a process with another start time. An owner
// on another host is never provably gone.
bool owner_gone(const core::Owner& owner);

}  // namespace idem::proc
