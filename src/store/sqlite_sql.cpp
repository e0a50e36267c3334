#include "store/sqlite_sql.hpp"

#include <algorithm>

#include "core/record.hpp"

namespace idem::store::sqlite_sql {

namespace {

constexpr const char* k_record_columns =
    "SELECT key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid, "
    "owner_start, started_at, finished_at, ttl_ms, expires_at, exit_code, signal, timed_out, "
    "output_bytes, output_truncated, request, note, response, pgid, pgid_start, "
    "attempt_token, lease_expires, replay_failures, owner_machine_id, owner_pid_ns, replays, "
    "last_replay_at";

}  // namespace

const char* select_record(bool with_output) {
  // The rowid of the record's output in `outputs`, NULL when it has none (one index lookup).
  static const std::string with = std::string(k_record_columns) +
                                  ", (SELECT rowid FROM outputs WHERE outputs.key = records.key"
                                  " AND outputs.attempt = records.attempt)"
                                  " FROM records WHERE key = ?1";
  static const std::string without =
      std::string(k_record_columns) + ", NULL FROM records WHERE key = ?1";
  return (with_output ? with : without).c_str();
}

std::string count_keys_with_prefix(bool bounded, int64_t max) {
  std::string sql = "SELECT count(*) FROM (SELECT 1 FROM records WHERE key >= ?1";
  if (bounded) sql += " AND key < ?2";
  return sql + " LIMIT " + std::to_string(max) + ")";
}

std::string prefix_end(std::string prefix) {
  while (!prefix.empty() && uint8_t(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = char(uint8_t(prefix.back()) + 1);
  return prefix;
}

// Both gc queries read one partial index of non-running records: running ones are never seen.
std::string gc_expired(const char* what) {
  return std::string("SELECT ") + what +
         " FROM records INDEXED BY records_expiring"
         " WHERE status <> 'running' AND expires_at <= ?1";
}

// Finished records whose attempt ended before the cutoff ?2 (abandoned ones: began), the expired
// ones left out (gc_expired has them; so a dry run does not count them twice).
std::string gc_ended(const char* what) {
  return std::string("SELECT ") + what +
         " FROM records INDEXED BY records_by_end"
         " WHERE status <> 'running' AND coalesce(finished_at, started_at) <= ?2"
         " AND (expires_at IS NULL OR expires_at > ?1)";
}

std::string list(const ListQuery& q, bool by_key) {
  // ls's columns: no request, no output, no response (never read, so a listing costs the same
  // whatever the records hold).
  std::string sql =
      q.keys_only ? "SELECT key"
                  : "SELECT key, fingerprint, kind, status, attempt, owner_host, "
                    "owner_boot_id, owner_pid, owner_start, started_at, finished_at, ttl_ms, "
                    "expires_at, exit_code, signal, timed_out, output_bytes, "
                    "output_truncated, '', note, NULL, pgid, pgid_start, '', "
                    "lease_expires, replay_failures, owner_machine_id, owner_pid_ns, replays, "
                    "last_replay_at, NULL";
  // Newest first straight from records_by_recent, whose order is the listing's, stopping at the
  // limit; or a prefix's range of the key index, then sorted; or, for unfinished records only,
  // from records_unfinished, in the same order. SQLite uses a partial index only for a query whose
  // WHERE holds the index's own condition as a term, so it is spelled exactly as in the index.
  if (lists_unfinished_only(q))
    sql +=
        " FROM records INDEXED BY records_unfinished"
        " WHERE status IN ('running', 'abandoned')";
  else if (by_key)
    sql += " FROM records INDEXED BY sqlite_autoindex_records_1 WHERE 1";
  else
    sql += " FROM records INDEXED BY records_by_recent WHERE 1";
  if (!q.prefix.empty()) {
    sql += " AND key >= ?2";
    if (!prefix_end(q.prefix).empty()) sql += " AND key < ?3";
  }
  if (!q.kind.empty()) sql += " AND kind = ?4";
  if (q.since_ms > 0) sql += " AND started_at >= ?5";
  if (q.until_ms > 0) sql += " AND started_at < ?6";
  std::string live = "(expires_at IS NULL OR expires_at > ?1)";
  if (!q.statuses.empty()) {
    live += " AND status IN (";
    for (size_t i = 0; i < q.statuses.size(); ++i)
      live += (i ? ",'" : "'") + std::string(core::to_string(q.statuses[i])) + "'";
    live += ")";
  }
  const std::string expired = "expires_at <= ?1";
  sql += listing_condition(q, live, expired);
  // The cursor's bound first as a range of the index (started_at <= ?7), then its tie-break.
  if (q.after) sql += " AND started_at <= ?7 AND (started_at < ?7 OR key > ?8)";
  sql += " ORDER BY started_at DESC, key";
  if (q.limit > 0) sql += " LIMIT " + std::to_string(q.limit);
  return sql;
}

}  // namespace idem::store::sqlite_sql
