#include "net/ip_range.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace idem::net {

namespace {

int family_bits(const IpAddress& a) { return a.v4 ? 32 : 128; }

void clear_past(IpAddress& a, int prefix) {
  for (int bit = prefix; bit < family_bits(a); ++bit)
    a.bytes[size_t(bit / 8)] &= uint8_t(~(0x80u >> (bit % 8)));
}

}  // namespace

std::optional<IpAddress> parse_ip(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']')
    text = text.substr(1, text.size() - 2);
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);
  IpAddress a;
  if (::inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) return a;
  if (::inet_pton(AF_INET6, s.c_str(), a.bytes.data()) != 1) return std::nullopt;
  a.v4 = false;
  static constexpr uint8_t k_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(a.bytes.data(), k_mapped, 12) == 0) {
    std::memmove(a.bytes.data(), a.bytes.data() + 12, 4);
    std::fill(a.bytes.begin() + 4, a.bytes.end(), 0);
    a.v4 = true;
  }
  return a;
}

std::optional<IpAddress> parse_peer(std::string_view text) {
  if (auto whole = parse_ip(text)) return whole;  // no port, or a bare IPv6 address
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view port = text.substr(colon + 1);
  if (port.empty() ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::string_view host = text.substr(0, colon);
  // An IPv6 address with a port must be bracketed; "::1:80" is itself an address.
  if (host.find(':') != std::string_view::npos && host.front() != '[') return std::nullopt;
  return parse_ip(host);
}

bool IpRange::contains(const IpAddress& address) const {
  if (address.v4 != base.v4) return false;
  IpAddress masked = address;
  clear_past(masked, prefix);
  return masked.bytes == base.bytes;
}

std::optional<IpRange> parse_range(std::string_view text) {
  size_t slash = text.find('/');
  auto address = parse_ip(text.substr(0, slash));
  if (!address) return std::nullopt;
  IpRange range;
  range.prefix = family_bits(*address);
  if (slash != std::string_view::npos) {
    std::string_view bits = text.substr(slash + 1);
    if (bits.empty() || bits.size() > 3 ||
        !std::all_of(bits.begin(), bits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    range.prefix = std::stoi(std::string(bits));
    // "::ffff:10.0.0.0/104" is an IPv4 block written in IPv6: its prefix counts the 96 bits.
    if (address->v4 && text.find(':') != std::string_view::npos) {
      if (range.prefix < 96) return std::nullopt;
      range.prefix -= 96;
    }
    if (range.prefix > family_bits(*address)) return std::nullopt;
  }
  clear_past(*address, range.prefix);
  range.base = *address;
  return range;
}

std::vector<IpRange> parse_ranges(std::string_view text) {
  std::vector<IpRange> ranges;
  size_t i = 0;
  auto separator = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == ','; };
  while (i < text.size()) {
    while (i < text.size() && separator(text[i])) ++i;
    size_t end = i;
    while (end < text.size() && !separator(text[end])) ++end;
    if (end == i) break;
    std::string_view one = text.substr(i, end - i);
    auto range = parse_range(one);
    if (!range)
      throw std::invalid_argument("'" + std::string(one) +
                                  "' is not an address or CIDR range such as 10.0.0.0/8");
    ranges.push_back(*range);
    i = end;
  }
  return ranges;
}

bool any_contains(const std::vector<IpRange>& ranges, const IpAddress& address) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const IpRange& r) { return r.contains(address); });
}

bool allows(const std::vector<IpRange>& allow, std::string_view remote) {
  if (allow.empty()) return true;
  std::optional<IpAddress> address = parse_peer(remote);
  return address && any_contains(allow, *address);
}

bool is_loopback_host(std::string_view host) {
  // Drop the port: "[::1]:8787", "127.0.0.1:8787", "localhost:8787".
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return close != std::string_view::npos && host.substr(1, close - 1) == "::1";
  }
  host = host.substr(0, host.find(':'));
  if (host == "localhost") return true;
  if (host.rfind("127.", 0) != 0) return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.')
      ++dots;
    else if (c < '0' || c > '9')
      return false;
  }
  return dots == 3;
}

}  // namespace idem::net
