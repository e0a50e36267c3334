// The runner and owner liveness against real processes: the process group is handed to on_spawn
// before the command runs, and a recorded group is alive while any of its members is.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/record.hpp"
#include "proc/child_exec.hpp"
#include "proc/liveness.hpp"
#include "proc/runner.hpp"
#include "skip.hpp"
#include "store/store.hpp"
#include "temp_dir.hpp"
#include "util/fd.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_runner {

using idem::core::Owner;
using idem::core::ProcessGroup;
using idem::proc::describe_owner;
using idem::proc::GroupLook;
using idem::proc::kill_process_group;
using idem::proc::look_at_group;
using idem::proc::process_group_alive;
using idem::proc::run_command;
using idem::proc::RunSpec;
using idem::test::TempDir;

namespace {

bool exists(const std::string& path) {
  struct stat st {};
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

// Runs `sh -c SCRIPT CHILD_FILE` (a leader that leaves a child behind in its group, the child's
// pid written to CHILD_FILE) and returns the group.
// `mark`: the IDEM_ATTEMPT_MARK its processes carry (none when empty).
ProcessGroup left_behind(const std::string& script, const std::string& child_file,
                         const std::string& mark = "") {
  RunSpec spec = quiet({"sh", "-c", script, child_file});
  if (!mark.empty()) spec.extra_env.emplace_back(idem::core::k_attempt_mark_env, mark);
  ProcessGroup group;
  spec.on_spawn = [&](const ProcessGroup& g) { group = g; };
  REQUIRE(run_command(spec).exit_code == 0);
  return group;
}

// A machine id other than this host's.
std::string other_machine_id(const Owner& me) {
  return std::string(32, !me.machine_id.empty() && me.machine_id[0] == 'f' ? 'e' : 'f');
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

TEST_CASE("runner: meanwhile runs once while the command runs, and not when it did not start",
          "[runner]") {
  TempDir dir;
  const std::string go = dir / "go";
  // The command waits for meanwhile's file: it is running when meanwhile is called.
  RunSpec spec = quiet({"sh", "-c", "while [ ! -e \"$0\" ]; do :; done", go});
  spec.timeout_ms = 60000;  // without meanwhile's file, a failure rather than a hang
  int calls = 0;
  spec.meanwhile = [&] {
    ++calls;
    std::ofstream(go).close();
  };
  auto result = run_command(spec);
  CHECK(result.exit_code == 0);
  CHECK(calls == 1);
  RunSpec missing = quiet({dir / "no-such-command"});
  missing.meanwhile = [&] { ++calls; };
  CHECK_FALSE(run_command(missing).started);
  CHECK(calls == 1);
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
  const std::string mark = idem::core::attempt_mark("k", 1, describe_owner());
  const ProcessGroup group = left_behind("sleep 1000 & echo $! > \"$0\"", child, mark);
  const Owner me = describe_owner();
  REQUIRE(read_pid(child) > 0);
  CHECK(look_at_group(me, group, mark) == GroupLook::ours);
  CHECK(process_group_alive(me, group, mark));

  // Not this boot, not this host, no group: nothing to look at.
  Owner rebooted = me;
  rebooted.boot_id = "another-boot";
  CHECK_FALSE(process_group_alive(rebooted, group, mark));
  Owner elsewhere = me;
  elsewhere.host = "another-host";
  if (!me.machine_id.empty()) elsewhere.machine_id = other_machine_id(me);
  CHECK_FALSE(process_group_alive(elsewhere, group, mark));
  CHECK_FALSE(process_group_alive(me, ProcessGroup{}, mark));

  CHECK(kill_process_group(me, group, mark, 2000));
  CHECK_FALSE(process_group_alive(me, group, mark));
  CHECK(look_at_group(me, group, mark) == GroupLook::empty);
}

// The recorded group emptied and its number now names another group whose leader is gone too
// (pid reuse): its members carry another mark, or none. Killing them was the bug.
TEST_CASE("liveness: a group of the recorded number whose members lack the mark is not killed",
          "[liveness]") {
  TempDir dir;
  const std::string child = dir / "child";
  const Owner me = describe_owner();
  const std::string mark = idem::core::attempt_mark("k", 2, me);
  for (const std::string& other : {std::string(), idem::core::attempt_mark("other", 1, me)}) {
    const ProcessGroup group = left_behind("sleep 1000 & echo $! > \"$0\"", child, other);
    const pid_t member = read_pid(child);
    REQUIRE(member > 0);
    CHECK(look_at_group(me, group, mark) == GroupLook::unproven);
    CHECK_FALSE(process_group_alive(me, group, mark));
    CHECK(kill_process_group(me, group, mark, 100));  // left alone, nothing to wait for
    CHECK(::kill(member, 0) == 0);                    // still alive
    // Its own mark proves it: then it is stopped.
    if (!other.empty()) CHECK(kill_process_group(me, group, other, 2000));
    ::kill(member, SIGKILL);
    ::waitpid(member, nullptr, WNOHANG);
  }
}

// The leader of the recorded start time proves the group without any mark (a group recorded
// before marks were given, whose command still runs).
TEST_CASE("liveness: a live leader of the recorded start time proves its group", "[liveness]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  idem::util::Fd read_end(fds[0]), write_end(fds[1]);
  // The command waits for its stdin to end: it lives while this test looks.
  RunSpec spec = quiet({"sh", "-c", "read x"});
  spec.stdin_fd = read_end.get();
  const Owner me = describe_owner();
  GroupLook seen = GroupLook::empty, seen_younger = GroupLook::ours;
  spec.on_spawn = [&](const ProcessGroup& group) {
    seen = look_at_group(me, group, "no-such-mark");
    ProcessGroup younger = group;
    younger.leader_start_ticks += 1;  // another process of that pid: the recorded group emptied
    seen_younger = look_at_group(me, younger, "no-such-mark");
    write_end.reset();
  };
  run_command(spec);
  CHECK(seen == GroupLook::ours);
  CHECK(seen_younger == GroupLook::empty);
}

TEST_CASE("liveness: an owner is described by machine id, boot, pid namespace, pid and start",
          "[liveness]") {
  const Owner me = describe_owner();
  CHECK(me.pid == ::getpid());
  CHECK(me.start_ticks == idem::proc::start_ticks(::getpid()));
  struct stat ns {};
  REQUIRE(::stat("/proc/self/ns/pid", &ns) == 0);
  CHECK(me.pid_ns == int64_t(ns.st_ino));
  std::ifstream in("/etc/machine-id");
  std::string id;
  std::getline(in, id);
  CHECK(me.machine_id == (id.size() == 32 ? id : std::string()));
}

TEST_CASE("liveness: a dead pid is judged only on its own machine, boot and pid namespace",
          "[liveness]") {
  // A child that has exited and been reaped: its pid is gone (and not reused this soon).
  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char c;
    ::close(gate[1]);
    (void)!::read(gate[0], &c, 1);
    ::_exit(0);
  }
  ::close(gate[0]);
  Owner dead = describe_owner(child);
  ::close(gate[1]);
  REQUIRE(::waitpid(child, nullptr, 0) == child);
  REQUIRE(dead.start_ticks > 0);
  const Owner me = describe_owner();
  CHECK(idem::proc::owner_gone(dead));
  CHECK_FALSE(idem::proc::owner_gone(me));

  // Another pid namespace (a container on this kernel): its pids are not this one's.
  Owner container = dead;
  container.pid_ns = dead.pid_ns + 1;
  CHECK_FALSE(idem::proc::owner_gone(container));
  // Recorded before namespaces were: which namespace the pid was in is unknown.
  Owner old_record = dead;
  old_record.pid_ns = 0;
  old_record.machine_id.clear();
  CHECK_FALSE(idem::proc::owner_gone(old_record));
  // Without a machine id (none on the owner's host) the host name stands in for it.
  Owner no_id = dead;
  no_id.machine_id.clear();
  CHECK(idem::proc::owner_gone(no_id));
  no_id.host = "another-host";
  CHECK_FALSE(idem::proc::owner_gone(no_id));
  // Another boot of this machine: it rebooted since, so the owner is gone; an old record is
  // known by its host name.
  Owner rebooted = dead;
  rebooted.boot_id = "another-boot";
  CHECK(idem::proc::owner_gone(rebooted));
  old_record.boot_id = "another-boot";
  CHECK(idem::proc::owner_gone(old_record));
  if (!me.machine_id.empty()) {
    // A twin of this host's name and boot id (a clone): another machine id is another host,
    // whose pids and boots this one cannot judge.
    Owner twin = dead;
    twin.machine_id = other_machine_id(me);
    CHECK_FALSE(idem::proc::owner_gone(twin));
    twin.boot_id = "another-boot";
    CHECK_FALSE(idem::proc::owner_gone(twin));
  }
}

TEST_CASE("liveness: a group of another pid namespace is not looked at", "[liveness]") {
  TempDir dir;
  const std::string mark = "m";
  const ProcessGroup group = left_behind("sleep 1000 & echo $! > \"$0\"", dir / "child", mark);
  const Owner me = describe_owner();
  REQUIRE(process_group_alive(me, group, mark));
  Owner container = me;
  container.pid_ns = me.pid_ns + 1;
  CHECK_FALSE(process_group_alive(container, group, mark));
  // A record from before namespaces were recorded is looked at as then: alive only delays.
  Owner old_record = me;
  old_record.pid_ns = 0;
  old_record.machine_id.clear();
  CHECK(process_group_alive(old_record, group, mark));
  if (!me.machine_id.empty()) {
    Owner twin = me;
    twin.machine_id = other_machine_id(me);
    CHECK_FALSE(process_group_alive(twin, group, mark));
  }
  CHECK(kill_process_group(me, group, mark, 2000));
}

TEST_CASE("liveness: a leader pid now held by a younger process means the group is gone",
          "[liveness]") {
  const Owner me = describe_owner();
  const int64_t self = ::getpid();
  // This test process stands in for a process that reused the leader's pid: other start time.
  const ProcessGroup reused{self, idem::proc::start_ticks(pid_t(self)) + 1};
  CHECK_FALSE(process_group_alive(me, reused, ""));
}

TEST_CASE("liveness: kill_process_group KILLs a member that ignores TERM", "[liveness]") {
  TempDir dir;
  const ProcessGroup group =
      left_behind("trap '' TERM; sleep 1000 & echo $! > \"$0\"", dir / "child", "m");
  const Owner me = describe_owner();
  REQUIRE(process_group_alive(me, group, "m"));
  CHECK(kill_process_group(me, group, "m", 100));
  CHECK_FALSE(process_group_alive(me, group, "m"));
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
        process_group_alive(me, ProcessGroup{child, 0}, "");
      } catch (...) {
        threw = true;
      }
    }
    reaper.join();
    CHECK_FALSE(threw);
  }
}

// How a command starts: a child created with clone(CLONE_VM) that waits for the go byte and
// execs the command itself (proc/child_exec.cpp).
namespace {

// Gone, or a zombie nobody reaped yet.
bool exited(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');
  return paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
}

std::string read_link(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// The "Name:\t<hex>" line of /proc/self/status the command printed.
std::string status_line(const std::string& status, const std::string& name) {
  auto at = status.find("\n" + name + ":\t");
  if (at == std::string::npos) return "";
  at += name.size() + 3;
  return status.substr(at, status.find('\n', at) - at);
}

}  // namespace

TEST_CASE("runner: the group is recorded before the command runs", "[runner]") {
  TempDir dir;
  const std::string marker = dir / "ran";
  RunSpec spec =
      quiet({"sh", "-c", "echo $$ > \"$0\"; ps -o pgid= -p $$ | tr -d ' ' >> \"$0\"", marker});
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
  std::ifstream in(marker);
  int64_t pid = 0, pgid = 0;
  in >> pid >> pgid;
  CHECK(seen.pgid == pid);
  CHECK(pgid == pid);  // the command leads its own group
  CHECK(pgid != ::getpgrp());
  CHECK(seen.leader_start_ticks > 0);
}

TEST_CASE("runner: a group that cannot be recorded: the waiting child is killed and reaped",
          "[runner]") {
  TempDir dir;
  const std::string marker = dir / "ran";
  RunSpec spec = quiet({"sh", "-c", ": > \"$0\"", marker});
  ProcessGroup seen;
  bool waiting = false;
  spec.on_spawn = [&](const ProcessGroup& group) {
    seen = group;
    // The child exists, leads its group, and has not exec'd: it waits for the go byte.
    waiting =
        ::kill(-pid_t(group.pgid), 0) == 0 &&
        read_link("/proc/" + std::to_string(group.pgid) + "/exe") == read_link("/proc/self/exe");
    throw std::runtime_error("store is gone");
  };
  CHECK_THROWS_AS(run_command(spec), std::runtime_error);
  CHECK(waiting);
  CHECK_FALSE(exists(marker));
  CHECK(::waitpid(pid_t(seen.pgid), nullptr, WNOHANG) < 0);  // reaped already
  CHECK(errno == ECHILD);
}

TEST_CASE("runner: PATH lookup as execvpe: EACCES wins, a file without #! runs under sh",
          "[runner]") {
  TempDir dir;
  const std::string denied = dir / "denied", later = dir / "later";
  ::mkdir(denied.c_str(), 0755);
  ::mkdir(later.c_str(), 0755);
  const char* saved = ::getenv("PATH");
  const std::string old_path = saved != nullptr ? saved : "";
  // A file that is not executable in the first folder, nothing in the second: EACCES.
  std::ofstream(denied + "/idem-path-probe") << "echo denied\n";
  ::setenv("PATH", (denied + ":" + later + ":" + old_path).c_str(), 1);
  auto refused = run_command(quiet({"idem-path-probe"}));
  CHECK_FALSE(refused.started);
  CHECK(refused.exec_errno == EACCES);
  // An executable one further on runs; without a '#!' line it runs under /bin/sh, with its
  // arguments.
  std::ofstream(later + "/idem-path-probe") << "echo \"ran as script: $0 $1\"\n";
  ::chmod((later + "/idem-path-probe").c_str(), 0755);
  auto ran = run_command(quiet({"idem-path-probe", "arg"}));
  ::setenv("PATH", old_path.c_str(), 1);
  REQUIRE(ran.started);
  CHECK(ran.exit_code == 0);
  CHECK(ran.output.stream_bytes(idem::core::Stream::out) ==
        "ran as script: " + later + "/idem-path-probe arg\n");
}

TEST_CASE("runner: ignored signals idem inherited stay ignored, its own are reset", "[runner]") {
  // SIGQUIT is one idem resets even when ignored; SIGUSR2 is left as idem found it, as a plain
  // exec would; SIGUSR1 has a handler here, which a command can never inherit.
  struct sigaction ignore {
  }, handler{}, old_quit{}, old_usr1{}, old_usr2{};
  ignore.sa_handler = SIG_IGN;
  handler.sa_handler = [](int) {};
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  ::sigaction(SIGUSR2, &ignore, &old_usr2);
  ::sigaction(SIGUSR1, &handler, &old_usr1);
  auto result = run_command(quiet({"cat", "/proc/self/status"}));
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  ::sigaction(SIGUSR2, &old_usr2, nullptr);
  ::sigaction(SIGUSR1, &old_usr1, nullptr);
  REQUIRE(result.exit_code == 0);
  const std::string out = result.output.stream_bytes(idem::core::Stream::out);
  char expected[17];
  std::snprintf(expected, sizeof expected, "%016llx", 1ULL << (SIGUSR2 - 1));
  CHECK(status_line(out, "SigIgn") == expected);
  CHECK(status_line(out, "SigBlk") == "0000000000000000");
}

TEST_CASE("runner: commands started from many threads at once", "[runner]") {
  // Each thread has its own child stack; every child waits on its own go byte while its thread
  // records the group.
  constexpr int k_threads = 6, k_each = 15;
  std::vector<std::thread> threads;
  std::vector<int> ok(k_threads, 0);
  for (int t = 0; t < k_threads; ++t)
    threads.emplace_back([t, &ok] {
      for (int i = 0; i < k_each; ++i) {
        const std::string word = std::to_string(t) + "-" + std::to_string(i);
        RunSpec spec = quiet({"echo", word});
        bool recorded = false;
        spec.on_spawn = [&](const ProcessGroup& g) { recorded = g.pgid > 0; };
        auto result = run_command(spec);
        if (recorded && result.exit_code == 0 &&
            result.output.stream_bytes(idem::core::Stream::out) == word + "\n")
          ++ok[size_t(t)];
      }
    });
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < k_threads; ++t) CHECK(ok[size_t(t)] == k_each);
}

TEST_CASE("runner: exec errors come back as errno and 127/126", "[runner]") {
  TempDir dir;
  auto missing = run_command(quiet({dir / "no-such-command"}));
  CHECK_FALSE(missing.started);
  CHECK(missing.exec_errno == ENOENT);
  CHECK(idem::proc::exit_code_for(missing) == 127);
  CHECK(idem::proc::outcome_of(missing, 1).note == "could not start: No such file or directory");

  auto not_on_path = run_command(quiet({"idem-no-such-command-on-path"}));
  CHECK(not_on_path.exec_errno == ENOENT);

  const std::string plain = dir / "plain";
  std::ofstream(plain) << "#!/bin/sh\necho ran\n";
  auto not_executable = run_command(quiet({plain}));
  CHECK_FALSE(not_executable.started);
  CHECK(not_executable.exec_errno == EACCES);
  CHECK(idem::proc::exit_code_for(not_executable) == 126);
}

TEST_CASE("runner: the command gets default signals, an empty mask, its env and stdin",
          "[runner]") {
  // As in the daemon: INT/TERM/HUP blocked in the calling thread, SIGPIPE ignored.
  idem::proc::install_child_handlers();
  sigset_t blocked, before;
  sigemptyset(&blocked);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&blocked, sig);
  pthread_sigmask(SIG_BLOCK, &blocked, &before);
  TempDir dir;
  const std::string input = dir / "in";
  std::ofstream(input) << "from stdin";
  int in_fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(in_fd >= 0);
  RunSpec spec =
      quiet({"sh", "-c", "cat /proc/self/status; printf '%s|' \"$EXTRA\" \"${GONE-unset}\"; cat"});
  spec.extra_env = {{"EXTRA", "given"}};
  ::setenv("GONE", "secret", 1);
  spec.unset_env = {"GONE"};
  spec.stdin_fd = in_fd;
  auto result = run_command(spec);
  ::close(in_fd);
  ::unsetenv("GONE");
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  REQUIRE(result.exit_code == 0);
  const std::string out = result.output.stream_bytes(idem::core::Stream::out);
  CHECK(status_line(out, "SigBlk") == "0000000000000000");
  CHECK(status_line(out, "SigIgn") == "0000000000000000");
  CHECK(out.substr(out.rfind('\n') + 1) == "given|unset|from stdin");
}

TEST_CASE("runner: the command dies with the thread that started it (PDEATHSIG)", "[runner]") {
  // A child process stands in for idem: it runs a long command, and is killed with SIGKILL.
  TempDir dir;
  const std::string pid_file = dir / "pid";
  pid_t idem = ::fork();
  REQUIRE(idem >= 0);
  if (idem == 0) {
    RunSpec spec = quiet({"sh", "-c", "echo $$ > \"$0\"; exec sleep 1000", pid_file});
    run_command(spec);
    _exit(0);
  }
  int64_t command = 0;
  for (int i = 0; i < 1000 && command == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    command = read_pid(pid_file);
  }
  REQUIRE(command > 0);
  ::kill(idem, SIGKILL);
  ::waitpid(idem, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 1000 && !gone; ++i) {
    gone = exited(command);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(gone);
}

TEST_CASE("runner: the command runs in its working directory", "[runner]") {
  TempDir dir;
  RunSpec spec = quiet({"sh", "-c", "pwd -P"});
  spec.cwd = dir.path();
  auto result = run_command(spec);
  REQUIRE(result.exit_code == 0);
  char real[4096];
  REQUIRE(::realpath(dir.path().c_str(), real) != nullptr);
  CHECK(result.output.stream_bytes(idem::core::Stream::out) == std::string(real) + "\n");

  // A directory that is not there: nothing runs, and exec_errno says why.
  const std::string marker = dir / "ran";
  RunSpec missing = quiet({"sh", "-c", ": > \"$0\"", marker});
  missing.cwd = dir / "no-such-directory";
  auto failed = run_command(missing);
  CHECK_FALSE(failed.started);
  CHECK(failed.exec_errno == ENOENT);
  CHECK_FALSE(exists(marker));
}

TEST_CASE("runner: stderr_to_stdout captures both streams in the order written", "[runner]") {
  RunSpec spec = quiet({"sh", "-c", "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done"});
  spec.stderr_to_stdout = true;
  auto result = run_command(spec);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.stream_bytes(idem::core::Stream::out) ==
        "out1\nerr1\nout2\nerr2\nout3\nerr3\nout4\nerr4\nout5\nerr5\n");
  CHECK(result.output.stream_bytes(idem::core::Stream::err).empty());
}

TEST_CASE("runner: only the signals idem handles are read from the self-pipe; names never null",
          "[runner]") {
  // In a child: the handlers of INT, TERM and HUP stay out of the test runner.
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    idem::proc::install_signal_handlers();
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
      if (!idem::proc::handles_signal(sig)) _exit(1);
    // What a command's "ERR\n" would have been, had the self-pipe taken stderr's number.
    for (int not_ours : {int('E'), int('R'), int('\n'), SIGUSR1, SIGQUIT, 0, -1, 64, 200})
      if (idem::proc::handles_signal(not_ours)) _exit(2);
    _exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(idem::proc::signal_name(SIGINT) == "INT");
  CHECK(idem::proc::signal_name(69) == "signal 69");
  CHECK(idem::proc::signal_name(0) == "signal 0");
  CHECK(idem::proc::signal_name(-3) == "signal -3");
  idem::proc::RunResult stray;
  stray.started = true;
  stray.exit_code = 0;
  stray.forwarded_signal = 69;
  CHECK(idem::proc::outcome_of(stray, 1).note == "idem received signal 69");
}

namespace {

// Reads what is in a pipe now (its writers are closed or done).
std::string pipe_contents(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  return out;
}

}  // namespace

TEST_CASE("runner: live stdout and stderr on one pipe get one pipe: the exact order, as stdout",
          "[runner]") {
  int live[2];
  REQUIRE(::pipe2(live, O_CLOEXEC) == 0);
  idem::util::Fd read_end(live[0]);
  idem::util::Fd write_end(live[1]);
  idem::util::Fd second(::fcntl(write_end.get(), F_DUPFD_CLOEXEC, 0));  // as 2>&1 does
  std::string want;
  for (int i = 1; i <= 50; ++i) want += "o" + std::to_string(i) + "\ne" + std::to_string(i) + "\n";
  RunSpec spec;
  spec.argv = {"sh", "-c", "i=1; while [ $i -le 50 ]; do echo o$i; echo e$i >&2; i=$((i+1)); done"};
  spec.live_stdout_fd = write_end.get();
  spec.live_stderr_fd = second.get();
  auto result = run_command(spec);
  REQUIRE(result.exit_code == 0);
  write_end.reset();
  second.reset();
  CHECK(pipe_contents(read_end.get()) == want);
  CHECK(result.output.stream_bytes(idem::core::Stream::out) == want);
  CHECK(result.output.stream_bytes(idem::core::Stream::err).empty());

  // Two pipes, or one character device (/dev/null here, a terminal alike): kept apart.
  int other[2];
  REQUIRE(::pipe2(other, O_CLOEXEC) == 0);
  idem::util::Fd other_read(other[0]);
  idem::util::Fd other_write(other[1]);
  idem::util::Fd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  idem::util::Fd null_dup(::fcntl(null.get(), F_DUPFD_CLOEXEC, 0));
  for (auto [out_fd, err_fd] :
       {std::pair{null.get(), null_dup.get()}, std::pair{null.get(), other_write.get()}}) {
    spec.live_stdout_fd = out_fd;
    spec.live_stderr_fd = err_fd;
    auto apart = run_command(spec);
    REQUIRE(apart.exit_code == 0);
    CHECK(apart.output.stream_bytes(idem::core::Stream::err).size() > 0);
    CHECK(apart.output.stream_bytes(idem::core::Stream::out).find("e1\n") == std::string::npos);
  }
}

TEST_CASE("runner: drain_ms reads what a background process writes after the command exited",
          "[runner]") {
  // The background writer waits until the command (its parent) has been reaped.
  const char* late =
      "parent=$$; (while kill -0 $parent 2>/dev/null; do sleep 0.01; done; echo late) & "
      "echo early";
  RunSpec spec = quiet({"sh", "-c", late});
  spec.drain_ms = 60'000;
  auto result = run_command(spec);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.stream_bytes(idem::core::Stream::out) == "early\nlate\n");

  // The bound: a writer that never stops. The run returns once drain_ms is past (asserted to
  // return, not when), and the closed pipe ends the writer (SIGPIPE).
  TempDir dir;
  const std::string pid_file = dir / "writer";
  RunSpec endless = quiet({"sh", "-c",
                           "sh -c 'echo $$ > \"$0\"; while :; do echo tick; sleep 0.01; done' "
                           "\"$0\" & echo started",
                           pid_file});
  endless.drain_ms = 300;
  auto bounded = run_command(endless);
  REQUIRE(bounded.exit_code == 0);
  const std::string out = bounded.output.stream_bytes(idem::core::Stream::out);
  CHECK(out.find("started\n") != std::string::npos);  // the writer may come first
  CHECK(out.find("tick\n") != std::string::npos);
  const int64_t writer = read_pid(pid_file);
  REQUIRE(writer > 0);
  bool gone = false;
  for (int i = 0; i < 2000 && !gone; ++i) {
    gone = exited(writer);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(gone);
  if (!gone) ::kill(pid_t(writer), SIGKILL);
}

TEST_CASE(
    "runner: a prepared command waits in its own group; started, it sees what was added since",
    "[runner]") {
  TempDir dir;
  RunSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo \"$IDEM_ATTEMPT $STAYS\"; touch ran"};
  spec.cwd = dir.path();
  spec.live_stdout_fd = -1;
  spec.extra_env = {{"STAYS", "yes"}};
  auto prepared = idem::proc::prepare_command(spec);
#if IDEM_CHILD_SHARES_MEMORY
  REQUIRE(prepared != nullptr);
  const ProcessGroup group = prepared->group();
  CHECK(group.pgid > 0);
  CHECK(group.leader_start_ticks > 0);
  CHECK(::getpgid(pid_t(group.pgid)) == pid_t(group.pgid));  // the group exists already
  CHECK_FALSE(std::ifstream(dir.path() + "/ran").good());    // and nothing of it ran
  spec.extra_env.emplace_back("IDEM_ATTEMPT", "7");
  auto result = idem::proc::run_prepared_command(std::move(prepared), spec);
  CHECK(result.started);
  CHECK(result.exit_code == 0);
  CHECK(result.output.stream_bytes(idem::core::Stream::out) == "7 yes\n");
  CHECK(std::ifstream(dir.path() + "/ran").good());
#else
  CHECK(prepared == nullptr);
#endif
}

TEST_CASE("runner: a prepared command dropped unstarted is killed and reaped before it ran",
          "[runner]") {
  TempDir dir;
  RunSpec spec;
  spec.argv = {"/bin/sh", "-c", "touch ran"};
  spec.cwd = dir.path();
  auto prepared = idem::proc::prepare_command(spec);
  if (prepared == nullptr) IDEM_SKIP_CASE("this CPU has no raw clone: run_command forks instead");
  const pid_t pid = pid_t(prepared->group().pgid);
  // One command starts at a time on a thread: its child runs on the thread's stack.
  CHECK_THROWS_AS(idem::proc::prepare_command(spec), std::logic_error);
  prepared.reset();
  CHECK(::kill(pid, 0) == -1);
  CHECK(errno == ESRCH);  // reaped: no zombie left either
  CHECK_FALSE(std::ifstream(dir.path() + "/ran").good());
  // The thread's stack is free again.
  auto next = idem::proc::prepare_command(spec);
  REQUIRE(next != nullptr);
  CHECK(idem::proc::run_prepared_command(std::move(next), spec).exit_code == 0);
  CHECK(std::ifstream(dir.path() + "/ran").good());
}

TEST_CASE("runner: a prepared command is watched as the spec it is started with says (stop_fd)",
          "[runner]") {
  RunSpec spec;
  spec.argv = {"/bin/sh", "-c", "exec sleep 30"};
  spec.live_stdout_fd = -1;
  spec.kill_after_ms = 100;
  auto prepared = idem::proc::prepare_command(spec);
  if (prepared == nullptr) IDEM_SKIP_CASE("this CPU has no raw clone: run_command forks instead");
  int lost[2];
  REQUIRE(::pipe(lost) == 0);
  idem::util::Fd read_end(lost[0]), write_end(lost[1]);
  REQUIRE(::write(write_end.get(), "x", 1) == 1);  // the lease is lost already
  spec.stop_fd = read_end.get();                   // known only once claimed
  auto result = idem::proc::run_prepared_command(std::move(prepared), spec);
  CHECK(result.started);
  CHECK(result.stopped);
  CHECK(result.signal.has_value());
}

}  // namespace unit_runner
