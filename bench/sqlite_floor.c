/* bench/sqlite_floor.sh's program: what a replay asks of SQLite and nothing else.
 *   sqlite_floor PATH KEY        a replay: opens the store PATH, reads the record of KEY (every
 *                                column, as idem's replay does), writes a replay count unsynced
 *                                (synchronous=NORMAL, as idem's count), closes.
 * The write changes the row's bytes: SQLite writes no page, and commits nothing, for an UPDATE
 * that leaves them as they were (until 2026-12-07 this program set a column to itself, so its
 * replay wrote nothing, and the first-run floor it had then synced nothing: bench/claim_floor.c's
 * `page` is that floor now).
 * Its WAL is kept as idem keeps it: no automatic checkpoint, and a TRUNCATE checkpoint once the
 * WAL passes 256 KiB (until 2026-12-08 it never checkpointed, so a round of 300 runs grew the WAL
 * by a frame a run and every open rebuilt its index from all of them: the floor rose through the
 * round, most on the two-column store, which nothing else writes).
 * Exit 0 when the record was there. */
#include <sqlite3.h>
#include <string.h>

enum { k_checkpoint_bytes = 256 * 1024 };

static int g_frames;  // the WAL's length after the last commit (sqlite3_wal_hook)
static int on_commit(void* unused, sqlite3* db, const char* name, int frames) {
  (void)unused, (void)db, (void)name;
  g_frames = frames;
  return SQLITE_OK;
}

static int touch_record(sqlite3* db, const char* key) {
  sqlite3_stmt* update = 0;
  if (sqlite3_prepare_v2(db, "UPDATE records SET replays = replays + 1 WHERE key = ?1", -1,
                         &update, 0) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(update, 1, key, -1, SQLITE_STATIC);
  int done = sqlite3_step(update) == SQLITE_DONE && sqlite3_changes(db) == 1;
  sqlite3_finalize(update);
  return done;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  sqlite3* db = 0;
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, 0) != SQLITE_OK) return 1;
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int*)0); /* as idem: none at close */
  sqlite3_stmt* read = 0;
  if (sqlite3_prepare_v2(db, "SELECT * FROM records WHERE key = ?1", -1, &read, 0) != SQLITE_OK)
    return 1;
  sqlite3_bind_text(read, 1, argv[2], -1, SQLITE_STATIC);
  int found = 0;
  while (sqlite3_step(read) == SQLITE_ROW) found = 1;
  sqlite3_finalize(read);
  sqlite3_exec(db, "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0", 0, 0, 0);
  sqlite3_wal_hook(db, on_commit, 0);
  if (touch_record(db, argv[2]) && g_frames * (4096 + 24) > k_checkpoint_bytes)
    sqlite3_wal_checkpoint_v2(db, 0, SQLITE_CHECKPOINT_TRUNCATE, 0, 0);
  sqlite3_close(db);
  return found ? 0 : 1;
}
