// `--pidfile` (serve/pidfile.hpp): what a pid file holds, refusing a live process's, replacing a
// dead one's, removing only our own.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "serve/pidfile.hpp"
#include "temp_dir.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_pidfile {

using idem::serve::parse_pid;
using idem::serve::PidFile;

namespace {

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The id of a process that has exited and been reaped.
pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace

TEST_CASE("pidfile: its text", "[pidfile]") {
  CHECK(parse_pid("1234\n") == 1234);
  CHECK(parse_pid("1234") == 1234);
  CHECK(parse_pid("") == -1);
  CHECK(parse_pid("0\n") == -1);
  CHECK(parse_pid("12x\n") == -1);
  CHECK(parse_pid("-5\n") == -1);
  CHECK(parse_pid("99999999999\n") == -1);
}

TEST_CASE("pidfile: a live process's file is refused, a dead one's replaced", "[pidfile]") {
  idem::test::TempDir dir;
  const std::string path = dir.path() + "/idem.pid";
  CHECK_NOTHROW(PidFile::check(path));  // no file
  write_text(path, std::to_string(::getppid()) + "\n");
  CHECK_THROWS_WITH(PidFile::check(path), "--pidfile " + path + ": process " +
                                              std::to_string(::getppid()) +
                                              " is running (another idem serve?)");
  write_text(path, "hello\n");
  CHECK_THROWS_WITH(PidFile::check(path),
                    "--pidfile " + path + ": the file there holds no process id");
  write_text(path, std::to_string(dead_pid()) + "\n");
  CHECK_NOTHROW(PidFile::check(path));
  {
    PidFile file(path);
    file.write();
    CHECK(read_text(path) == std::to_string(::getpid()) + "\n");
    CHECK_NOTHROW(PidFile::check(path));  // our own
  }
  CHECK_FALSE(std::filesystem::exists(path));  // removed with the object
}

TEST_CASE("pidfile: a successor's file is left alone", "[pidfile]") {
  idem::test::TempDir dir;
  const std::string path = dir.path() + "/idem.pid";
  PidFile file(path);
  file.write();
  write_text(path, std::to_string(::getppid()) + "\n");
  file.remove();
  CHECK(std::filesystem::exists(path));
}

}  // namespace unit_pidfile
