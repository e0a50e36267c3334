#pragma once
// Where and how the daemon listens: --listen, the server's limits, TLS, and the sockets socket
// activation passed in.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/server.hpp"
#include "net/tls.hpp"
#include "serve/daemon.hpp"
#include "serve/systemd.hpp"

namespace idem::serve {

// --listen's (or `flag`'s) HOST and PORT; throws UsageError for a bad one, or a host that is not
// a loopback address without --allow-remote.
std::pair<std::string, int> parse_listen(const std::string& listen, bool allow_remote,
                                         const std::string& flag = "--listen");

// Whether --listen's HOST is a loopback address (127.0.0.0/8, ::1), or a name /etc/hosts maps
// only to such addresses (localhost too without a line).
bool is_loopback_address(const std::string& host);

// Written whole or not at all: a reader never sees half a number. Nothing when `path` is empty.
void write_port_file(const std::string& path, int port);

net::ServerOptions server_options(const DaemonOptions& options);

// The TLS files of --tls-cert and --tls-key, or nullptr without them.
std::shared_ptr<const net::TlsContext> load_tls(const DaemonOptions& options);

// Sockets passed in by socket activation: at most one TCP and one Unix listener.
struct Passed {
  std::optional<PassedSocket> tcp, unix_socket;
};

// Throws UsageError for more than one socket of a kind.
Passed sort_passed(std::vector<PassedSocket> sockets);

}  // namespace idem::serve
