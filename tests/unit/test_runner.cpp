// The runner and owner liveness against real processes: the process group is handed to on_spawn
// before the command runs, and a recorded group is alive while any of its members is.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/record.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"

using idem::core::Owner;
using idem::core::ProcessGroup;
using idem::proc::describe_owner;
using idem::proc::kill_process_group;
using idem::proc::process_group_alive;
using idem::proc::run_command;
using idem::proc::RunSpec;
using idem::test::TempDir;

namespace {

bool exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

int64_t read_pid(const std::string& path) {
  std::ifstream in(path);
  int64_t pid = 0;
  in >> pid;
  return pid;
}

RunSpec quiet(std::vector<std::string> argv) {
  RunSpec spec;
  spec.argv = std::move(argv);
  spec.live_stdout_fd = -1;
  spec.live_stderr_fd = -1;
  return spec;
}

}  // namespace

TEST_CASE("runner: on_spawn gets the command's group before the command runs", "[runner]") {
  TempDir dir;
  const std::string marker = dir / "ran";
  RunSpec spec = quiet({"sh", "-c", "echo $$ > \"$0\"", marker});
  ProcessGroup seen;
  bool ran_before = true;
  spec.on_spawn = [&](const ProcessGroup& group) {
    seen = group;
    ran_before = exists(marker);
  };
  auto result = run_command(spec);
  REQUIRE(result.started);
  CHECK(result.exit_code == 0);
  CHECK_FALSE(ran_before);
  CHECK(seen.pgid == read_pid(marker));  // the command leads its own group
  CHECK(seen.leader_start_ticks > 0);
}

TEST_CASE("runner: a failing on_spawn stops the command before it runs", "[runner]") {
  TempDir dir;
  const std::string marker = dir / "ran";
  RunSpec spec = quiet({"sh", "-c", ": > \"$0\"", marker});
  spec.on_spawn = [](const ProcessGroup&) { throw std::runtime_error("store is gone"); };
  CHECK_THROWS_AS(run_command(spec), std::runtime_error);
  CHECK_FALSE(exists(marker));
}

TEST_CASE("liveness: a group is alive while a member outlives its leader", "[liveness]") {
  TempDir dir;
  const std::string child = dir / "child";
  // The leader exits at once; its background child stays in the group.
  RunSpec spec = quiet({"sh", "-c", "sleep 1000 & echo $! > \"$0\"", child});
  ProcessGroup group;
  spec.on_spawn = [&](const ProcessGroup& g) { group = g; };
  REQUIRE(run_command(spec).exit_code == 0);
  const Owner me = describe_owner();
  REQUIRE(read_pid(child) > 0);
  CHECK(process_group_alive(me, group));

  // Not this boot, not this host, no group: nothing to look at.
  Owner rebooted = me;
  rebooted.boot_id = "another-boot";
  CHECK_FALSE(process_group_alive(rebooted, group));
  Owner elsewhere = me;
  elsewhere.host = "another-host";
  CHECK_FALSE(process_group_alive(elsewhere, group));
  CHECK_FALSE(process_group_alive(me, ProcessGroup{}));

  CHECK(kill_process_group(me, group, 2000));
  CHECK_FALSE(process_group_alive(me, group));
}

TEST_CASE("liveness: a leader pid now held by a younger process means the group is gone",
          "[liveness]") {
  const Owner me = describe_owner();
  const int64_t self = ::getpid();
  // This test process stands in for a process that reused the leader's pid: other start time.
  const ProcessGroup reused{self, idem::proc::start_ticks(pid_t(self)) + 1};
  CHECK_FALSE(process_group_alive(me, reused));
}

TEST_CASE("liveness: kill_process_group KILLs a member that ignores TERM", "[liveness]") {
  TempDir dir;
  const std::string child = dir / "child";
  RunSpec spec = quiet({"sh", "-c", "trap '' TERM; sleep 1000 & echo $! > \"$0\"", child});
  ProcessGroup group;
  spec.on_spawn = [&](const ProcessGroup& g) { group = g; };
  REQUIRE(run_command(spec).exit_code == 0);
  const Owner me = describe_owner();
  REQUIRE(process_group_alive(me, group));
  CHECK(kill_process_group(me, group, 100));
  CHECK_FALSE(process_group_alive(me, group));
}

TEST_CASE("store: set_process_group is conditioned on the current running attempt",
          "[store][runner]") {
  TempDir dir;
  auto store = idem::store::open_sqlite_store(dir / "idem.db");
  idem::store::ClaimRequest req;
  req.key = "k";
  req.fingerprint = std::string(64, 'a');
  req.owner = Owner{"host-a", "boot-1", 100, 1100};
  req.ttl_ms = 1000;
  req.now_ms = 1'790'000'000'000;
  const idem::store::OwnerGone gone = [](const Owner&) { return true; };
  REQUIRE(store->claim(req, gone).attempt == 1);
  CHECK(store->get("k")->process_group.pgid == 0);
  CHECK(store->set_process_group("k", 1, ProcessGroup{4321, 777}));
  auto r = store->get("k");
  CHECK(r->process_group.pgid == 4321);
  CHECK(r->process_group.leader_start_ticks == 777);
  CHECK_FALSE(store->set_process_group("k", 2, ProcessGroup{1, 1}));
  CHECK_FALSE(store->set_process_group("other", 1, ProcessGroup{1, 1}));
  CHECK(store->get("k")->process_group.pgid == 4321);

  // Abandoned, then retried: the new attempt starts with no group until its command spawns.
  req.policy.retry_abandoned = true;
  REQUIRE(store->claim(req, gone).attempt == 2);
  CHECK(store->get("k")->process_group.pgid == 0);
  CHECK_FALSE(store->set_process_group("k", 1, ProcessGroup{9, 9}));

  idem::core::Outcome done;
  done.status = idem::core::Status::succeeded;
  done.finished_ms = req.now_ms + 1;
  REQUIRE(store->finish("k", 2, done));
  CHECK_FALSE(store->set_process_group("k", 2, ProcessGroup{9, 9}));
}

TEST_CASE("liveness: reading a process that exits meanwhile never throws", "[liveness]") {
  // Reading /proc/PID/stat of a process reaped between open and read fails with ESRCH; that
  // means "gone", not an error. A thread reaps each child while this one keeps reading it.
  const Owner me = describe_owner();
  for (int i = 0; i < 500; ++i) {
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) _exit(0);
    std::thread reaper([child] {
      int status = 0;
      ::waitpid(child, &status, 0);
    });
    bool threw = false;
    for (int j = 0; j < 200 && !threw; ++j) {
      try {
        if (idem::proc::start_ticks(child) == 0) break;
        process_group_alive(me, ProcessGroup{child, 0});
      } catch (...) {
        threw = true;
      }
    }
    reaper.join();
    CHECK_FALSE(threw);
  }
}
