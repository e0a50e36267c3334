#pragma once
// The daemon under a service manager, by systemd's documented protocols (sd_listen_fds(3),
// sd_notify(3)): sockets passed in by socket activation, and readiness, reload and stop
// notifications for Type=notify. They are spoken here directly rather than through libsystemd:
// idem is one static binary (docs/internals.md, "Start-up"), Debian ships libsystemd only as a
// shared library, and both protocols are a few environment variables and one datagram.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"

namespace idem::serve {

// What $LISTEN_PID, $LISTEN_FDS and $LISTEN_FDNAMES say: the names of the passed descriptors,
// which are 3, 4, ... in order (a name is "unknown" when none was given). Empty when nothing
// was passed to `self` (no LISTEN_PID, or another process's). Throws std::invalid_argument for
// values that cannot be read (a count that is not a number, names that do not match it). Pure.
std::vector<std::string> passed_fd_names(const std::optional<std::string>& listen_pid,
                                         const std::optional<std::string>& listen_fds,
                                         const std::optional<std::string>& listen_fdnames,
                                         pid_t self);

// One socket passed in, close-on-exec from now on (no handler inherits it).
struct PassedSocket {
  util::Fd fd;
  std::string name;
  int family = 0;  // AF_INET, AF_INET6 or AF_UNIX
};

// The listening stream sockets passed to this process; the variables are then unset, so that
// no handler mistakes them for its own. Throws UsageError for anything passed that is not a
// listening stream socket of those families (one line naming its descriptor).
std::vector<PassedSocket> take_passed_sockets();

// The service manager's notification socket ($NOTIFY_SOCKET), when there is one. Every send is
// one datagram; a manager that went away is not an error (nothing to tell).
class Notifier {
 public:
  Notifier();  // reads $NOTIFY_SOCKET
  bool enabled() const { return !address_.empty(); }
  void send(std::string_view state) const;

  void ready() const { send("READY=1"); }
  // Type=notify-reload wants the monotonic time the reload started at.
  void reloading() const;
  void stopping() const { send("STOPPING=1"); }

 private:
  std::string address_;  // a path, or '@' and an abstract name
};

// "RELOADING=1\nMONOTONIC_USEC=<usec>". Pure.
std::string reloading_state(int64_t monotonic_usec);

}  // namespace idem::serve
