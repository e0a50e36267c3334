// getaddrinfo, the one NSS function idem calls: linked only into the dynamically linked programs
// (idem_system_resolver in CMakeLists.txt). A static glibc must not load NSS modules: a module
// built against the system's shared glibc crashes a static one (docs/internals.md, "No NSS in
// the static idem"); there resolve.cpp finds this function null.
#include <netdb.h>

#include <cstring>

#include "net/resolve.hpp"

namespace idem::net {

Resolved system_resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  Resolved out;
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    out.error = ::gai_strerror(rc);
    return out;
  }
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    SocketAddress a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = ai->ai_addrlen;
    out.addresses.push_back(a);
  }
  ::freeaddrinfo(found);
  return out;
}

}  // namespace idem::net
