#include "proc/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "proc/liveness.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace idem::proc {

namespace {

// A file of /proc or of the cgroup file system, whole; nullopt (errno set) when unreadable.
std::optional<std::string> read_small_file(const std::string& path) {
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  std::string text;
  if (!util::read_all(fd.get(), text)) return std::nullopt;
  return text;
}

bool write_small_file(const std::string& path, std::string_view text) {
  util::Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  return fd.valid() && util::write_all(fd.get(), text);
}

// mountinfo escapes a space, tab, newline and backslash in a path as \ooo.
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + long(i) + 1, s.begin() + long(i) + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out.push_back(char((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t at = 0;
  while (at < line.size()) {
    size_t end = line.find(' ', at);
    if (end == std::string_view::npos) end = line.size();
    if (end > at) fields.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return fields;
}

// Calls `take` with each line of `text`.
template <typename Take>
void for_each_line(std::string_view text, Take take) {
  while (!text.empty()) {
    size_t end = text.find('\n');
    if (take(text.substr(0, end))) return;
    if (end == std::string_view::npos) return;
    text.remove_prefix(end + 1);
  }
}

std::string child_path(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

CgroupHome find_home() {
  CgroupHome home;
  const auto mountinfo = read_small_file("/proc/self/mountinfo");
  const auto mount = mountinfo ? cgroup2_mount_of(*mountinfo) : std::nullopt;
  if (!mount) {
    home.why_not = "no cgroup2 file system is mounted";
    return home;
  }
  const auto cgroups = read_small_file("/proc/self/cgroup");
  auto own = cgroups ? unified_cgroup_of(*cgroups) : std::nullopt;
  if (!own) {
    home.why_not = "this process has no cgroup v2 path (/proc/self/cgroup)";
    return home;
  }
  // A mount of part of the tree shows its root as "/": the path below it.
  if (mount->root != "/") {
    if (own->compare(0, mount->root.size(), mount->root) != 0) {
      home.why_not = "this process's cgroup is outside the mounted part of the tree";
      return home;
    }
    own->erase(0, mount->root.size());
    if (own->empty() || own->front() != '/') own->insert(0, "/");
  }
  home.mount = mount->point;
  home.own = *own;
  // Off, attempts get no cgroup; those recorded before are still looked at.
  const char* setting = std::getenv("IDEM_CGROUP");
  if (setting != nullptr && std::string_view(setting) == "off")
    home.why_not = "IDEM_CGROUP=off";
  else if (::access((home.mount + home.own).c_str(), W_OK) != 0)
    home.why_not = "its own cgroup " + home.own + " is not writable (" + std::strerror(errno) +
                   "): not root, and no delegated subtree (Delegate=yes)";
  return home;
}

// Set at the first refusal of a cgroup for an attempt: later attempts of this process do not try.
std::atomic<bool> g_refused{false};
// Set when the kernel cannot create a process in a cgroup (before Linux 5.7): later attempts of
// this process are moved into theirs instead (place_in_attempt_cgroup).
std::atomic<bool> g_no_clone_into{false};

// Whether `pid` is in `path` or below it, by its own /proc/PID/cgroup.
bool member_of(pid_t pid, const std::string& path) {
  const auto text = read_small_file("/proc/" + std::to_string(pid) + "/cgroup");
  const auto in = text ? unified_cgroup_of(*text) : std::nullopt;
  return in && (*in == path || in->compare(0, path.size() + 1, path + "/") == 0);
}

// The folders of the cgroup's subtree, deepest first, itself last.
void subtree_deepest_first(const std::string& dir, std::vector<std::string>& out, int depth = 0) {
  if (depth < 32) {
    if (DIR* d = ::opendir(dir.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (e->d_type != DT_DIR || std::strcmp(e->d_name, ".") == 0 ||
            std::strcmp(e->d_name, "..") == 0)
          continue;
        subtree_deepest_first(dir + "/" + e->d_name, out, depth + 1);
      }
      ::closedir(d);
    }
  }
  out.push_back(dir);
}

// Sends `sig` to every process of the cgroup's subtree, each through a pidfd checked to be in
// it after it was opened: a pid read from cgroup.procs that ended meanwhile and was reused is not
// signalled.
void signal_members(const std::string& path, int sig) {
  std::vector<std::string> dirs;
  subtree_deepest_first(cgroup_home().mount + path, dirs);
  for (const std::string& dir : dirs) {
    const auto procs = read_small_file(dir + "/cgroup.procs");
    if (!procs) continue;
    for_each_line(*procs, [&](std::string_view line) {
      const pid_t pid = pid_t(std::strtol(std::string(line).c_str(), nullptr, 10));
      if (pid <= 0) return false;
      util::Fd pidfd(int(::syscall(SYS_pidfd_open, pid, 0)));
      if (pidfd.valid() && member_of(pid, path))
        ::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0);
      return false;
    });
  }
}

bool wait_until_empty(const std::string& path, int64_t ms) {
  const int64_t give_up = util::monotonic_ms() + ms;
  for (;;) {
    const CgroupLook look = look_at_cgroup(path);
    if (look == CgroupLook::gone || look == CgroupLook::empty) return true;
    if (util::monotonic_ms() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The attempt cgroup's folder, its subtree's first (a command may make cgroups of its own).
void remove_tree(const std::string& path) {
  std::vector<std::string> dirs;
  subtree_deepest_first(cgroup_home().mount + path, dirs);
  for (const std::string& dir : dirs) ::rmdir(dir.c_str());
}

// An attempt cgroup's name: idem-DIGITS-DIGITS, or idem-DIGITS-DIGITS-DIGITS.
bool attempt_cgroup_named(std::string_view name) {
  if (name.substr(0, 5) != "idem-") return false;
  int dashes = 0;
  bool digit_before = false;
  for (char c : name.substr(5)) {
    if (c == '-' && digit_before && dashes < 2) {
      ++dashes;
      digit_before = false;
    } else if (c >= '0' && c <= '9') {
      digit_before = true;
    } else {
      return false;
    }
  }
  return dashes >= 1 && digit_before;
}

// Whether `path` is a plain path whose last part is `name`.
bool path_ends_in(const std::string& path, const std::string& name) {
  if (path.empty() || path.front() != '/' || path.find("/../") != std::string::npos ||
      path.find("/./") != std::string::npos)
    return false;
  const std::string last = "/" + name;
  return path.size() >= last.size() &&
         path.compare(path.size() - last.size(), last.size(), last) == 0;
}

// Removes the empty attempt cgroups beside `own` that were made over a minute ago: those whose
// command left a process behind that has since ended (a successful run's record is never looked
// at again). A younger one may be an attempt's between its mkdir and its move.
void sweep_empty_siblings(const CgroupHome& home) {
  const std::string parent = home.mount + home.own;
  DIR* d = ::opendir(parent.c_str());
  if (d == nullptr) return;
  const int64_t now_s = util::process_clock().now_ms() / 1000;
  while (dirent* e = ::readdir(d)) {
    if (e->d_type != DT_DIR || !attempt_cgroup_named(e->d_name)) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, 0) != 0 || now_s - st.st_ctime < 60) continue;
    remove_cgroup_if_empty(child_path(home.own, e->d_name));
  }
  ::closedir(d);
}

// The first try at a cgroup this process makes for an attempt: removes those that were left.
void sweep_once(const CgroupHome& home) {
  static std::once_flag swept;
  std::call_once(swept, [&] { sweep_empty_siblings(home); });
}

bool refusal(int err) { return err == EACCES || err == EPERM || err == EROFS; }

}  // namespace

std::optional<Cgroup2Mount> cgroup2_mount_of(std::string_view mountinfo) {
  std::optional<Cgroup2Mount> found;
  for_each_line(mountinfo, [&](std::string_view line) {
    const auto f = fields_of(line);
    // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
    const auto dash = std::find(f.begin(), f.end(), std::string_view("-"));
    if (f.size() < 5 || dash == f.end() || dash + 1 == f.end() || dash - f.begin() < 6)
      return false;
    if (*(dash + 1) != "cgroup2") return false;
    found = Cgroup2Mount{unescape_octal(f[4]), unescape_octal(f[3])};
    return true;
  });
  return found;
}

std::optional<std::string> unified_cgroup_of(std::string_view proc_cgroup) {
  std::optional<std::string> found;
  for_each_line(proc_cgroup, [&](std::string_view line) {
    if (line.substr(0, 3) != "0::") return false;
    std::string path(line.substr(3));
    if (path.empty() || path.front() != '/') return false;
    found = std::move(path);
    return true;
  });
  return found;
}

const CgroupHome& cgroup_home() {
  static const CgroupHome home = find_home();
  return home;
}

CgroupUse cgroup_use() {
  const CgroupHome& home = cgroup_home();
  if (!home.why_not.empty())
    return {false, "attempts have their process group only (" + home.why_not +
                       "): processes that leave it (setsid) are not seen as leftovers"};
  // A try, as the first attempt would: the mount may refuse what access() allowed.
  const std::string probe =
      home.mount + child_path(home.own, "idem-doctor-" + std::to_string(::getpid()));
  if (::mkdir(probe.c_str(), 0755) != 0)
    return {false, "attempts have their process group only (a cgroup cannot be made under " +
                       home.mount + home.own + ": " + std::strerror(errno) +
                       "): processes that leave it (setsid) are not seen as leftovers"};
  ::rmdir(probe.c_str());
  const std::string under = home.own == "/" ? home.mount : home.mount + home.own;
  return {true, "each attempt runs in a cgroup of its own under " + under +
                    ": leftovers are seen (and --kill-stale ends them) even after setsid"};
}

std::string attempt_cgroup_name(int64_t pgid, int64_t leader_start_ticks) {
  return "idem-" + std::to_string(pgid) + "-" + std::to_string(leader_start_ticks);
}

bool is_attempt_cgroup(const std::string& path, int64_t pgid, int64_t leader_start_ticks) {
  return path_ends_in(path, attempt_cgroup_name(pgid, leader_start_ticks));
}

std::string owned_cgroup_name(int64_t owner_pid, int64_t owner_start_ticks, int64_t n) {
  return "idem-" + std::to_string(owner_pid) + "-" + std::to_string(owner_start_ticks) + "-" +
         std::to_string(n);
}

bool is_owned_cgroup(const std::string& path, int64_t owner_pid, int64_t owner_start_ticks) {
  const std::string prefix =
      "idem-" + std::to_string(owner_pid) + "-" + std::to_string(owner_start_ticks) + "-";
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return false;
  const std::string_view name = std::string_view(path).substr(slash + 1);
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
  for (char c : name.substr(prefix.size()))
    if (c < '0' || c > '9') return false;
  return path_ends_in(path, std::string(name));
}

AttemptCgroup make_attempt_cgroup() {
  const CgroupHome& home = cgroup_home();
  if (!home.why_not.empty() || g_refused.load(std::memory_order_relaxed) ||
      g_no_clone_into.load(std::memory_order_relaxed))
    return {};
#ifdef IDEM_TEST_HOOKS
  // Tests take the path of a kernel before 5.7: the child is moved into its cgroup.
  if (std::getenv("IDEM_TEST_CGROUP_MOVE") != nullptr) return {};
#endif
  sweep_once(home);  // once a process (each run; the daemon at its first command)
  // This process's pid and start time, as its records name their owner (describe_owner).
  static std::atomic<int64_t> made{0};
  AttemptCgroup cgroup;
  cgroup.path = child_path(home.own, owned_cgroup_name(::getpid(), own_start_ticks(), ++made));
  const std::string dir = home.mount + cgroup.path;
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (refusal(errno) || errno == ENOENT) g_refused = true;
    return {};
  }
  cgroup.dir = util::Fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cgroup.dir.valid()) {
    ::rmdir(dir.c_str());
    return {};
  }
  return cgroup;
}

void drop_attempt_cgroup(AttemptCgroup& cgroup, int err) {
  // Creating a process in it needs write access to the common ancestor's cgroup.procs: this one's.
  if (refusal(err)) g_refused = true;
  if (err == ENOSYS || err == EINVAL || err == E2BIG) g_no_clone_into = true;
  cgroup.dir.reset();
  if (!cgroup.path.empty()) ::rmdir((cgroup_home().mount + cgroup.path).c_str());
  cgroup.path.clear();
}

std::string place_in_attempt_cgroup(pid_t pid, int64_t start_ticks) {
  const CgroupHome& home = cgroup_home();
  if (!home.why_not.empty() || g_refused.load(std::memory_order_relaxed)) return "";
  sweep_once(home);
  const std::string path = child_path(home.own, attempt_cgroup_name(pid, start_ticks));
  const std::string dir = home.mount + path;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    if (refusal(errno) || errno == ENOENT) g_refused = true;
    return "";
  }
  if (!write_small_file(dir + "/cgroup.procs", std::to_string(pid))) {
    // Moving needs write access to the common ancestor's cgroup.procs: this one's.
    if (refusal(errno)) g_refused = true;
    ::rmdir(dir.c_str());
    return "";
  }
  return path;
}

CgroupLook look_at_cgroup(const std::string& path) {
  const CgroupHome& home = cgroup_home();
  if (home.mount.empty()) return CgroupLook::unreadable;
  const auto events = read_small_file(home.mount + path + "/cgroup.events");
  if (!events) return errno == ENOENT ? CgroupLook::gone : CgroupLook::unreadable;
  CgroupLook look = CgroupLook::unreadable;
  for_each_line(*events, [&](std::string_view line) {
    if (line == "populated 1") look = CgroupLook::populated;
    if (line == "populated 0") look = CgroupLook::empty;
    return look != CgroupLook::unreadable;
  });
  return look;
}

bool kill_cgroup(const std::string& path, int64_t grace_ms) {
  signal_members(path, SIGTERM);
  signal_members(path, SIGCONT);  // a stopped member must run to act on TERM
  if (!wait_until_empty(path, grace_ms)) {
    // cgroup.kill (Linux 5.14) reaches every process at once, those forked meanwhile too.
    if (!write_small_file(cgroup_home().mount + path + "/cgroup.kill", "1"))
      signal_members(path, SIGKILL);
    if (!wait_until_empty(path, std::max<int64_t>(grace_ms, 1000))) return false;
  }
  remove_tree(path);
  return true;
}

void remove_cgroup_if_empty(const std::string& path) {
  if (path.empty() || cgroup_home().mount.empty()) return;
  if (look_at_cgroup(path) == CgroupLook::empty) remove_tree(path);
}

}  // namespace idem::proc
