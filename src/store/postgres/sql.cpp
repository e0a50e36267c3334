#include "store/postgres/sql.hpp"

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

std::string list_page(const ListQuery& q, bool after, bool stop) {
  std::string sql = std::string("SELECT ") +
                    (q.keys_only ? "key, NULL, NULL, NULL, NULL, NULL, "
                                   "NULL, NULL, NULL, started_at"
                                 : k_list_columns) +
                    " FROM idem_records WHERE true";
  // The partial index's own condition, spelled out: the planner then knows the index holds every
  // row wanted without proving it from `status = ANY ($2)`, whose value a generic plan lacks.
  if (lists_unfinished_only(q)) sql += " AND " IDEM_PG_UNFINISHED;
  // So too the finished records' (one status wanted: that index's entries are all of it).
  const std::vector<ListDrive> drives = list_drives(q);
  if (std::find(drives.begin(), drives.end(), ListDrive::status) != drives.end())
    sql += " AND " IDEM_PG_STATUS_INDEXED " AND status = '" +
           std::string(core::to_string(q.statuses.front())) + "'";
  if (!q.prefix.empty()) sql += " AND key LIKE $3";
  if (after) sql += " AND (started_at < $4 OR (started_at = $4 AND key > $5))";
  if (!q.kind.empty()) sql += " AND kind = $7";
  if (q.since_ms > 0) sql += " AND started_at >= $8";
  if (q.until_ms > 0) sql += " AND started_at < $9";
  if (!q.result.empty()) sql += " AND " IDEM_PG_RESULT_CLASS " = $10";
  if (stop) sql += " AND started_at >= $11 AND (started_at > $11 OR key <= $12)";
  std::string live = "(expires_at IS NULL OR expires_at > $1)";
  if (!q.statuses.empty()) live += " AND status = ANY ($2)";
  const std::string expired = "expires_at <= $1";
  sql += listing_condition(q, live, expired);
  return sql + " ORDER BY started_at DESC, key LIMIT $6";
}

namespace {

// The terms the entries of `drive`'s index are read by: its condition, the range of started_at
// and the cursor; walking the newest-first index, the prefix too (the planner may read a rare
// one from the key index).
std::string drive_terms(const ListQuery& q, ListDrive drive) {
  std::string sql = " FROM idem_records WHERE true";
  if (drive == ListDrive::unfinished) sql += " AND " IDEM_PG_UNFINISHED;
  if (drive == ListDrive::status)
    sql += " AND " IDEM_PG_STATUS_INDEXED " AND status = '" +
           std::string(core::to_string(q.statuses.front())) + "'";
  if (drive == ListDrive::kind) sql += " AND kind = $7";
  if (drive == ListDrive::result) sql += " AND " IDEM_PG_RESULT_CLASS " = $10";
  if (drive == ListDrive::recent && !q.prefix.empty()) sql += " AND key LIKE $3";
  if (q.after) sql += " AND (started_at < $4 OR (started_at = $4 AND key > $5))";
  if (q.since_ms > 0) sql += " AND started_at >= $8";
  if (q.until_ms > 0) sql += " AND started_at < $9";
  return sql;
}

}  // namespace

std::string list_count(const ListQuery& q, ListDrive drive) {
  return "SELECT count(*) FROM (SELECT 1" + drive_terms(q, drive) + " LIMIT $13) AS entries";
}

std::string list_stop(const ListQuery& q, ListDrive drive) {
  return "SELECT started_at, key" + drive_terms(q, drive) +
         " ORDER BY started_at DESC, key OFFSET $13 - 1 LIMIT 1";
}

std::string gc_count(bool ended) {
  return ended ? "SELECT count(*) FROM idem_records WHERE " IDEM_PG_COLLECTABLE
                 " AND coalesce(finished_at, started_at) <= $2"
                 " AND (expires_at IS NULL OR expires_at > $1)"
               : "SELECT count(*) FROM idem_records WHERE " IDEM_PG_COLLECTABLE
                 " AND expires_at <= $1";
}

// The rows are picked through the partial index and locked with SKIP LOCKED: a row a claim holds
// (a retry of an expired key) is left for the next gc rather than waited for.
std::string gc_delete_batch(bool ended) {
  const std::string picked = ended ? IDEM_PG_COLLECTABLE
                                 " AND coalesce(finished_at, started_at) <= $2"
                                 " AND (expires_at IS NULL OR expires_at > $1)"
                                   : IDEM_PG_COLLECTABLE " AND expires_at <= $1";
  return "DELETE FROM idem_records WHERE key IN (SELECT key FROM idem_records WHERE " + picked +
         " LIMIT $3 FOR UPDATE SKIP LOCKED) AND " IDEM_PG_COLLECTABLE;
}

std::string select_group_line() {
  return std::string("SELECT ") + k_record_columns + ", NULL::bytea" + k_group_line_suffix;
}

std::string select_group_record(bool runner) {
  return std::string("SELECT ") + k_record_columns + ", NULL::bytea" +
         (runner ? k_group_runner_suffix : k_group_head_suffix);
}

}  // namespace idem::store::postgres_sql
