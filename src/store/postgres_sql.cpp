#include "store/postgres_sql.hpp"

#include <algorithm>

#include "core/record.hpp"

namespace idem::store::postgres_sql {

const char* schema_version(bool lock) {
  return lock ? "SELECT version FROM idem_schema WHERE id = 1 FOR UPDATE"
              : "SELECT version FROM idem_schema WHERE id = 1";
}

const char* select_record(bool with_output, bool for_update) {
  static const std::string head = std::string("SELECT ") + k_record_columns;
  static const std::string statements[] = {
      head + ", NULL::bytea FROM idem_records WHERE key = $1",
      head + ", NULL::bytea FROM idem_records WHERE key = $1 FOR UPDATE",
      head + ", output FROM idem_records WHERE key = $1",
      head + ", output FROM idem_records WHERE key = $1 FOR UPDATE",
  };
  return statements[(with_output ? 2 : 0) + (for_update ? 1 : 0)].c_str();
}

std::string like_prefix(const std::string& prefix) {
  std::string pattern;
  for (char c : prefix) {
    if (c == '\\' || c == '%' || c == '_') pattern += '\\';
    pattern += c;
  }
  return pattern + '%';
}

std::string list_page(const ListQuery& q, bool after) {
  std::string sql = std::string("SELECT ") +
                    (q.keys_only ? "key, NULL, NULL, NULL, NULL, NULL, "
                                   "NULL, NULL, NULL, started_at"
                                 : k_list_columns) +
                    " FROM idem_records WHERE true";
  // The partial index's own condition, spelled out: the planner then knows the index holds every
  // row wanted without proving it from `status = ANY ($2)`, whose value a generic plan lacks.
  if (lists_unfinished_only(q)) sql += " AND status IN ('running', 'abandoned')";
  if (!q.prefix.empty()) sql += " AND key LIKE $3";
  if (after) sql += " AND (started_at < $4 OR (started_at = $4 AND key > $5))";
  if (!q.kind.empty()) sql += " AND kind = $7";
  if (q.since_ms > 0) sql += " AND started_at >= $8";
  if (q.until_ms > 0) sql += " AND started_at < $9";
  std::string live = "(expires_at IS NULL OR expires_at > $1)";
  if (!q.statuses.empty()) live += " AND status = ANY ($2)";
  const std::string expired = "expires_at <= $1";
  sql += listing_condition(q, live, expired);
  return sql + " ORDER BY started_at DESC, key LIMIT $6";
}

std::string gc_count(bool ended) {
  return ended ? "SELECT count(*) FROM idem_records WHERE status <> 'running'"
                 " AND coalesce(finished_at, started_at) <= $2"
                 " AND (expires_at IS NULL OR expires_at > $1)"
               : "SELECT count(*) FROM idem_records WHERE status <> 'running'"
                 " AND expires_at <= $1";
}

// The rows are picked through the partial index and locked with SKIP LOCKED: a row a claim holds
// (a retry of an expired key) is left for the next gc rather than waited for.
std::string gc_delete_batch(bool ended) {
  const std::string picked = ended
                                 ? "status <> 'running' AND coalesce(finished_at, started_at) <= $2"
                                   " AND (expires_at IS NULL OR expires_at > $1)"
                                 : "status <> 'running' AND expires_at <= $1";
  return "DELETE FROM idem_records WHERE key IN (SELECT key FROM idem_records WHERE " + picked +
         " LIMIT $3 FOR UPDATE SKIP LOCKED) AND status <> 'running'";
}

}  // namespace idem::store::postgres_sql
