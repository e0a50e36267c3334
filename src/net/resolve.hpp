#pragma once
// Host names to socket addresses without NSS in the static idem (docs/internals.md, "No NSS in
// the static idem"): a numeric address, else the name's lines of /etc/hosts, else "localhost",
// else the system resolver (getaddrinfo), which only the dynamically linked programs have.
#include <sys/socket.h>

#include <string>
#include <vector>

namespace idem::net {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

struct Resolved {
  std::vector<SocketAddress> addresses;  // in the order to try; empty on failure
  std::string error;                     // why there are none
};

// `host`'s addresses with `port`. A static idem resolves only numeric addresses, /etc/hosts and
// localhost; anything else is an error saying so.
Resolved resolve_host(const std::string& host, int port);

// Whether every address `host` names (numeric, or its /etc/hosts lines, or "localhost") is a
// loopback one (127.0.0.0/8, ::1); false for a name only a resolver knows.
bool names_only_loopback(const std::string& host);

// Whether this program has the system resolver (it is linked dynamically: idem-pg, or an idem
// built without IDEM_STATIC).
bool has_system_resolver();

// "HOST:PORT", an IPv6 address in brackets ("[::1]:8787"), as URLs and logs write it.
std::string host_port(const std::string& host, int port);

}  // namespace idem::net
