// RAII descriptors and EINTR-safe full reads and writes (util/fd.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <thread>

#include "util/fd.hpp"

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
