#include "proc/liveness.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

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
  int64_t start_ticks = 0;  // 0: the pid is gone or unreadable
};

// Fields 3 (state) and 22 (start time in clock ticks after boot) of /proc/PID/stat. The command
// name (field 2) may hold spaces and parentheses, so parse after the last ')'.
ProcStat read_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream fields(stat.substr(paren + 1));
  ProcStat result;
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return {};
    if (i == 3) result.state = field.empty() ? '?' : field[0];
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

}  // namespace

core::Owner describe_owner(pid_t pid) {
  if (pid == 0) pid = ::getpid();
  return core::Owner{this_host(), this_boot_id(), int64_t(pid), read_stat(pid).start_ticks};
}

bool owner_gone(const core::Owner& owner) {
  if (owner.host != this_host()) return false;  // cannot see another host's processes
  if (owner.boot_id.empty() || this_boot_id().empty()) return false;
  if (owner.boot_id != this_boot_id()) return true;  // the host rebooted since the claim
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
