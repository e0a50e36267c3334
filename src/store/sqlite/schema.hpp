#pragma once
// The SQLite store's schema: which files are idem stores (contract §2: a file that is not one is
// refused, never made one), the version a file holds, and the migrations to this build's version
// (their SQL in sqlite/sql.hpp).
#include <sqlite3.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace idem::store::sqlite {

// PRAGMA application_id of an idem store: "IDEM". Every migration transaction sets it, so stores
// made or migrated since carry it; a store made before carries 0, like any SQLite file that never
// set one. A file with another id belongs to another program and is refused (contract §2).
inline constexpr int32_t k_application_id = 0x4944454d;

// PRAGMA user_version and application_id of the store at `path`, open as `db`.
int user_version(sqlite3* db, const std::string& path);
int32_t application_id(sqlite3* db, const std::string& path);

// Refuses a store whose schema VERSION is newer than this build's.
void refuse_newer_schema(const std::string& path, int version);

// contract §2: a file that is not an idem store is refused, not made one. Idem's application id
// says it is one. A file without an id (0) is a new store when it holds nothing at all, or a
// store made before idem set the id when its tables are idem's and, past version 0, include
// `records`; anything else (another program's tables, a user_version some other program set)
// is someone else's file. VERSION: the file's user_version.
void refuse_foreign_file(sqlite3* db, const std::string& path, int32_t application_id, int version);

// Brings the store to this build's schema. The version and id read at open (OPENED_*) are enough
// when they are the current ones: no process ever lowers the version or clears the id. Else the
// writer lock is taken (behind this process's other WRITERS of the file) and both read again.
void migrate(sqlite3* db, const std::string& path, std::mutex& writers, int opened_version,
             int32_t opened_application_id);

}  // namespace idem::store::sqlite
