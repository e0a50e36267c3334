// RAII descriptors, EINTR-safe full reads and writes, and the standard descriptors
// (util/fd.hpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <thread>

#include "util/fd.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_fd {

using idem::util::Fd;
using idem::util::read_all;
using idem::util::write_all;

namespace {
bool is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }
}  // namespace

TEST_CASE("Fd: closes on destruction, reset and move", "[fd]") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  int raw_read = fds[0];
  int raw_write = fds[1];
  {
    Fd r(raw_read);
    Fd w(raw_write);
    CHECK(r.valid());
    CHECK(r.get() == raw_read);
    Fd moved(std::move(r));
    CHECK_FALSE(r.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is defined
    CHECK(moved.get() == raw_read);
    Fd assigned;
    CHECK_FALSE(assigned.valid());
    assigned = std::move(moved);
    CHECK(assigned.get() == raw_read);
    CHECK(is_open(raw_read));
    w.reset();
    CHECK_FALSE(w.valid());
    CHECK_FALSE(is_open(raw_write));
  }
  CHECK_FALSE(is_open(raw_read));
}

TEST_CASE("Fd: release gives the descriptor away", "[fd]") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  int raw = -1;
  {
    Fd r(fds[0]);
    raw = r.release();
    CHECK_FALSE(r.valid());
  }
  CHECK(is_open(raw));
  close(raw);
  close(fds[1]);
}

TEST_CASE("write_all/read_all: more than a pipe buffer, binary-safe", "[fd]") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  Fd r(fds[0]);
  Fd w(fds[1]);
  std::string payload;
  for (int i = 0; i < 300000; ++i) payload.push_back(char(i * 7 + (i >> 8)));
  payload[0] = '\0';
  bool wrote = false;
  std::thread writer([&] {
    wrote = write_all(w.get(), payload);
    w.reset();
  });
  std::string got;
  bool read_ok = read_all(r.get(), got);
  writer.join();
  CHECK(wrote);
  CHECK(read_ok);
  CHECK(got.size() == payload.size());
  CHECK(got == payload);
}

TEST_CASE("write_all/read_all: errors are reported with errno", "[fd]") {
  std::string out;
  errno = 0;
  CHECK_FALSE(read_all(-1, out));
  CHECK(errno == EBADF);
  errno = 0;
  CHECK_FALSE(write_all(-1, "x"));
  CHECK(errno == EBADF);
  CHECK(write_all(-1, ""));  // nothing to write: nothing can fail
}

TEST_CASE("same_open_file: one description (dup, 2>&1), not the same file opened twice", "[fd]") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  Fd r(fds[0]);
  Fd w(fds[1]);
  Fd w2(dup(w.get()));
  CHECK(idem::util::same_open_file(w.get(), w2.get()));
  CHECK(idem::util::same_open_file(w.get(), w.get()));
  CHECK_FALSE(idem::util::same_open_file(r.get(), w.get()));  // two ends: two descriptions
  int other[2];
  REQUIRE(pipe(other) == 0);
  Fd other_r(other[0]);
  Fd other_w(other[1]);
  CHECK_FALSE(idem::util::same_open_file(w.get(), other_w.get()));

  char path[] = "/tmp/idem-same-open-XXXXXX";
  Fd file(mkstemp(path));
  REQUIRE(file.valid());
  Fd again(open(path, O_RDWR));
  unlink(path);
  Fd file_dup(dup(file.get()));
  REQUIRE(write_all(file.get(), "moved on"));
  CHECK(idem::util::same_open_file(file.get(), file_dup.get()));
  CHECK_FALSE(idem::util::same_open_file(file.get(), again.get()));  // its own offset
  CHECK_FALSE(idem::util::same_open_file(file.get(), w.get()));
  CHECK_FALSE(idem::util::same_open_file(file.get(), -1));
}

TEST_CASE("open_closed_standard_fds: a closed 0, 1 or 2 becomes /dev/null, still unusable",
          "[fd]") {
  // In a child: the test runner's own stdout and stderr must stay as they are.
  for (int closed_mask : {1, 2, 4, 6, 7}) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int keep = dup(1);  // what was stdout, to compare with after
      struct stat before {};
      fstat(keep, &before);
      for (int fd = 0; fd <= 2; ++fd)
        if (closed_mask & (1 << fd)) close(fd);
      if (!idem::util::open_closed_standard_fds()) _exit(10);
      struct stat null {};
      if (stat("/dev/null", &null) != 0) _exit(11);
      for (int fd = 0; fd <= 2; ++fd) {
        struct stat st {};
        if (fstat(fd, &st) != 0) _exit(12 + fd);
        const bool is_null = st.st_rdev == null.st_rdev && S_ISCHR(st.st_mode);
        if ((closed_mask & (1 << fd)) != 0 && !is_null) _exit(20 + fd);
      }
      // Used as before, it fails as the closed descriptor did.
      char byte = 'x';
      if ((closed_mask & 1) && (read(0, &byte, 1) != -1 || errno != EBADF)) _exit(25);
      if ((closed_mask & 4) && (write(2, &byte, 1) != -1 || errno != EBADF)) _exit(26);
      // An open stdout stays what it was.
      struct stat out {};
      fstat(1, &out);
      if (!(closed_mask & 2) && (out.st_dev != before.st_dev || out.st_ino != before.st_ino))
        _exit(30);
      // The next file opened is not one of them.
      int next = open("/dev/null", O_RDONLY);
      _exit(next > 2 ? 0 : 31);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    INFO("closed mask " << closed_mask);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

}  // namespace unit_fd
