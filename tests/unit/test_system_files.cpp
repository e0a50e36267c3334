// /etc/passwd and /etc/hosts read without NSS (util/system_files.hpp), and what net/resolve.hpp
// makes of them.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "net/resolve.hpp"
#include "temp_dir.hpp"
#include "util/system_files.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_system_files {

using idem::util::hosts_addresses;
using idem::util::passwd_home;

std::string write(const idem::test::TempDir& dir, const std::string& name,
                  const std::string& text) {
  const std::string path = dir / name;
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("passwd_home: the first entry of the uid, an absolute home only", "[system_files]") {
  idem::test::TempDir dir;
  const std::string path = write(dir, "passwd",
                                 "root:x:0:0:root:/root:/bin/bash\n"
                                 "# a comment line is no entry\n"
                                 "short:x:7\n"
                                 "u:x:1000:1000:U,,,:/home/u:/bin/sh\n"
                                 "again:x:1000:1000::/home/again:/bin/sh\n"
                                 "rel:x:1001:1001::relative:/bin/sh\n"
                                 "empty:x:1002:1002:::/bin/sh\n"
                                 "nl:x:1003:1003::/home/nl");  // no final newline
  CHECK(passwd_home(0, path) == "/root");
  CHECK(passwd_home(1000, path) == "/home/u");
  CHECK(passwd_home(1001, path) == std::nullopt);
  CHECK(passwd_home(1002, path) == std::nullopt);
  CHECK(passwd_home(1003, path) == "/home/nl");
  CHECK(passwd_home(7, path) == std::nullopt);
  CHECK(passwd_home(4242, path) == std::nullopt);
  CHECK(passwd_home(0, dir / "missing") == std::nullopt);
  // A uid field that only starts with the number is another entry.
  CHECK(passwd_home(10, write(dir, "p2", "a:x:10x:0::/home/a:/bin/sh\n")) == std::nullopt);
  // An overlong line is skipped whole, and the next line still read.
  CHECK(passwd_home(5, write(dir, "p3",
                             "long:x:5:5::/" + std::string(100000, 'a') + ":/bin/sh\n" +
                                 "five:x:5:5::/home/five:/bin/sh\n")) == "/home/five");
}

TEST_CASE("hosts_addresses: every line naming the host, in order, without case", "[system_files]") {
  idem::test::TempDir dir;
  const std::string path = write(dir, "hosts",
                                 "127.0.0.1\tlocalhost\n"
                                 "::1     localhost ip6-localhost  # both\n"
                                 "# 10.0.0.9 vm\n"
                                 "127.0.1.1 vm.example vm\n"
                                 "10.0.0.1 far #vm\n"
                                 "  \n");
  CHECK(hosts_addresses("localhost", path) == std::vector<std::string>{"127.0.0.1", "::1"});
  CHECK(hosts_addresses("VM", path) == std::vector<std::string>{"127.0.1.1"});
  CHECK(hosts_addresses("far", path) == std::vector<std::string>{"10.0.0.1"});
  CHECK(hosts_addresses("127.0.0.1", path).empty());  // an address is no name
  CHECK(hosts_addresses("v", path).empty());
  CHECK(hosts_addresses("", path).empty());
  CHECK(hosts_addresses("vm", dir / "missing").empty());
}

TEST_CASE("resolve: numeric addresses and localhost without a resolver", "[system_files]") {
  using idem::net::names_only_loopback;
  using idem::net::resolve_host;
  CHECK(names_only_loopback("127.0.0.1"));
  CHECK(names_only_loopback("127.8.9.10"));
  CHECK(names_only_loopback("::1"));
  CHECK(names_only_loopback("localhost"));
  CHECK_FALSE(names_only_loopback("10.0.0.1"));
  CHECK_FALSE(names_only_loopback("0.0.0.0"));
  CHECK_FALSE(names_only_loopback("127.0.0.1.example"));
  CHECK_FALSE(names_only_loopback("::"));
  const idem::net::Resolved v6 = resolve_host("::1", 8787);
  REQUIRE(v6.addresses.size() == 1);
  CHECK(v6.addresses[0].storage.ss_family == AF_INET6);
  CHECK(idem::net::host_port("::1", 8787) == "[::1]:8787");
  CHECK(idem::net::host_port("127.0.0.1", 8787) == "127.0.0.1:8787");
  CHECK(idem::net::host_port("vm", 0) == "vm:0");
}

}  // namespace unit_system_files
