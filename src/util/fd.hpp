#pragma once
// RAII file descriptor and EINTR-safe I/O helpers. Knows nothing about idem.
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace idem::util {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Writes all bytes, retrying on EINTR and short writes. Returns false with errno set on failure.
bool write_all(int fd, std::string_view bytes);
// An anonymous close-on-exec file holding `bytes`, positioned at its start: a command's stdin
// (a message, a request body). An invalid Fd, errno set, when it cannot be made or filled.
Fd memory_file(const char* name, std::string_view bytes);
// Reads until EOF. Returns false with errno set on failure.
bool read_all(int fd, std::string& out);
// Reads until EOF, handing each chunk read to `take` (through a heap buffer: a 64 KiB array on
// the stack is all of it under `ulimit -s 64`). Returns false with errno set on a read error.
bool read_chunks(int fd, const std::function<void(std::string_view)>& take);

// Opens /dev/null onto each of the descriptors 0, 1 and 2 that is closed, so that none of them is
// the next file the process opens (which would then receive what is meant for stdout or stderr).
// Each is opened for the other direction (0 write-only, 1 and 2 read-only): reading stdin or
// writing stdout still fails with EBADF, as on the closed descriptor, in the process and in the
// commands it starts. Returns false with errno set when /dev/null cannot be opened.
bool open_closed_standard_fds();

// Whether `a` and `b` are the same open file description (as after dup or `2>&1`), not merely
// the same file opened twice. False when either is not open.
bool same_open_file(int a, int b);

}  // namespace idem::util
