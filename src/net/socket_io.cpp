#include "net/socket_io.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "util/clock.hpp"

namespace idem::net {

Ready wait_for(int fd, short events, int64_t deadline_ms, int wake_fd) {
  for (;;) {
    int64_t left = deadline_ms - util::monotonic_ms();
    if (left <= 0) return Ready::timeout;
    pollfd p[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    int n = ::poll(p, wake_fd >= 0 ? 2 : 1, int(std::min<int64_t>(left, INT_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Ready::error;
    }
    if (n == 0) continue;
    if (p[0].revents != 0) return Ready::ready;  // POLLHUP and POLLERR show in the read/write
    if (wake_fd >= 0 && (p[1].revents & POLLIN) != 0) return Ready::woken;
  }
}

bool send_all(int fd, std::string_view bytes, int64_t deadline_ms, int flags) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT | flags);
    if (n >= 0) {
      bytes.remove_prefix(size_t(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    Ready r = wait_for(fd, POLLOUT, deadline_ms);
    if (r == Ready::timeout) errno = ETIMEDOUT;
    if (r != Ready::ready) return false;
  }
  return true;
}

std::string why(int err) {
  std::string s = std::strerror(err);
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z' && (s.size() < 2 || !(s[1] >= 'A' && s[1] <= 'Z')))
    s[0] = char(s[0] - 'A' + 'a');
  return s;
}

}  // namespace idem::net
