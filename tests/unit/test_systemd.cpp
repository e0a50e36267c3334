// The service manager's protocols (serve/systemd.hpp): which passed descriptors are ours, their
// names, and the reload notification.
#include <catch2/catch.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "serve/systemd.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_systemd {

using idem::serve::passed_fd_names;
using Names = std::vector<std::string>;

TEST_CASE("systemd: passed descriptors are counted and named", "[systemd]") {
  const std::nullopt_t none = std::nullopt;
  CHECK(passed_fd_names(none, none, none, 42).empty());
  CHECK(passed_fd_names(std::string("42"), none, none, 42).empty());
  CHECK(passed_fd_names(std::string("42"), std::string("2"), none, 42) ==
        Names{"unknown", "unknown"});
  CHECK(passed_fd_names(std::string("42"), std::string("2"), std::string("http:ledger"), 42) ==
        Names{"http", "ledger"});
  CHECK(passed_fd_names(std::string("42"), std::string("0"), none, 42).empty());
  // Meant for another process: a parent's, inherited through its environment.
  CHECK(passed_fd_names(std::string("41"), std::string("1"), none, 42).empty());
}

TEST_CASE("systemd: values that cannot be read are refused", "[systemd]") {
  CHECK_THROWS_WITH(passed_fd_names(std::string("x"), std::string("1"), std::nullopt, 42),
                    "LISTEN_PID=x is not a process id");
  CHECK_THROWS_WITH(passed_fd_names(std::string("42"), std::string("-1"), std::nullopt, 42),
                    "LISTEN_FDS=-1 is not a count of descriptors");
  CHECK_THROWS_WITH(passed_fd_names(std::string("42"), std::string("99999"), std::nullopt, 42),
                    "LISTEN_FDS=99999 is not a count of descriptors");
  CHECK_THROWS_WITH(passed_fd_names(std::string("42"), std::string("2"), std::string("http"), 42),
                    "LISTEN_FDNAMES has 1 names for LISTEN_FDS=2");
}

TEST_CASE("systemd: the reload notification carries the monotonic time", "[systemd]") {
  CHECK(idem::serve::reloading_state(1234567) == "RELOADING=1\nMONOTONIC_USEC=1234567");
}

}  // namespace unit_systemd
