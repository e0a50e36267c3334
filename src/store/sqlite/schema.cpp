#include "store/sqlite/schema.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/key.hpp"
#include "store/sqlite/connection.hpp"
#include "store/sqlite/sql.hpp"

namespace idem::store::sqlite {

namespace {

// idem's own tables; any other (SQLite's internal sqlite_% aside) makes a file someone else's.
constexpr const char* k_own_tables[] = {"records",      "outputs",      "attempts",
                                        "serial_lines", "expectations", "findings"};

// A name read from a file for a one-line message: control characters shown as '?', long names
// cut.
std::string printable_name(std::string name) {
  for (char& c : name)
    if (uint8_t(c) < 0x20 || uint8_t(c) == 0x7f) c = '?';
  return core::display_key(name, 64);
}

}  // namespace

void refuse_newer_schema(const std::string& path, int version) {
  if (version > sqlite_sql::k_schema_version)
    throw StoreError("store " + path + " has schema version " + std::to_string(version) +
                     ", newer than this idem understands (" +
                     std::to_string(sqlite_sql::k_schema_version) + "); upgrade idem");
}

void refuse_foreign_file(sqlite3* db, const std::string& path, int32_t application_id,
                         int version) {
  if (application_id == k_application_id) return;
  std::string why;
  if (application_id != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", unsigned(uint32_t(application_id)));
    why = std::string("it holds another application_id ") + hex;
  } else {
    std::vector<std::string> others;
    bool has_records = false;
    Statement tables(db, sqlite_sql::k_schema_tables, path);
    while (tables.step()) {
      std::string name = tables.text_at(0);
      if (name == "records") has_records = true;
      if (std::find(std::begin(k_own_tables), std::end(k_own_tables), name) ==
          std::end(k_own_tables))
        others.push_back(std::move(name));
    }
    constexpr size_t k_named = 3;
    if (!others.empty()) {
      why = "it holds other tables: ";
      for (size_t i = 0; i < others.size() && i < k_named; ++i)
        why += (i ? ", " : "") + printable_name(others[i]);
      if (others.size() > k_named)
        why += " and " + std::to_string(others.size() - k_named) + " more";
    } else if (version != 0 && !has_records) {
      why = "it has user_version " + std::to_string(version) + " but no records table";
    }
  }
  if (why.empty()) return;
  // Closing then runs SQLite's checkpoint on close again, which removes the -wal and -shm that
  // reading a WAL-mode file made: the file is not idem's, so idem's reason to skip it (see
  // sqlite/store.cpp) does not hold, and nothing of idem's may be left beside it.
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
  throw StoreError("store " + path + " is not an idem store (" + why +
                   "): give idem a file of its own");
}

int user_version(sqlite3* db, const std::string& path) {
  Statement v(db, sqlite_sql::k_user_version, path);
  v.step();
  return int(v.int_at(0));
}

int32_t application_id(sqlite3* db, const std::string& path) {
  Statement v(db, sqlite_sql::k_application_id, path);
  v.step();
  return int32_t(v.int_at(0));
}

void migrate(sqlite3* db, const std::string& path, std::mutex& writers, int opened_version,
             int32_t opened_application_id) {
  if (opened_version == sqlite_sql::k_schema_version && opened_application_id == k_application_id)
    return;
  Transaction tx(db, path, writers);
  // Another process may have migrated, or put something else in the file, while we waited for
  // the writer lock.
  int version = user_version(db, path);
  refuse_foreign_file(db, path, application_id(db, path), version);
  refuse_newer_schema(path, version);
  for (; version < sqlite_sql::k_schema_version; ++version)
    exec(db, sqlite_sql::k_migrations[version], path);
  exec(db, ("PRAGMA application_id = " + std::to_string(k_application_id)).c_str(), path);
  exec(db, ("PRAGMA user_version = " + std::to_string(sqlite_sql::k_schema_version)).c_str(), path);
  tx.commit();
}

}  // namespace idem::store::sqlite
