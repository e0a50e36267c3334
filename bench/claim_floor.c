/* bench/sqlite_floor.sh's second program: a first run's floor with the rows idem writes.
 *   claim_floor PATH KEY run    on idem's store PATH: the record of KEY written new and its
 *                               history row (copies of the record `done`'s columns, status
 *                               running: the same table, indexes and triggers idem's claim
 *                               writes), one synced commit; `true` started from PATH and waited
 *                               for; the outcome (status, end, exit code, expiry; the history
 *                               row's end), a second synced commit; a TRUNCATE checkpoint once
 *                               the WAL passes 256 KiB.
 *   claim_floor PATH KEY rm     removes KEY's record (its history goes with it by the schema's
 *                               trigger), one synced commit: the untimed step between runs.
 *   claim_floor PATH KEY page   the least a first run could write: two synced commits of one
 *                               page each (KEY's replay count, a column no index holds, which
 *                               changes the row's bytes: SQLite writes nothing for an UPDATE
 *                               that leaves them as they were) around `true`; on idem's store or
 *                               any table of key and replays.
 * The store is opened as idem opens it: WAL, synchronous=FULL, no automatic checkpoint and none
 * at close; SQLite configured as idem configures it (no allocation statistics, no page cache
 * allocated ahead); and a VFS that does to the WAL what idem's does (sqlite/connection.cpp): an
 * existing WAL opened without the create flag (no folder sync at the first commit), and a write
 * past the WAL's end preceded by zeros up to the next 512 KiB (a commit's sync then writes over
 * blocks the file has). Nothing of idem's beyond that: no CLI, no owner lookup, no process group
 * or cgroup, no output captured. Exit 0 when it all went through. */
#include <spawn.h>
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

enum { k_extent = 512 * 1024, k_checkpoint_bytes = 256 * 1024 };

struct wal_file {
  sqlite3_file base;
  sqlite3_file* real;
  sqlite3_int64 written_end;
};
static sqlite3_io_methods g_wal_methods;
static sqlite3_vfs* g_unix;

static int wal_write(sqlite3_file* f, const void* data, int n, sqlite3_int64 at) {
  struct wal_file* w = (struct wal_file*)f;
  if (at == 0 || at + n > w->written_end) {
    sqlite3_int64 size = 0;
    w->written_end = w->real->pMethods->xFileSize(w->real, &size) == SQLITE_OK ? size : -1;
  }
  if (w->written_end >= 0 && at + n > w->written_end) {
    static const char zeros[64 * 1024];
    const sqlite3_int64 end = (at + n + k_extent - 1) / k_extent * k_extent;
    while (w->written_end < end) {
      int chunk = end - w->written_end < (sqlite3_int64)sizeof zeros ? (int)(end - w->written_end)
                                                                     : (int)sizeof zeros;
      if (w->real->pMethods->xWrite(w->real, zeros, chunk, w->written_end) != SQLITE_OK) break;
      w->written_end += chunk;
    }
  }
  int rc = w->real->pMethods->xWrite(w->real, data, n, at);
  if (rc == SQLITE_OK && at + n > w->written_end) w->written_end = at + n;
  return rc;
}
static int wal_truncate(sqlite3_file* f, sqlite3_int64 size) {
  struct wal_file* w = (struct wal_file*)f;
  w->written_end = -1;
  return w->real->pMethods->xTruncate(w->real, size);
}
/* The rest as the unix VFS does it. */
static sqlite3_file* real(sqlite3_file* f) { return ((struct wal_file*)f)->real; }
static int wal_close(sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); }
static int wal_read(sqlite3_file* f, void* d, int n, sqlite3_int64 at) {
  return real(f)->pMethods->xRead(real(f), d, n, at);
}
static int wal_sync(sqlite3_file* f, int flags) { return real(f)->pMethods->xSync(real(f), flags); }
static int wal_size(sqlite3_file* f, sqlite3_int64* s) {
  return real(f)->pMethods->xFileSize(real(f), s);
}
static int wal_lock(sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); }
static int wal_unlock(sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); }
static int wal_reserved(sqlite3_file* f, int* out) {
  return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
static int wal_control(sqlite3_file* f, int op, void* arg) {
  return real(f)->pMethods->xFileControl(real(f), op, arg);
}
static int wal_sector(sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); }
static int wal_device(sqlite3_file* f) {
  return real(f)->pMethods->xDeviceCharacteristics(real(f));
}

static int vfs_open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out) {
  (void)vfs;
  if (!(flags & SQLITE_OPEN_WAL)) return g_unix->xOpen(g_unix, name, file, flags, out);
  struct wal_file* w = (struct wal_file*)file;
  w->real = (sqlite3_file*)(w + 1);
  w->written_end = -1;
  w->base.pMethods = 0;
  if (name && (flags & SQLITE_OPEN_CREATE) && access(name, F_OK) == 0) flags &= ~SQLITE_OPEN_CREATE;
  int rc = g_unix->xOpen(g_unix, name, w->real, flags, out);
  if (rc == SQLITE_OK && w->real->pMethods) w->base.pMethods = &g_wal_methods;
  return rc;
}

static const char* register_vfs(void) {
  static sqlite3_vfs vfs;
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void*)0, 0, 0);
  g_unix = sqlite3_vfs_find("unix");
  vfs = *g_unix;
  vfs.zName = "floor";
  vfs.pNext = 0;
  vfs.xOpen = vfs_open;
  vfs.szOsFile = (int)sizeof(struct wal_file) + g_unix->szOsFile;
  g_wal_methods = (sqlite3_io_methods){.iVersion = 1,
                                       .xClose = wal_close,
                                       .xRead = wal_read,
                                       .xWrite = wal_write,
                                       .xTruncate = wal_truncate,
                                       .xSync = wal_sync,
                                       .xFileSize = wal_size,
                                       .xLock = wal_lock,
                                       .xUnlock = wal_unlock,
                                       .xCheckReservedLock = wal_reserved,
                                       .xFileControl = wal_control,
                                       .xSectorSize = wal_sector,
                                       .xDeviceCharacteristics = wal_device};
  return sqlite3_vfs_register(&vfs, 0) == SQLITE_OK ? vfs.zName : 0;
}

static int g_frames;
static int on_commit(void* unused, sqlite3* db, const char* name, int frames) {
  (void)unused, (void)db, (void)name;
  g_frames = frames;
  return SQLITE_OK;
}

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One synced transaction of the statements in `sql` (separated by ';'), ?1 the key, ?2 now. */
static int transaction(sqlite3* db, const char* sql, const char* key) {
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0) != SQLITE_OK) return 0;
  const int64_t now = now_ms();
  const char* rest = sql;
  while (rest && *rest) {
    sqlite3_stmt* stmt = 0;
    if (sqlite3_prepare_v2(db, rest, -1, &stmt, &rest) != SQLITE_OK) goto fail;
    if (!stmt) break;
    sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_bind_parameter_count(stmt) >= 2) sqlite3_bind_int64(stmt, 2, now);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) goto fail;
  }
  return sqlite3_exec(db, "COMMIT", 0, 0, 0) == SQLITE_OK;
fail:
  sqlite3_exec(db, "ROLLBACK", 0, 0, 0);
  return 0;
}

static const char* k_claim =
    "SELECT status, attempt FROM records WHERE key = ?1;"
    "INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,"
    " owner_pid, owner_start, started_at, ttl_ms, request, note, pgid, pgid_start,"
    " attempt_token, owner_machine_id, owner_pid_ns, cgroup)"
    " SELECT ?1, fingerprint, kind, 'running', 1, owner_host, owner_boot_id, owner_pid,"
    " owner_start, ?2, ttl_ms, request, note, pgid, pgid_start, attempt_token, owner_machine_id,"
    " owner_pid_ns, cgroup FROM records WHERE key = 'done';"
    "INSERT INTO attempts (key, number, started_by, owner_host, owner_pid, started_at, outcome)"
    " SELECT ?1, 1, started_by, owner_host, owner_pid, ?2, 'running' FROM attempts"
    " WHERE key = 'done' LIMIT 1";
static const char* k_page = "UPDATE records SET replays = replays + 1 WHERE key = ?1";
static const char* k_outcome =
    "UPDATE records SET status = 'succeeded', finished_at = ?2, exit_code = 0,"
    " expires_at = ?2 + ttl_ms WHERE key = ?1 AND attempt = 1 AND status = 'running';"
    "UPDATE attempts SET outcome = 'succeeded', ended_at = ?2, exit_code = 0"
    " WHERE key = ?1 AND number = 1";

/* `true` from PATH; its exit status, or -1. */
static int run_true(void) {
  char* argv[] = {"true", 0};
  pid_t pid;
  int status = 0;
  if (posix_spawnp(&pid, "true", 0, 0, argv, environ) != 0) return -1;
  return waitpid(pid, &status, 0) == pid ? status : -1;
}

int main(int argc, char** argv) {
  const int run = argc == 4 && strcmp(argv[3], "run") == 0;
  const int page = argc == 4 && strcmp(argv[3], "page") == 0;
  if (argc != 4 || (!run && !page && strcmp(argv[3], "rm") != 0)) return 2;
  const char* vfs = register_vfs();
  sqlite3* db = 0;
  if (!vfs || sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, vfs) != SQLITE_OK) return 1;
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int*)0);
  sqlite3_exec(db, "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0", 0, 0, 0);
  sqlite3_wal_hook(db, on_commit, 0);
  int ok;
  if (page) {
    ok = transaction(db, k_page, argv[2]) && sqlite3_changes(db) == 1 && run_true() == 0 &&
         transaction(db, k_page, argv[2]) && sqlite3_changes(db) == 1;
  } else if (!run) {
    ok = transaction(db, "DELETE FROM records WHERE key = ?1", argv[2]);
  } else {
    ok = transaction(db, k_claim, argv[2]) && run_true() == 0 &&
         transaction(db, k_outcome, argv[2]) && sqlite3_changes(db) == 1;
  }
  if (ok && (int64_t)g_frames * (4096 + 24) > k_checkpoint_bytes)
    sqlite3_wal_checkpoint_v2(db, 0, SQLITE_CHECKPOINT_TRUNCATE, 0, 0);
  sqlite3_close(db);
  return ok ? 0 : 1;
}
