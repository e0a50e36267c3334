/* bench/sqlite_floor.sh's program: what a replay asks of SQLite and nothing else. Opens the store
 * PATH, reads the record of KEY (every column, as idem's replay does), writes a replay count
 * unsynced (synchronous=NORMAL, as idem's count), closes. Exit 0 when the record was there.
 *   sqlite_floor PATH KEY */
#include <sqlite3.h>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  sqlite3* db = 0;
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, 0) != SQLITE_OK) return 1;
  sqlite3_stmt* read = 0;
  if (sqlite3_prepare_v2(db, "SELECT * FROM records WHERE key = ?1", -1, &read, 0) != SQLITE_OK)
    return 1;
  sqlite3_bind_text(read, 1, argv[2], -1, SQLITE_STATIC);
  int found = 0;
  while (sqlite3_step(read) == SQLITE_ROW) found = 1;
  sqlite3_finalize(read);
  sqlite3_stmt* count = 0;
  sqlite3_exec(db, "PRAGMA synchronous = NORMAL", 0, 0, 0);
  if (sqlite3_prepare_v2(db, "UPDATE records SET fingerprint = fingerprint WHERE key = ?1", -1,
                         &count, 0) != SQLITE_OK)
    return 1;
  sqlite3_bind_text(count, 1, argv[2], -1, SQLITE_STATIC);
  sqlite3_step(count);
  sqlite3_finalize(count);
  sqlite3_close(db);
  return found ? 0 : 1;
}
