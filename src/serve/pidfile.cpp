#include "serve/pidfile.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/errors.hpp"
#include "net/socket_io.hpp"

namespace idem::serve {

namespace {

// The file's text; nullopt when there is no file.
std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool alive(long pid) { return ::kill(pid_t(pid), 0) == 0 || errno == EPERM; }

}  // namespace

long parse_pid(const std::string& text) {
  std::string digits = text;
  while (!digits.empty() && (digits.back() == '\n' || digits.back() == ' ')) digits.pop_back();
  if (digits.empty() || digits.size() > 10) return -1;
  long pid = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    pid = pid * 10 + (c - '0');
  }
  return pid > 0 ? pid : -1;
}

void PidFile::check(const std::string& path) {
  const std::optional<std::string> text = read_file(path);
  if (!text) return;
  const long pid = parse_pid(*text);
  if (pid < 0) throw UsageError("--pidfile " + path + ": the file there holds no process id");
  if (pid != long(::getpid()) && alive(pid))
    throw UsageError("--pidfile " + path + ": process " + std::to_string(pid) +
                     " is running (another idem serve?)");
}

void PidFile::write() {
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << ::getpid() << "\n";
    out.flush();
    if (!out) throw UsageError("--pidfile " + path_ + ": cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw UsageError("--pidfile " + path_ + ": " + net::why(err));
  }
}

void remove_pid_file(const std::string& path) noexcept {
  try {
    const std::optional<std::string> text = read_file(path);
    if (text && parse_pid(*text) == long(::getpid())) ::unlink(path.c_str());
  } catch (...) {
  }
}

}  // namespace idem::serve
