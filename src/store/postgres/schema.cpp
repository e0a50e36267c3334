#include "store/postgres/schema.hpp"

#include <string>

#include "store/postgres/sql.hpp"

namespace idem::store::postgres {

namespace {

void migrate_locked(Connection& conn, int64_t lock_timeout_ms) {
  Transaction tx(conn, lock_timeout_ms);
  conn.exec(postgres_sql::k_create_schema_table);
  conn.exec(postgres_sql::k_insert_schema_row);
  int version = schema_version(conn, true);
  for (; version < postgres_sql::k_schema_version; ++version)
    conn.exec_script(postgres_sql::k_migrations[version]);
  conn.exec(postgres_sql::k_set_schema_version, Params().integer(postgres_sql::k_schema_version));
  tx.commit();
}

}  // namespace

int schema_version(Connection& conn, bool lock) {
  Result r = conn.exec(postgres_sql::schema_version(lock));
  return understood_version(r.rows() == 0 ? 0 : int(r.int_at(0, 0)));
}

int understood_version(int version) {
  if (version > postgres_sql::k_schema_version)
    throw PgError{"XX000", "schema version " + std::to_string(version) +
                               " is newer than this idem understands (" +
                               std::to_string(postgres_sql::k_schema_version) + "); upgrade idem"};
  return version;
}

int migrate(Connection& conn, int64_t lock_timeout_ms, std::optional<int> found) {
  int opened = 0;
  try {
    opened = found ? understood_version(*found) : schema_version(conn, false);
    if (opened == postgres_sql::k_schema_version) return opened;
  } catch (const PgError& e) {
    if (e.sqlstate != "42P01") throw;  // undefined_table: a new database
  }
  for (int tries = 1;; ++tries) {
    try {
      migrate_locked(conn, lock_timeout_ms);
      return opened;
    } catch (const PgError& e) {
      // 23505/42P07/42710: another process created the table at the same moment (42710 is
      // "type ... already exists": its row type was committed first); it exists now.
      const bool raced = e.sqlstate == "23505" || e.sqlstate == "42P07" || e.sqlstate == "42710";
      if (!(raced || e.retryable()) || tries == k_serialization_tries) throw;
    }
  }
}

}  // namespace idem::store::postgres
