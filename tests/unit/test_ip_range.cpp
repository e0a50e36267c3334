#include <catch2/catch.hpp>

#include "net/ip_range.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_ip_range {

using namespace idem::net;

namespace {
bool in(const char* ranges, const char* peer) {
  auto address = parse_peer(peer);
  REQUIRE(address);
  return any_contains(parse_ranges(ranges), *address);
}
}  // namespace

TEST_CASE("ip_range: addresses and peers", "[ip_range]") {
  CHECK(parse_ip("10.1.2.3"));
  CHECK(parse_ip("::1"));
  CHECK(parse_ip("[::1]"));
  CHECK_FALSE(parse_ip("localhost"));
  CHECK_FALSE(parse_ip("10.1.2"));
  CHECK_FALSE(parse_ip(""));
  CHECK(parse_peer("127.0.0.1:54321"));
  CHECK(parse_peer("[::1]:8080"));
  CHECK(parse_peer("::1"));
  CHECK_FALSE(parse_peer("127.0.0.1:port"));
  auto mapped = parse_ip("::ffff:10.0.0.7");
  REQUIRE(mapped);
  CHECK(mapped->v4);
}

TEST_CASE("ip_range: CIDR membership", "[ip_range]") {
  CHECK(in("10.0.0.0/8", "10.200.1.1:1"));
  CHECK_FALSE(in("10.0.0.0/8", "11.0.0.1:1"));
  CHECK(in("192.168.1.5", "192.168.1.5:99"));
  CHECK_FALSE(in("192.168.1.5", "192.168.1.6:99"));
  CHECK(in("10.0.0.0/8, 192.168.0.0/16 ::1", "[::1]:80"));
  CHECK(in("2001:db8::/32", "[2001:db8:ffff::1]:443"));
  CHECK_FALSE(in("2001:db8::/32", "[2001:db9::1]:443"));
  CHECK(in("0.0.0.0/0", "8.8.8.8:53"));
  CHECK_FALSE(in("0.0.0.0/0", "[::2]:53"));  // families never mix
  CHECK(in("10.0.0.0/8", "[::ffff:10.9.9.9]:1"));
  CHECK(in("::ffff:10.0.0.0/104", "10.3.4.5:1"));
  CHECK(in("10.0.0.1/8", "10.9.9.9:1"));  // host bits past the prefix are ignored
}

TEST_CASE("ip_range: bad ranges are named", "[ip_range]") {
  CHECK_THROWS_WITH(parse_ranges("10.0.0.0/8 example.com"), Catch::Contains("'example.com'"));
  CHECK_THROWS(parse_ranges("10.0.0.0/33"));
  CHECK_THROWS(parse_ranges("::/129"));
  CHECK_THROWS(parse_ranges("10.0.0.0/"));
  CHECK_THROWS(parse_ranges("10.0.0.0/-1"));
  CHECK(parse_ranges("  ").empty());
}

}  // namespace unit_ip_range

TEST_CASE("is_loopback_host: the Host header of a loopback listener", "[ip_range]") {
  for (const char* ok : {"127.0.0.1:8787", "127.1.2.3", "localhost:1", "[::1]:8787", "localhost"})
    CHECK(idem::net::is_loopback_host(ok));
  for (const char* bad :
       {"evil.com", "127.0.0.1.evil.com:80", "[::2]:1", "128.0.0.1", "", "127.x.0.1"})
    CHECK_FALSE(idem::net::is_loopback_host(bad));
}
