#include "store/sqlite_connection.hpp"

#include <unistd.h>

#include <map>

namespace idem::store::sqlite {

namespace {

// The "idem" VFS: SQLite's "unix" VFS, except that a WAL that exists already is opened without
// SQLITE_OPEN_CREATE. The unix VFS marks a WAL opened with the create flag for a folder sync at
// its first sync, whether or not the file was new; the folder entry of a WAL that exists was made
// durable by the process that created it. An absent WAL is created, and its folder synced, as
// usual.
int open_existing_wal(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags,
                      int* out_flags) {
  auto* unix_vfs = static_cast<sqlite3_vfs*>(vfs->pAppData);
  if (name != nullptr && (flags & SQLITE_OPEN_WAL) != 0 && (flags & SQLITE_OPEN_CREATE) != 0 &&
      ::access(name, F_OK) == 0) {
    int rc = unix_vfs->xOpen(unix_vfs, name, file, flags & ~SQLITE_OPEN_CREATE, out_flags);
    if (rc == SQLITE_OK) return rc;  // else it went away meanwhile: create it
  }
  return unix_vfs->xOpen(unix_vfs, name, file, flags, out_flags);
}

}  // namespace

const char* idem_vfs_name() {
  static const char* name = [] {
    static sqlite3_vfs vfs{};
    // SQLite's allocation statistics take one process-wide mutex around every allocation; idem
    // reads none of them, and the daemon's threads queued on it. Only possible before SQLite
    // initialises (sqlite3_vfs_find does), refused and harmless after.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == nullptr) return static_cast<const char*>(nullptr);
    vfs = *unix_vfs;
    vfs.zName = "idem";
    vfs.pNext = nullptr;
    vfs.pAppData = unix_vfs;
    vfs.xOpen = open_existing_wal;
    return sqlite3_vfs_register(&vfs, 0) == SQLITE_OK ? vfs.zName : nullptr;
  }();
  return name;
}

StoreFailure failure_of(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED ? StoreFailure::transient
                                                            : StoreFailure::permanent;
}

[[noreturn]] void throw_sqlite(int rc, const std::string& where, const std::string& message) {
  throw StoreError("store " + where + ": " + message, failure_of(rc));
}

void exec(sqlite3* db, const char* sql, const std::string& where) {
  char* err = nullptr;
  if (int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
    std::string message = err != nullptr ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw_sqlite(rc, where, message);
  }
}

std::shared_ptr<Writers> writer_queue_of(const std::string& resolved_path) {
  static std::mutex registry_mutex;
  static std::map<std::string, std::shared_ptr<Writers>> registry;  // one per file
  std::lock_guard lock(registry_mutex);
  auto& queue = registry[resolved_path];
  if (!queue) queue = std::make_shared<Writers>();
  return queue;
}

}  // namespace idem::store::sqlite
