#include "net/stream.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "net/socket_io.hpp"

namespace idem::net {

Stream::Read PlainStream::read(char* out, size_t capacity, size_t& got, int64_t deadline_ms,
                               int wake_fd) {
  for (;;) {
    Ready r = wait_for(fd(), POLLIN, deadline_ms, wake_fd);
    if (r == Ready::timeout) return Read::timeout;
    if (r == Ready::woken) return Read::woken;
    if (r == Ready::error) return Read::error;
    ssize_t n = ::recv(fd(), out, capacity, 0);
    if (n == 0) return Read::eof;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return Read::error;
    }
    got = size_t(n);
    return Read::data;
  }
}

bool PlainStream::write(std::string_view bytes, int64_t deadline_ms) {
  return send_all(fd(), bytes, deadline_ms);
}

void PlainStream::close_write(int64_t) { ::shutdown(fd(), SHUT_WR); }

}  // namespace idem::net
