#pragma once
// The SQLite store's file safety: the database file and its -wal and -shm are never symlinks and
// never someone else's; the file is created 0600 in folders created 0700, made private once it is
// known to be an idem store, and taken back, with the folders, when an open fails.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace idem::store::sqlite {

// What opening a store created, so that a failed open can take it back.
struct Created {
  std::vector<std::string> dirs;  // outermost first
  bool file = false;
};

// Refuses symlinks and files owned by someone else, companions (-wal, -shm, -journal) that are
// someone else's or writable by others, and a folder others can create files in (world-writable,
// sticky or not, or another user's but root's) unless IDEM_ALLOW_SHARED_FOLDER=1; creates the
// file 0600 if absent. Returns the file's mode, which make_private then narrows once the file is
// known to be an idem store.
mode_t prepare_db_file(const std::string& path, Created& created);

// Why `dir` is a folder others can create files in (world-writable, or owned by another user
// than this one and root), or nullopt.
std::optional<std::string> shared_folder(const std::string& dir);

// Takes group and other access away from the database file (MODE, as prepare_db_file found it)
// before SQLite creates its -wal and -shm, which take the database file's mode. Never adds write
// access the owner removed on purpose. Only once the file is known to be an idem store: a file
// that is refused is left as it was.
void make_private(const std::string& path, mode_t mode);

// The path SQLite is given: the folder resolved (SQLite's SQLITE_OPEN_NOFOLLOW refuses a symlink
// anywhere in the path, and Debian's /var/run or a symlinked $HOME are ordinary), the file name
// as it is, so NOFOLLOW still refuses a database file that became a symlink after our lstat.
std::string resolved_path(const std::string& path);

// Takes back what a failed open created. The file only while it is still empty with no WAL file
// beside it: then no process has made it a database yet (a store that another process has begun
// to use has a WAL or a header; a folder or other non-file at the -wal path is no WAL, and no
// process can have written one there), so removing it cannot lose anyone's records. Folders
// only while empty.
void take_back(const std::string& path, const Created& created);

// While gc deletes, it holds PATH.gc (created 0600, locked with flock) so that the store's other
// writers leave the WAL to gc's own checkpoints, which come at a larger size
// (k_gc_checkpoint_wal_bytes): at their own size they copied gc's frames after nearly every
// batch. Only speed depends on the mark: a file that cannot be made, or that another gc holds,
// leaves this gc unmarked. Removed at the end; one a killed gc left behind is unlocked, and
// unheeded.
class GcMark {
 public:
  explicit GcMark(const std::string& db_path);
  ~GcMark();
  GcMark(const GcMark&) = delete;
  GcMark& operator=(const GcMark&) = delete;

 private:
  std::string path_;
  util::Fd fd_;
};

// Whether a gc of another connection holds DB_PATH.gc now: the file is this user's and locked.
// One failed open (ENOENT) when no gc runs.
bool gc_marked(const std::string& db_path);

}  // namespace idem::store::sqlite
