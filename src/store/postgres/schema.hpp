#pragma once
// The PostgreSQL store's schema: the version a database holds, and the migrations to this
// build's (their SQL in postgres/sql.hpp).
#include <cstdint>
#include <optional>

#include "store/postgres/connection.hpp"

namespace idem::store::postgres {

// The schema version the database holds (0: none yet); `lock`: its row locked until the
// transaction ends. Throws PgError for a version newer than this build's.
int schema_version(Connection& conn, bool lock);

// Creates or migrates the schema; returns the version found before (0: none). The fast path is
// one read, none when `found` is the version already read on this connection; otherwise one
// transaction (its lock_timeout `lock_timeout_ms`) that creates the version table if absent and
// locks its row, so concurrent first opens from any number of processes migrate once (the losers of
// a race to create the table retry). Throws PgError.
int migrate(Connection& conn, int64_t lock_timeout_ms, std::optional<int> found = std::nullopt);

// `version` as read from the database; throws PgError when it is newer than this build's.
int understood_version(int version);

}  // namespace idem::store::postgres
