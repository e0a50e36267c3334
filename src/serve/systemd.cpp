#include "serve/systemd.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "core/errors.hpp"
#include "net/socket_io.hpp"

namespace idem::serve {

namespace {

constexpr int k_first_passed_fd = 3;  // SD_LISTEN_FDS_START
constexpr int k_max_passed_fds = 1024;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// A decimal number without sign or blanks, or -1.
long long decimal(const std::string& text) {
  if (text.empty() || text.size() > 18) return -1;
  long long n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

int socket_option(int fd, int option) {
  int value = 0;
  socklen_t length = sizeof value;
  if (::getsockopt(fd, SOL_SOCKET, option, &value, &length) != 0) return -1;
  return value;
}

}  // namespace

std::vector<std::string> passed_fd_names(const std::optional<std::string>& listen_pid,
                                         const std::optional<std::string>& listen_fds,
                                         const std::optional<std::string>& listen_fdnames,
                                         pid_t self) {
  if (!listen_pid || !listen_fds) return {};
  const long long pid = decimal(*listen_pid);
  if (pid < 0) throw std::invalid_argument("LISTEN_PID=" + *listen_pid + " is not a process id");
  if (pid != self) return {};  // meant for another process (we inherited it from a parent)
  const long long count = decimal(*listen_fds);
  if (count < 0 || count > k_max_passed_fds)
    throw std::invalid_argument("LISTEN_FDS=" + *listen_fds + " is not a count of descriptors");
  std::vector<std::string> names;
  if (listen_fdnames) {
    size_t from = 0;
    for (;;) {
      const size_t colon = listen_fdnames->find(':', from);
      names.push_back(listen_fdnames->substr(from, colon - from));
      if (colon == std::string::npos) break;
      from = colon + 1;
    }
    if (names.size() != size_t(count))
      throw std::invalid_argument("LISTEN_FDNAMES has " + std::to_string(names.size()) +
                                  " names for LISTEN_FDS=" + *listen_fds);
  } else {
    names.assign(size_t(count), "unknown");
  }
  return names;
}

std::vector<PassedSocket> take_passed_sockets() {
  std::vector<std::string> names;
  try {
    names =
        passed_fd_names(env("LISTEN_PID"), env("LISTEN_FDS"), env("LISTEN_FDNAMES"), ::getpid());
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("socket activation: ") + e.what());
  }
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  std::vector<PassedSocket> sockets;
  for (size_t i = 0; i < names.size(); ++i) {
    const int fd = k_first_passed_fd + int(i);
    // Owned from here on: closed with the daemon, never inherited by a handler.
    PassedSocket s{util::Fd(fd), names[i], socket_option(fd, SO_DOMAIN)};
    const std::string which =
        "socket activation: descriptor " + std::to_string(fd) + " (" + names[i] + ")";
    if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
      s.fd.release();  // not ours: it is not open
      throw UsageError(which + ": " + net::why(errno));
    }
    if (socket_option(fd, SO_TYPE) != SOCK_STREAM || socket_option(fd, SO_ACCEPTCONN) != 1 ||
        (s.family != AF_INET && s.family != AF_INET6 && s.family != AF_UNIX))
      throw UsageError(which + " is not a listening TCP or Unix stream socket");
    sockets.push_back(std::move(s));
  }
  return sockets;
}

Notifier::Notifier() {
  if (auto v = env("NOTIFY_SOCKET"); v && (v->starts_with('/') || v->starts_with('@')))
    address_ = *v;
}

void Notifier::send(std::string_view state) const {
  if (!enabled()) return;
  sockaddr_un addr{};
  if (address_.size() >= sizeof addr.sun_path) return;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, address_.data(), address_.size());
  if (address_[0] == '@') addr.sun_path[0] = '\0';  // the abstract namespace
  const socklen_t length =
      socklen_t(offsetof(sockaddr_un, sun_path) + address_.size() + (address_[0] == '@' ? 0 : 1));
  util::Fd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return;
  [[maybe_unused]] ssize_t n = ::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
                                        reinterpret_cast<const sockaddr*>(&addr), length);
}

void Notifier::reloading() const {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  send(reloading_state(int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000));
}

std::string reloading_state(int64_t monotonic_usec) {
  return "RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_usec);
}

}  // namespace idem::serve
