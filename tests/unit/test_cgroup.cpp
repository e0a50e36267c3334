// What proc/cgroup.cpp reads from /proc (mountinfo, a process's cgroup) and which cgroups it will
// act on: texts as the kernel writes them, on a pure-v2 host, a hybrid one and in a container.
#include <catch2/catch.hpp>

#include "proc/cgroup.hpp"

namespace unit_cgroup {

using idem::proc::cgroup2_mount_of;
using idem::proc::is_attempt_cgroup;
using idem::proc::unified_cgroup_of;

TEST_CASE("cgroup: the cgroup2 mount is found in mountinfo, escapes and optional fields too",
          "[cgroup]") {
  // Debian 12 with systemd: the unified hierarchy alone, with optional fields before the dash.
  const char* pure =
      "22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
      "26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
      "rw,nsdelegate,memory_recursiveprot\n";
  auto m = cgroup2_mount_of(pure);
  REQUIRE(m);
  CHECK(m->point == "/sys/fs/cgroup");
  CHECK(m->root == "/");
  // A hybrid host: v1 controllers first, the unified one under them; no optional fields.
  const char* hybrid =
      "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "31 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  m = cgroup2_mount_of(hybrid);
  REQUIRE(m);
  CHECK(m->point == "/sys/fs/cgroup/unified");
  // A space in a mount point is \040; a part of the tree bind-mounted shows its root.
  m = cgroup2_mount_of("40 1 0:30 /lxc/c1 /mnt/my\\040cg rw - cgroup2 none rw\n");
  REQUIRE(m);
  CHECK(m->point == "/mnt/my cg");
  CHECK(m->root == "/lxc/c1");
  // None, or a line cut short.
  CHECK_FALSE(cgroup2_mount_of("30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw\n"));
  CHECK_FALSE(cgroup2_mount_of("31 25 0:27 / /x rw cgroup2"));
  CHECK_FALSE(cgroup2_mount_of(""));
}

TEST_CASE("cgroup: a process's unified path is its 0:: line", "[cgroup]") {
  CHECK(unified_cgroup_of("0::/user.slice/user-0.slice/session-1.scope\n") ==
        "/user.slice/user-0.slice/session-1.scope");
  CHECK(unified_cgroup_of("9:name=systemd:/\n4:memory:/x\n0::/\n") == "/");
  CHECK_FALSE(unified_cgroup_of("4:memory:/x\n1:cpu:/\n"));  // v1 only
  CHECK_FALSE(unified_cgroup_of("0::\n"));
}

TEST_CASE("cgroup: only a cgroup named for the record's own owner is acted on", "[cgroup]") {
  using idem::proc::is_owned_cgroup;
  CHECK(idem::proc::owned_cgroup_name(4242, 777, 3) == "idem-4242-777-3");
  CHECK(is_owned_cgroup("/idem-4242-777-3", 4242, 777));
  CHECK(is_owned_cgroup("/system.slice/cron.service/idem-4242-777-12", 4242, 777));
  // Another owner's (its pid, or a pid reused by a younger process), unnumbered, or not a path.
  CHECK_FALSE(is_owned_cgroup("/idem-4242-778-3", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("/idem-14242-777-3", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("/x/idem-4242-7771-3", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("/idem-4242-777-", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("/idem-4242-777", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("/idem-4242-777-3x", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("/idem-4242-777-3/x", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("/x/../idem-4242-777-3", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("idem-4242-777-3", 4242, 777));
  CHECK_FALSE(is_owned_cgroup("", 4242, 777));
  // A group's name is not an owner's, nor the other way round.
  CHECK_FALSE(is_attempt_cgroup("/idem-4242-777-3", 4242, 777));
}

TEST_CASE("cgroup: only a cgroup named for the record's own group is acted on", "[cgroup]") {
  CHECK(idem::proc::attempt_cgroup_name(4242, 777) == "idem-4242-777");
  CHECK(is_attempt_cgroup("/idem-4242-777", 4242, 777));
  CHECK(is_attempt_cgroup("/system.slice/cron.service/idem-4242-777", 4242, 777));
  // Another group's, a cgroup of the system, a path that climbs, or none at all.
  CHECK_FALSE(is_attempt_cgroup("/idem-4242-778", 4242, 777));
  CHECK_FALSE(is_attempt_cgroup("/system.slice", 4242, 777));
  CHECK_FALSE(is_attempt_cgroup("/", 4242, 777));
  CHECK_FALSE(is_attempt_cgroup("/x/../idem-4242-777", 4242, 777));
  CHECK_FALSE(is_attempt_cgroup("/x/idem-14242-777", 4242, 777));
  CHECK_FALSE(is_attempt_cgroup("idem-4242-777", 4242, 777));
  CHECK_FALSE(is_attempt_cgroup("", 4242, 777));
}

}  // namespace unit_cgroup
