// core/health: the one-line findings of `idem doctor` and its checks of modes, owners, the WAL's
// size, free space, writability and the records that need a human.
#include <catch2/catch.hpp>

#include "core/health.hpp"
#include "core/record.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_health {

using idem::core::file_findings;
using idem::core::Finding;
using idem::core::finding_line;
using idem::core::folder_findings;
using idem::core::PathFacts;
using idem::core::Record;
using idem::core::record_finding;
using idem::core::Severity;
using idem::core::shell_word;
using idem::core::Status;
using idem::core::wal_finding;

namespace {

constexpr uint32_t k_me = 1000;

PathFacts dir(uint32_t mode, uint32_t uid = k_me) {
  PathFacts f;
  f.exists = f.is_dir = true;
  f.mode = mode;
  f.uid = uid;
  return f;
}

PathFacts file(uint32_t mode, uint32_t uid = k_me, int64_t size = 0) {
  PathFacts f;
  f.exists = f.is_regular = true;
  f.mode = mode;
  f.uid = uid;
  f.size = size;
  return f;
}

std::vector<std::string> checks(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.check);
  return out;
}

}  // namespace

TEST_CASE("health: a private folder of one's own is no finding; others' access is", "[health]") {
  CHECK(folder_findings("/s", dir(0700), k_me).empty());
  CHECK(folder_findings("/s", PathFacts{}, k_me).empty());  // absent: said elsewhere
  auto loose = folder_findings("/s", dir(0750), k_me);
  REQUIRE(checks(loose) == std::vector<std::string>{"folder-mode"});
  CHECK(loose[0].severity == Severity::warning);
  CHECK(finding_line(loose[0]) ==
        "warning: store folder /s is mode 0750: others can see or change what is in it; chmod 700 "
        "/s");
  auto world = folder_findings("/tmp", dir(01777, 0), k_me);
  CHECK(checks(world) == std::vector<std::string>{"folder-world-writable", "folder-owner"});
  CHECK(world[0].severity == Severity::error);
  CHECK(world[0].problem.find("mode 1777") != std::string::npos);
  PathFacts not_dir = file(0600);
  CHECK(checks(folder_findings("/s", not_dir, k_me)) == std::vector<std::string>{"folder-type"});
  // Allowed by IDEM_ALLOW_SHARED_FOLDER=1: a warning that says what it leaves.
  auto allowed = folder_findings("/tmp", dir(01777, 0), k_me, true);
  REQUIRE(checks(allowed) == std::vector<std::string>{"folder-shared", "folder-owner"});
  CHECK(allowed[0].severity == Severity::warning);
  CHECK(allowed[0].problem.find("would be believed") != std::string::npos);
  // Another user's folder (not root's): they can plant files; refused unless allowed.
  auto theirs = folder_findings("/home/a", dir(0755, 1001), k_me);
  REQUIRE(checks(theirs) == std::vector<std::string>{"folder-mode", "folder-owner"});
  CHECK(theirs[1].severity == Severity::error);
  CHECK(folder_findings("/home/a", dir(0755, 1001), k_me, true)[1].severity == Severity::warning);
}

TEST_CASE("health: store files are regular, one's own and 0600", "[health]") {
  CHECK(file_findings("/s/idem.db", "store", file(0600), k_me).empty());
  CHECK(file_findings("/s/idem.db", "store", file(0400), k_me).empty());  // read-only is private
  CHECK(file_findings("/s/x", "store", PathFacts{}, k_me).empty());
  auto readable = file_findings("/s/idem.db-wal", "WAL", file(0644), k_me);
  REQUIRE(readable.size() == 1);
  CHECK(finding_line(readable[0]) ==
        "warning: WAL /s/idem.db-wal is mode 0644: others can read what it holds (outputs may hold "
        "secrets); chmod 600 /s/idem.db-wal");
  auto writable = file_findings("/s/idem.db-wal", "WAL", file(0666), k_me);
  REQUIRE(checks(writable) == std::vector<std::string>{"file-writable"});
  CHECK(writable[0].severity == Severity::error);
  auto theirs = file_findings("/s/idem.db", "store", file(0600, 0), k_me);
  REQUIRE(checks(theirs) == std::vector<std::string>{"file-owner"});
  CHECK(theirs[0].severity == Severity::error);
  CHECK(theirs[0].problem ==
        "store /s/idem.db is owned by uid 0, not by you (uid 1000): idem refuses it");
  PathFacts link;
  link.exists = link.is_symlink = true;
  CHECK(checks(file_findings("/s/idem.db", "store", link, k_me)) ==
        std::vector<std::string>{"file-symlink"});
  CHECK(checks(file_findings("/s/idem.db", "store", dir(0700), k_me)) ==
        std::vector<std::string>{"file-type"});
}

TEST_CASE("health: a WAL past 64 MiB is a finding", "[health]") {
  CHECK_FALSE(wal_finding("/s/w", file(0600, k_me, idem::core::k_wal_warning_bytes)));
  CHECK_FALSE(wal_finding("/s/w", PathFacts{}));
  auto big = wal_finding("/s/w", file(0600, k_me, int64_t(100) << 20));
  REQUIRE(big);
  CHECK(big->check == "wal-size");
  CHECK(big->problem.find("holds 100 MiB") != std::string::npos);
  CHECK(big->fix.find("idem gc") != std::string::npos);
}

TEST_CASE("health: free space below 34 MiB is a warning, below 1 MiB an error", "[health]") {
  using idem::core::free_space_finding;
  CHECK_FALSE(free_space_finding("/s", idem::core::k_free_space_warning_bytes));
  CHECK_FALSE(free_space_finding("/s", int64_t(1) << 40));
  auto low = free_space_finding("/s", idem::core::k_free_space_warning_bytes - 1);
  REQUIRE(low);
  CHECK(low->check == "free-space");
  CHECK(low->severity == Severity::warning);
  CHECK(low->subject == "/s");
  auto full = free_space_finding("/s", idem::core::k_free_space_error_bytes - 1);
  REQUIRE(full);
  CHECK(full->check == "free-space");
  CHECK(full->severity == Severity::error);
  CHECK(finding_line(*free_space_finding("/s", 0)) ==
        "error: the file system of store folder /s has 0B free: a run's claim or outcome may not "
        "fit, and every run then fails (exit 74); free space on it, or give idem a store on "
        "another one");
  CHECK(free_space_finding("/s", int64_t(10) << 20)->problem ==
        "the file system of store folder /s has 10MiB free, less than the 34MiB the store may "
        "need between checkpoints (an outcome of 16MiB, the default --max-output, in the WAL, "
        "then in the database)");
}

TEST_CASE("health: a store that cannot be written, locked or not", "[health]") {
  using idem::core::writable_finding;
  const Finding locked =
      writable_finding("/s/idem.db", "store /s/idem.db: database is locked", true);
  CHECK(locked.check == "store-writable");
  CHECK(locked.severity == Severity::error);
  CHECK(locked.problem == "store /s/idem.db: database is locked");
  CHECK(locked.fix.find("fuser") != std::string::npos);
  const Finding readonly = writable_finding(
      "/s/idem.db", "store /s/idem.db: attempt to write a readonly database", false);
  CHECK(readonly.check == "store-writable");
  CHECK(readonly.severity == Severity::error);
  CHECK(finding_line(readonly) ==
        "error: a trial write to the store failed: store /s/idem.db: attempt to write a readonly "
        "database; until it can write, every run fails (exit 74): make its file system or server "
        "writable, free space on it, or give idem a store it may write");
}

TEST_CASE("health: abandoned records, and running ones abandoned in fact", "[health]") {
  Record r;
  r.key = "nightly backup";
  r.attempt = 2;
  r.owner.pid = 42;
  r.owner.host = "db1";
  r.started_ms = 1'700'000'000'000;
  r.status = Status::succeeded;
  CHECK_FALSE(record_finding(r, "succeeded", r.started_ms));
  r.status = Status::running;
  CHECK_FALSE(record_finding(r, "running", r.started_ms));

  auto gone = record_finding(r, "abandoned", r.started_ms);
  REQUIRE(gone);
  CHECK(gone->check == "owner-gone");
  CHECK(gone->subject == "nightly backup");
  CHECK(finding_line(*gone) ==
        "warning: 'nightly backup' is still marked running, but its owner is gone (attempt 2, "
        "started 2023-11-14T22:13:20.000Z by pid 42 on db1); the next attempt finds it abandoned "
        "(exit 69): check whether its side effect happened, then idem rm 'nightly backup'");

  r.lease_expires_ms = r.started_ms + 30'000;
  auto lease = record_finding(r, "abandoned", r.started_ms + 60'000);
  REQUIRE(lease);
  CHECK(lease->problem.find("its lease ran out at 2023-11-14T22:13:50.000Z") != std::string::npos);

  r.status = Status::abandoned;
  auto abandoned = record_finding(r, "abandoned", r.started_ms);
  REQUIRE(abandoned);
  CHECK(abandoned->check == "abandoned");
  CHECK(abandoned->problem ==
        "'nightly backup' is abandoned (attempt 2, started 2023-11-14T22:13:20.000Z by pid 42 on "
        "db1): its outcome is unknown");
  CHECK(abandoned->fix.find("idem rm 'nightly backup' (or run it again with --retry-abandoned)") !=
        std::string::npos);
}

TEST_CASE("health: keys become shell words", "[health]") {
  CHECK(shell_word("backup-2026.11/29:a@b") == "backup-2026.11/29:a@b");
  CHECK(shell_word("a b") == "'a b'");
  CHECK(shell_word("it's") == "'it'\\''s'");
  CHECK(shell_word("$HOME") == "'$HOME'");
  CHECK(shell_word("") == "''");
}

TEST_CASE("health: live leftovers of a failed or abandoned attempt name their group", "[health]") {
  Record r;
  r.key = "nightly";
  r.attempt = 2;
  r.status = Status::failed;
  r.process_group = {4242, 7};
  auto f = idem::core::leftovers_finding(r, "failed", true);
  REQUIRE(f);
  CHECK(f->check == "leftovers");
  CHECK(f->problem.find("failed attempt 2 left live processes in process group 4242") !=
        std::string::npos);
  CHECK(f->fix.find("pgrep -a -g 4242") != std::string::npos);
  CHECK(f->fix.find("--kill-stale") != std::string::npos);
  // A failure past its TTL still holds the key; an abandoned one is named as shown.
  CHECK(idem::core::leftovers_finding(r, "expired", true));
  r.status = Status::running;
  auto gone = idem::core::leftovers_finding(r, "abandoned", true);
  REQUIRE(gone);
  CHECK(gone->problem.find("abandoned attempt 2") != std::string::npos);
  // None when nothing lives, or for a record that holds the key anyway or replays.
  CHECK_FALSE(idem::core::leftovers_finding(r, "abandoned", false));
  CHECK_FALSE(idem::core::leftovers_finding(r, "running", true));
  CHECK_FALSE(idem::core::leftovers_finding(r, "succeeded", true));
  CHECK_FALSE(idem::core::leftovers_finding(r, "expired", true));  // a running record's
}

TEST_CASE("health: leftovers of an attempt with a cgroup name it, and its files to act on",
          "[health]") {
  Record r;
  r.key = "nightly";
  r.attempt = 1;
  r.status = Status::failed;
  r.process_group = {4242, 7, "/cron.service/idem-4242-7"};
  auto f = idem::core::leftovers_finding(r, "failed", true, "/sys/fs/cgroup");
  REQUIRE(f);
  CHECK(f->problem.find("left live processes in cgroup /cron.service/idem-4242-7") !=
        std::string::npos);
  CHECK(f->fix.find("cat /sys/fs/cgroup/cron.service/idem-4242-7/cgroup.procs") !=
        std::string::npos);
  CHECK(f->fix.find("echo 1 > /sys/fs/cgroup/cron.service/idem-4242-7/cgroup.kill") !=
        std::string::npos);
  CHECK(f->fix.find("pgrep") == std::string::npos);
}

}  // namespace unit_health
