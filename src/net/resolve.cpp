#include "net/resolve.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "util/system_files.hpp"

namespace idem::net {

// Weak: defined by system_resolver.cpp in the dynamically linked programs only.
[[gnu::weak]] Resolved system_resolve(const std::string& host, int port);

bool has_system_resolver() { return &system_resolve != nullptr; }

namespace {

// A numeric IPv4 or IPv6 address with `port`; false for anything else.
bool numeric(const std::string& text, int port, SocketAddress& out) {
  out = SocketAddress{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
  if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(uint16_t(port));
    out.length = sizeof *v4;
    return true;
  }
  if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(uint16_t(port));
    out.length = sizeof *v6;
    return true;
  }
  return false;
}

// What resolves without a resolver: a numeric address, the name's /etc/hosts lines, and
// "localhost" (RFC 6761) when /etc/hosts does not name it.
std::vector<SocketAddress> without_resolver(const std::string& host, int port) {
  SocketAddress a;
  if (numeric(host, port, a)) return {a};
  std::vector<std::string> texts = util::hosts_addresses(host);
  if (texts.empty() && host == "localhost") texts = {"127.0.0.1", "::1"};
  std::vector<SocketAddress> out;
  for (const std::string& text : texts)
    if (numeric(text, port, a)) out.push_back(a);
  return out;
}

bool loopback(const SocketAddress& a) {
  if (a.storage.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in&>(a.storage).sin_addr.s_addr) >> 24) == 127;
  return a.storage.ss_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(a.storage).sin6_addr);
}

}  // namespace

Resolved resolve_host(const std::string& host, int port) {
  Resolved out;
  out.addresses = without_resolver(host, port);
  if (!out.addresses.empty()) return out;
  if (has_system_resolver()) return system_resolve(host, port);
  out.error =
      "not an address, not in /etc/hosts, and this statically linked idem has no resolver "
      "(idem serve runs as the dynamically linked idem-pg where it is installed; else give an "
      "address or add the name to /etc/hosts)";
  return out;
}

bool names_only_loopback(const std::string& host) {
  const std::vector<SocketAddress> addresses = without_resolver(host, 0);
  return !addresses.empty() && std::all_of(addresses.begin(), addresses.end(), loopback);
}

std::string host_port(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace idem::net
