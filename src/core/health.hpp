#pragma once
// What `idem doctor` finds (contract §4): findings, each one line naming what is wrong and what to
// do about it, and the checks that need no I/O: the modes and owners of the store's files, and
// the records that need a human. The caller gathers the facts (lstat, the store) and decides.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.hpp"

namespace idem::core {

enum class Severity {
  warning,  // idem works, but something needs doing
  error,    // idem cannot work as it should: the store or a config is unusable or unsafe
};

std::string_view to_string(Severity severity);

struct Finding {
  Severity severity = Severity::warning;
  std::string check;    // a stable name for scripts: "folder-mode", "abandoned", ...
  std::string subject;  // what it is about: a path, a key, a file
  std::string problem;  // what is wrong
  std::string fix;      // what to do about it
};

// "warning: PROBLEM; FIX": the finding's one line.
std::string finding_line(const Finding& finding);
nlohmann::json finding_json(const Finding& finding);

// What lstat told of a path.
struct PathFacts {
  bool exists = false;
  bool is_symlink = false;
  bool is_dir = false;
  bool is_regular = false;
  uint32_t mode = 0;  // permission bits (07777)
  uint32_t uid = 0;
  int64_t size = 0;
};

// The store's folder: a directory, owned by `euid`, no access for others (idem creates it 0700),
// above all not one others can create files in (world-writable, or another user's but root's):
// they could plant a -wal that would be believed, so idem refuses a store there unless
// `shared_allowed` (IDEM_ALLOW_SHARED_FOLDER=1), which is then a warning saying what it leaves.
std::vector<Finding> folder_findings(const std::string& path, const PathFacts& facts, uint32_t euid,
                                     bool shared_allowed = false);

// One of the store's files (the database, its -wal, -shm and -journal, the token files): when it
// exists, a regular file, not a symlink, owned by `euid`, writable by no one else (idem refuses
// it otherwise) and readable by no one else (0600: captured output and tokens may hold secrets).
// `what` names it in messages ("store", "WAL").
std::vector<Finding> file_findings(const std::string& path, std::string_view what,
                                   const PathFacts& facts, uint32_t euid);

// A WAL larger than this has outgrown idem's own checkpoints (they keep it about the size of the
// last outcome written), so something holds them off.
inline constexpr int64_t k_wal_warning_bytes = int64_t(64) << 20;
std::optional<Finding> wal_finding(const std::string& path, const PathFacts& facts);

// Free space on the store's file system (statvfs's f_bavail, df's "Avail"). Between two of
// idem's checkpoints the WAL grows to 256 KiB plus the largest outcome written meanwhile, 16 MiB
// at the default --max-output, and a checkpoint then copies those pages into the database file,
// which may grow by as much: below twice that (34 MiB) a warning. Below 1 MiB, a run's claim
// and outcome may not fit at all, and every run then fails (exit 74): an error.
inline constexpr int64_t k_free_space_warning_bytes = int64_t(34) << 20;
inline constexpr int64_t k_free_space_error_bytes = int64_t(1) << 20;
std::optional<Finding> free_space_finding(const std::string& folder, int64_t available_bytes);

// The trial write of Store::check_writable failed with `problem`: `locked`, the writer lock was
// held past the busy timeout (someone else holds it); else the store cannot be written at all (a
// read-only file, mount or server, a full disk, no privilege), so every run fails (exit 74).
Finding writable_finding(const std::string& subject, const std::string& problem, bool locked);

// A record a human must look at, given the status a user sees (effective_status) at now_ms:
// abandoned, stored so or running with its owner gone or its lease run out. Nothing for another.
std::optional<Finding> record_finding(const Record& record, std::string_view shown_status,
                                      int64_t now_ms);

// A record shown failed or abandoned (`shown_status`, as effective_status says), or a failed one
// shown expired, whose attempt's process group (or cgroup) has live members proven its
// (`group_alive`, proc::process_group_alive): the next run of the key waits for them (75),
// whatever the TTL. `cgroup_mount`: where the cgroup2 file system is (the fix lists its
// cgroup.procs there).
std::optional<Finding> leftovers_finding(const Record& record, std::string_view shown_status,
                                         bool group_alive, const std::string& cgroup_mount = "");

// A key as a shell word: as it is when that is safe, else in single quotes.
std::string shell_word(std::string_view text);

}  // namespace idem::core
