/* bench/sqlite_floor.sh's program: what a replay, or a first run, asks of SQLite and nothing else.
 *   sqlite_floor PATH KEY        a replay: opens the store PATH, reads the record of KEY (every
 *                                column, as idem's replay does), writes a replay count unsynced
 *                                (synchronous=NORMAL, as idem's count), closes.
 *   sqlite_floor PATH KEY run    a first run's floor: opens the store, one synced commit that
 *                                changes the record (less than a claim writes: one column no
 *                                index holds), starts `true` from PATH and waits for it, a second
 *                                synced commit (the outcome), closes.
 * Exit 0 when the record was there (and `true` exited 0). */
#include <spawn.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/wait.h>

extern char** environ;

static int touch_record(sqlite3* db, const char* key) {
  sqlite3_stmt* update = 0;
  if (sqlite3_prepare_v2(db, "UPDATE records SET fingerprint = fingerprint WHERE key = ?1", -1,
                         &update, 0) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(update, 1, key, -1, SQLITE_STATIC);
  int done = sqlite3_step(update) == SQLITE_DONE && sqlite3_changes(db) == 1;
  sqlite3_finalize(update);
  return done;
}

static int first_run(sqlite3* db, const char* key) {
  sqlite3_exec(db, "PRAGMA synchronous = FULL", 0, 0, 0);
  if (!touch_record(db, key)) return 1;
  pid_t pid;
  char* argv[] = {"true", 0};
  if (posix_spawnp(&pid, "true", 0, 0, argv, environ) != 0) return 1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || status != 0) return 1;
  return touch_record(db, key) ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && strcmp(argv[3], "run") == 0)) return 2;
  sqlite3* db = 0;
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, 0) != SQLITE_OK) return 1;
  if (argc == 4) {
    int rc = first_run(db, argv[2]);
    sqlite3_close(db);
    return rc;
  }
  sqlite3_stmt* read = 0;
  if (sqlite3_prepare_v2(db, "SELECT * FROM records WHERE key = ?1", -1, &read, 0) != SQLITE_OK)
    return 1;
  sqlite3_bind_text(read, 1, argv[2], -1, SQLITE_STATIC);
  int found = 0;
  while (sqlite3_step(read) == SQLITE_ROW) found = 1;
  sqlite3_finalize(read);
  sqlite3_exec(db, "PRAGMA synchronous = NORMAL", 0, 0, 0);
  touch_record(db, argv[2]);
  sqlite3_close(db);
  return found ? 0 : 1;
}
