#include "util/fd.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace idem::util {

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

bool read_all(int fd, std::string& out) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return true;
    out.append(buf, size_t(n));
  }
}

Fd memory_file(const char* name, std::string_view bytes) {
  Fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid() || !write_all(fd.get(), bytes) || ::lseek(fd.get(), 0, SEEK_SET) != 0)
    return Fd();
  return fd;
}

}  // namespace idem::util
