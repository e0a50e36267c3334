#include "serve/listen.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/errors.hpp"
#include "net/resolve.hpp"

namespace idem::serve {

std::pair<std::string, int> parse_listen(const std::string& listen, bool allow_remote,
                                         const std::string& flag) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw UsageError("bad " + flag + " '" + listen + "': use HOST:PORT, e.g. 127.0.0.1:8787");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (...) {
  }
  if (port < 0 || port > 65535) throw UsageError("bad " + flag + " '" + listen + "': bad port");
  if (!is_loopback_address(host) && !allow_remote)
    throw UsageError(flag + " " + listen +
                     " is not a loopback address; add --allow-remote to accept other hosts");
  return {host, port};
}

bool is_loopback_address(const std::string& host) {
  // A numeric 127.0.0.0/8 or ::1 address, or a name whose /etc/hosts lines (localhost's, without
  // any) are all such; never a name only DNS knows, nor one that merely starts "127.".
  return net::names_only_loopback(host);
}

// Written whole or not at all: a reader never sees half a number.
void write_port_file(const std::string& path, int port) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

net::ServerOptions server_options(const DaemonOptions& options) {
  net::ServerOptions o;
  o.max_connections = std::max(1, options.max_connections);
  o.request_timeout_ms = options.request_timeout_ms;
  o.idle_timeout_ms = 5000;
  return o;
}

std::shared_ptr<const net::TlsContext> load_tls(const DaemonOptions& options) {
  if (options.tls_cert.empty()) return nullptr;
  auto version = net::parse_tls_version(options.tls_min_version);
  if (!version) throw UsageError("--tls-min-version must be 1.2 or 1.3");
  return net::TlsContext::load(net::TlsFiles{options.tls_cert, options.tls_key, *version});
}

Passed sort_passed(std::vector<PassedSocket> sockets) {
  Passed passed;
  for (PassedSocket& s : sockets) {
    auto& slot = s.family == AF_UNIX ? passed.unix_socket : passed.tcp;
    if (slot)
      throw UsageError("socket activation: more than one " +
                       std::string(s.family == AF_UNIX ? "Unix" : "TCP") +
                       " socket passed; idem serve listens on one of each");
    slot = std::move(s);
  }
  return passed;
}

}  // namespace idem::serve
