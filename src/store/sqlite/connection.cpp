#include "store/sqlite/connection.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

namespace idem::store::sqlite {

namespace {

// The WAL is written over blocks it already has. A commit's fdatasync of a file that grew must
// also write the file's new size to the file system's journal: about 0.8 ms here against 0.2 ms
// for the same bytes written over blocks the file has (an ext4 VM disk), twice in every first
// run (the claim and the outcome). So a write past the WAL's end first extends it with zeros to
// the next k_wal_extent boundary, and the commits that follow write inside it. The checkpoints a
// writer makes as the WAL grows keep its blocks too (wal_truncate), so only the first commit
// after gc's last checkpoint (which empties the file) pays for a size change. SQLite ignores
// whatever lies past a WAL's last valid frame (a WAL that is reused after a checkpoint holds old
// frames there): a frame of zeros fails its checksum, and recovery stops at the first frame that
// does. Zeros (not fallocate): an unwritten extent becomes a written one at the first write into
// it, a change of metadata again.
constexpr sqlite3_int64 k_wal_extent = 512 * 1024;
// The WAL's own header, before its first frame.
constexpr int k_wal_header_bytes = 32;

// SQLite writes each frame as two writes, its 24-byte header and then its page (and the WAL's
// 32-byte header before the first frame): a write this short is held back and goes out with
// the write that continues it, one system call a frame instead of two. It is held only until the
// next call on the file, which is that continuation when SQLite writes frames; any other call
// writes it first. No other connection reads a frame before the writer has published it in the
// WAL's index, after its last write.
constexpr int k_wal_held_bytes = 64;

struct WalFile {
  sqlite3_file base;   // methods: k_wal_methods
  sqlite3_file* real;  // the unix VFS's file, in the same allocation, after this struct
  // Bytes from the start known to be written (zeros at least); -1 until asked of the file.
  sqlite3_int64 written_end;
  // A truncation to nothing keeps the file's blocks instead (keep_wal_blocks).
  bool keep_blocks;
  // A short write not made yet: `held_bytes` bytes at `held_at` (k_wal_held_bytes).
  int held_bytes;
  sqlite3_int64 held_at;
  char held[k_wal_held_bytes];
};

sqlite3_file* real_of(sqlite3_file* f) { return reinterpret_cast<WalFile*>(f)->real; }

int write_through(WalFile& wal, const void* data, int amount, sqlite3_int64 offset);

// Makes the write held back, if any; first thing in every call on the file but a write that
// continues it.
int write_held(sqlite3_file* f) {
  auto& wal = *reinterpret_cast<WalFile*>(f);
  if (wal.held_bytes == 0) return SQLITE_OK;
  const int n = std::exchange(wal.held_bytes, 0);
  return write_through(wal, wal.held, n, wal.held_at);
}

// Writes zeros from the file's end up to `end`; stops at the first failure (a full disk), which
// the write that wanted the room then meets itself.
void extend_with_zeros(WalFile& wal, sqlite3_int64 end) {
  static const char zeros[64 * 1024] = {};
  while (wal.written_end < end) {
    const int n = int(std::min<sqlite3_int64>(sizeof zeros, end - wal.written_end));
    if (wal.real->pMethods->xWrite(wal.real, zeros, n, wal.written_end) != SQLITE_OK) return;
    wal.written_end += n;
  }
}

// Frames are written under SQLite's WAL writer lock, and so are a checkpoint's truncation and
// the zeros here: while this connection writes, no other connection of any process changes the
// file's length. What this connection last knew of it may be stale (another process wrote past
// it, or truncated it), so the file is asked before zeros are written: only past its real end,
// never over another connection's frames.
int write_through(WalFile& wal, const void* data, int amount, sqlite3_int64 offset) {
  const sqlite3_int64 end = offset + amount;
  if (offset == 0 || end > wal.written_end) {
    sqlite3_int64 size = 0;
    wal.written_end = wal.real->pMethods->xFileSize(wal.real, &size) == SQLITE_OK ? size : -1;
  }
  if (wal.written_end >= 0 && end > wal.written_end)
    extend_with_zeros(wal, (end + k_wal_extent - 1) / k_wal_extent * k_wal_extent);
  const int rc = wal.real->pMethods->xWrite(wal.real, data, amount, offset);
  if (rc == SQLITE_OK && end > wal.written_end) wal.written_end = end;
  return rc;
}

// A short write is held back (k_wal_held_bytes); one that continues a held write goes out with
// it, in one write. Its failure is the continuing write's, which SQLite then fails as a whole.
int wal_write(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  auto& wal = *reinterpret_cast<WalFile*>(f);
  if (wal.held_bytes == 0 || offset != wal.held_at + wal.held_bytes) {
    if (int rc = write_held(f); rc != SQLITE_OK) return rc;
    if (amount > k_wal_held_bytes / 2) return write_through(wal, data, amount, offset);
    wal.held_at = offset;
  } else if (wal.held_bytes + amount > k_wal_held_bytes) {
    // The held bytes and this write, side by side in one buffer of this thread's.
    thread_local std::vector<char> joined;
    const int held = std::exchange(wal.held_bytes, 0);
    joined.resize(size_t(held + amount));
    std::memcpy(joined.data(), wal.held, size_t(held));
    std::memcpy(joined.data() + held, data, size_t(amount));
    return write_through(wal, joined.data(), held + amount, wal.held_at);
  }
  std::memcpy(wal.held + wal.held_bytes, data, size_t(amount));  // held, or held with the rest
  wal.held_bytes += amount;
  return SQLITE_OK;
}

// A TRUNCATE checkpoint ends by truncating the WAL to nothing, under the WAL writer lock, every
// frame copied into the database and synced there. With keep_blocks, the file's header is
// zeroed instead (and a file grown past one extent cut back to it): a connection that rebuilds
// its index from the file finds no valid header, so no frames, as in an empty file; the next
// commit writes a new header and its frames over blocks the file has, and its sync changes no
// size. Unsynced, as the truncation is: after a crash before the next commit, the old frames may
// be found again, and they hold what the database holds already.
int wal_truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (int rc = write_held(f); rc != SQLITE_OK) return rc;
  auto& wal = *reinterpret_cast<WalFile*>(f);
  wal.written_end = -1;  // asked of the file at the next write
  sqlite3_int64 have = 0;
  if (size != 0 || !wal.keep_blocks ||
      wal.real->pMethods->xFileSize(wal.real, &have) != SQLITE_OK || have < k_wal_header_bytes)
    return wal.real->pMethods->xTruncate(wal.real, size);
  if (have > k_wal_extent)
    if (int rc = wal.real->pMethods->xTruncate(wal.real, k_wal_extent); rc != SQLITE_OK) return rc;
  static const char zeros[k_wal_header_bytes] = {};
  return wal.real->pMethods->xWrite(wal.real, zeros, k_wal_header_bytes, 0);
}

// Every other call makes the held write first (write_held).
int wal_close(sqlite3_file* f) {
  const int held = write_held(f);
  const int rc = real_of(f)->pMethods->xClose(real_of(f));
  return held != SQLITE_OK ? held : rc;
}
int wal_read(sqlite3_file* f, void* data, int amount, sqlite3_int64 offset) {
  if (int rc = write_held(f); rc != SQLITE_OK) return rc;
  return real_of(f)->pMethods->xRead(real_of(f), data, amount, offset);
}
int wal_sync(sqlite3_file* f, int flags) {
  if (int rc = write_held(f); rc != SQLITE_OK) return rc;
  return real_of(f)->pMethods->xSync(real_of(f), flags);
}
int wal_file_size(sqlite3_file* f, sqlite3_int64* size) {
  if (int rc = write_held(f); rc != SQLITE_OK) return rc;
  return real_of(f)->pMethods->xFileSize(real_of(f), size);
}
int wal_lock(sqlite3_file* f, int level) {
  if (int rc = write_held(f); rc != SQLITE_OK) return rc;
  return real_of(f)->pMethods->xLock(real_of(f), level);
}
int wal_unlock(sqlite3_file* f, int level) {
  if (int rc = write_held(f); rc != SQLITE_OK) return rc;
  return real_of(f)->pMethods->xUnlock(real_of(f), level);
}
int wal_check_reserved_lock(sqlite3_file* f, int* out) {
  if (int rc = write_held(f); rc != SQLITE_OK) return rc;
  return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}
int wal_file_control(sqlite3_file* f, int op, void* arg) {
  if (int rc = write_held(f); rc != SQLITE_OK) return rc;
  return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}
int wal_sector_size(sqlite3_file* f) { return real_of(f)->pMethods->xSectorSize(real_of(f)); }
int wal_device_characteristics(sqlite3_file* f) {
  return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}
// The shared-memory and memory-map calls are made on the database file, never on its WAL; a WAL
// answers them as having none.
int wal_shm_map(sqlite3_file*, int, int, int, void volatile** out) {
  *out = nullptr;
  return SQLITE_IOERR_SHMMAP;
}
int wal_shm_lock(sqlite3_file*, int, int, int) { return SQLITE_IOERR_SHMLOCK; }
void wal_shm_barrier(sqlite3_file*) {}
int wal_shm_unmap(sqlite3_file*, int) { return SQLITE_OK; }
int wal_fetch(sqlite3_file*, sqlite3_int64, int, void** out) {
  *out = nullptr;
  return SQLITE_OK;
}
int wal_unfetch(sqlite3_file*, sqlite3_int64, void*) { return SQLITE_OK; }

const sqlite3_io_methods k_wal_methods = {3,
                                          wal_close,
                                          wal_read,
                                          wal_write,
                                          wal_truncate,
                                          wal_sync,
                                          wal_file_size,
                                          wal_lock,
                                          wal_unlock,
                                          wal_check_reserved_lock,
                                          wal_file_control,
                                          wal_sector_size,
                                          wal_device_characteristics,
                                          wal_shm_map,
                                          wal_shm_lock,
                                          wal_shm_barrier,
                                          wal_shm_unmap,
                                          wal_fetch,
                                          wal_unfetch};

// Opens a WAL through the unix VFS inside a WalFile.
int open_wal(sqlite3_vfs* unix_vfs, const char* name, sqlite3_file* file, int flags,
             int* out_flags) {
  auto* wal = reinterpret_cast<WalFile*>(file);
  wal->real = reinterpret_cast<sqlite3_file*>(wal + 1);
  wal->written_end = -1;
  wal->keep_blocks = false;
  wal->held_bytes = 0;
  wal->held_at = 0;
  wal->base.pMethods = nullptr;  // until the real file is open: SQLite then calls no method
  int rc = unix_vfs->xOpen(unix_vfs, name, wal->real, flags, out_flags);
  if (rc == SQLITE_OK && wal->real->pMethods != nullptr) wal->base.pMethods = &k_wal_methods;
  return rc;
}

// The "idem" VFS: SQLite's "unix" VFS, except that a WAL that exists already is opened without
// SQLITE_OPEN_CREATE. The unix VFS marks a WAL opened with the create flag for a folder sync at
// its first sync, whether or not the file was new; the folder entry of a WAL that exists was made
// durable by the process that created it. An absent WAL is created, and its folder synced, as
// usual.
int open_existing_wal(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags,
                      int* out_flags) {
  auto* unix_vfs = static_cast<sqlite3_vfs*>(vfs->pAppData);
  if ((flags & SQLITE_OPEN_WAL) == 0)
    return unix_vfs->xOpen(unix_vfs, name, file, flags, out_flags);
  if (name != nullptr && (flags & SQLITE_OPEN_CREATE) != 0 && ::access(name, F_OK) == 0) {
    int rc = open_wal(unix_vfs, name, file, flags & ~SQLITE_OPEN_CREATE, out_flags);
    if (rc == SQLITE_OK) return rc;  // else it went away meanwhile: create it
  }
  return open_wal(unix_vfs, name, file, flags, out_flags);
}

}  // namespace

void keep_wal_blocks(sqlite3* db, bool keep) {
  sqlite3_file* file = nullptr;
  // In WAL mode, the WAL file (while it is open).
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) == SQLITE_OK &&
      file != nullptr && file->pMethods == &k_wal_methods)
    reinterpret_cast<WalFile*>(file)->keep_blocks = keep;
}

const char* idem_vfs_name() {
  static const char* name = [] {
    static sqlite3_vfs vfs{};
    // SQLite's allocation statistics take one process-wide mutex around every allocation; idem
    // reads none of them, and the daemon's threads queued on it. Only possible before SQLite
    // initialises (sqlite3_vfs_find does), refused and harmless after.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    // No page cache allocated ahead for each connection (20 pages, every one of them touched to
    // link it in a free list): a short `idem run` reads a few pages, and those pages were a
    // tenth of its page faults. Pages come from malloc as they are needed.
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, nullptr, 0, 0);
    sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == nullptr) return static_cast<const char*>(nullptr);
    vfs = *unix_vfs;
    vfs.zName = "idem";
    vfs.pNext = nullptr;
    vfs.pAppData = unix_vfs;
    vfs.xOpen = open_existing_wal;
    // Room for a WalFile around any file the unix VFS opens.
    vfs.szOsFile = int(sizeof(WalFile)) + unix_vfs->szOsFile;
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
