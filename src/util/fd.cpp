#include "util/fd.hpp"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

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
  return read_chunks(fd, [&out](std::string_view chunk) { out.append(chunk); });
}

bool read_chunks(int fd, const std::function<void(std::string_view)>& take) {
  constexpr size_t k_chunk = 65536;
  const std::unique_ptr<char[]> buf(new char[k_chunk]);
  for (;;) {
    ssize_t n = ::read(fd, buf.get(), k_chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return true;
    take(std::string_view(buf.get(), size_t(n)));
  }
}

Fd memory_file(const char* name, std::string_view bytes) {
  Fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid() || !write_all(fd.get(), bytes) || ::lseek(fd.get(), 0, SEEK_SET) != 0)
    return Fd();
  return fd;
}

bool open_closed_standard_fds() {
  // In order, so that open() returns the lowest closed one, the one being filled.
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int opened = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (opened < 0) return false;
    if (opened != fd) {  // not expected: lower ones are open
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
  return true;
}

bool same_open_file(int a, int b) {
  struct stat sa {
  }, sb{};
  if (::fstat(a, &sa) != 0 || ::fstat(b, &sb) != 0) return false;
  if (sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino) return false;
  if (a == b) return true;
  // kcmp(2) compares the kernel's file objects themselves: the exact answer.
  const pid_t self = ::getpid();
  long same = ::syscall(SYS_kcmp, self, self, KCMP_FILE, a, b);
  if (same >= 0) return same == 0;
  // Without it (a kernel built without CONFIG_KCMP, or a seccomp filter refusing it, as some
  // container runtimes do): the same file with the same status flags and the same offset (both
  // none, ESPIPE, for a pipe or a socket). Two opens of one file can pass this too, e.g.
  // `>log 2>log` before either was written; treating them as one then writes both streams
  // through one descriptor, which at worst keeps writes from overwriting each other.
  // (Toggling a status flag on one to see the other change would tell them apart, but would
  // change, for a moment, a description other processes may be writing through.)
  if (::fcntl(a, F_GETFL) != ::fcntl(b, F_GETFL)) return false;
  return ::lseek(a, 0, SEEK_CUR) == ::lseek(b, 0, SEEK_CUR);
}

}  // namespace idem::util
