#include "http/connection_guard.hpp"

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <set>

#include "util/clock.hpp"

namespace idem::http {

namespace {
thread_local ConnectionGuard* t_guard = nullptr;
thread_local uint64_t t_connection = 0;
std::atomic<int64_t> g_shed{0};
std::mutex g_instance_mutex;
ConnectionGuard* g_instance = nullptr;

std::string link_of(int fd) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  char target[128];
  ssize_t n = ::readlink(path, target, sizeof target - 1);
  return n > 0 ? std::string(target, size_t(n)) : std::string();
}
}  // namespace

ConnectionGuard::ConnectionGuard(int workers, int max_waiting, int64_t deadline_ms)
    : max_connections_(workers + max_waiting), deadline_ms_(deadline_ms) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
  watchdog_ = std::thread([this] { watch(); });
  std::lock_guard lock(g_instance_mutex);
  g_instance = this;
}

ConnectionGuard::~ConnectionGuard() {
  shutdown();
  std::lock_guard lock(g_instance_mutex);
  if (g_instance == this) g_instance = nullptr;
}

// httplib hands over a closure around the socket it just accepted, not the socket itself. The
// accepting thread calls enqueue right after accept(), and the daemon opens no other sockets, so
// the accepted one is the socket descriptor whose inode no tracked connection (and not the
// listening socket, which is the lowest) has.
std::string ConnectionGuard::accepted_socket(int& fd) {
  std::set<std::string> known;
  for (const auto& [id, c] : connections_) known.insert(c.inode);
  fd = -1;
  std::string found;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  int listening = -1;
  std::vector<std::pair<int, std::string>> sockets;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    int n = std::atoi(e->d_name);
    std::string target = link_of(n);
    if (target.rfind("socket:", 0) != 0) continue;
    int listens = 0;
    socklen_t len = sizeof listens;
    if (::getsockopt(n, SOL_SOCKET, SO_ACCEPTCONN, &listens, &len) == 0 && listens) {
      listening = n;
      continue;
    }
    sockets.emplace_back(n, target);
  }
  ::closedir(dir);
  (void)listening;
  for (const auto& [n, target] : sockets)
    if (!known.count(target)) {
      fd = n;
      found = target;
    }
  return found;
}

void ConnectionGuard::enqueue(std::function<void()> fn) {
  std::unique_lock lock(mutex_);
  int fd = -1;
  std::string inode = accepted_socket(fd);
  if (int(connections_.size()) >= max_connections_ || stopping_) {
    // Over the cap: close it now; the closure then finds a dead socket and returns at once.
    ++g_shed;
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
    lock.unlock();
    fn();
    return;
  }
  uint64_t id = next_id_++;
  if (fd >= 0) connections_[id] = Connection{fd, inode, util::monotonic_ms()};
  waiting_.emplace_back(id, std::move(fn));
  lock.unlock();
  ready_.notify_one();
}

void ConnectionGuard::work() {
  for (;;) {
    std::pair<uint64_t, std::function<void()>> job;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (waiting_.empty()) return;
      job = std::move(waiting_.front());
      waiting_.pop_front();
      ++active_;
    }
    t_guard = this;
    t_connection = job.first;
    job.second();
    t_guard = nullptr;
    std::lock_guard lock(mutex_);
    connections_.erase(job.first);
    --active_;
  }
}

void ConnectionGuard::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    watch_stop_.wait_for(lock, std::chrono::milliseconds(100));
    int64_t now = util::monotonic_ms();
    for (auto& [id, c] : connections_) {
      if (c.handling || c.fd < 0 || now - c.phase_start_ms <= deadline_ms_) continue;
      // Still reading a request (or idle between requests) past the deadline: cut it off. The
      // worker's blocked read returns and httplib closes the socket.
      if (link_of(c.fd) == c.inode) ::shutdown(c.fd, SHUT_RDWR);
      c.fd = -1;
    }
  }
}

void ConnectionGuard::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  ready_.notify_all();
  watch_stop_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (watchdog_.joinable()) watchdog_.join();
}

void ConnectionGuard::request_read() {
  if (t_guard == nullptr) return;
  std::lock_guard lock(t_guard->mutex_);
  auto it = t_guard->connections_.find(t_connection);
  if (it != t_guard->connections_.end()) it->second.handling = true;
}

void ConnectionGuard::response_written() {
  if (t_guard == nullptr) return;
  std::lock_guard lock(t_guard->mutex_);
  auto it = t_guard->connections_.find(t_connection);
  if (it != t_guard->connections_.end()) {
    it->second.handling = false;
    it->second.phase_start_ms = util::monotonic_ms();
  }
}

int64_t ConnectionGuard::shed_count() { return g_shed.load(); }

}  // namespace idem::http
