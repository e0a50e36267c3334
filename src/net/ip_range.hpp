#pragma once
// Address ranges for allow-lists: the native hooks' "allow" (hooks/config.hpp) and the ip-whitelist
// rule of webhook hooks files. Pure.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::net {

// One address, IPv4 or IPv6; an IPv4-mapped IPv6 address (::ffff:10.0.0.1) is its IPv4 one.
struct IpAddress {
  bool v4 = true;
  std::array<uint8_t, 16> bytes{};  // v4: the first 4
};

// A numeric address ("10.0.0.1", "::1", "fe80::1"), also in brackets ("[::1]"); nullopt for
// anything else (names are never resolved).
std::optional<IpAddress> parse_ip(std::string_view text);

// The address of a peer written as "ADDRESS", "ADDRESS:PORT" or "[ADDRESS]:PORT".
std::optional<IpAddress> parse_peer(std::string_view text);

// Whether `host` (a Host header's value, port and all: "127.0.0.1:8787", "[::1]:1",
// "localhost") names a loopback host. What a loopback listener's page and built-ins ask of a
// request's Host, so that a page of another site whose name resolves to 127.0.0.1 (DNS
// rebinding) is refused.
bool is_loopback_host(std::string_view host);

// A CIDR block ("10.0.0.0/8", "2001:db8::/32") or one address (a /32 or /128).
struct IpRange {
  IpAddress base;  // with the bits past the prefix cleared
  int prefix = 0;
  bool contains(const IpAddress& address) const;
};

// One range; nullopt when `text` is not one (a prefix past the family's length, a name).
std::optional<IpRange> parse_range(std::string_view text);

// Ranges separated by blanks or commas ("10.0.0.0/8 192.168.1.5,::1"). Throws std::invalid_argument
// naming the first that is not a range.
std::vector<IpRange> parse_ranges(std::string_view text);

bool any_contains(const std::vector<IpRange>& ranges, const IpAddress& address);

// Whether an allow-list lets the peer `remote` (Request::remote: "ADDRESS", "unix" on a Unix
// socket) in: an empty list lets everyone in; a peer whose address cannot be read, no one.
bool allows(const std::vector<IpRange>& allow, std::string_view remote);

}  // namespace idem::net
