#include "store/sqlite/sql.hpp"

#include <algorithm>

#include "core/record.hpp"

namespace idem::store::sqlite_sql {

namespace {

constexpr const char* k_record_columns =
    "SELECT key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid, "
    "owner_start, started_at, finished_at, ttl_ms, expires_at, exit_code, signal, timed_out, "
    "output_bytes, output_truncated, request, note, response, pgid, pgid_start, "
    "attempt_token, lease_expires, replay_failures, owner_machine_id, owner_pid_ns, replays, "
    "last_replay_at, cgroup, serial_group, queue_seq, superseded_by, trace_id, span_id, "
    "parent_span_id";

}  // namespace

const char* select_record_columns() { return k_record_columns; }

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

std::string queued_groups(bool bounded) {
  // The lines' lengths are the triggers' counts; the oldest is the head's, read from the line's
  // index.
  std::string sql =
      "SELECT l.serial_group, l.queued,"
      " (SELECT r.started_at FROM records r WHERE r.serial_group = l.serial_group"
      "  AND r.status = 'queued' ORDER BY r.queue_seq LIMIT 1)"
      " FROM serial_lines l WHERE l.queued > 0 AND l.serial_group >= ?1";
  if (bounded) sql += " AND l.serial_group < ?2";
  return sql + " ORDER BY l.serial_group LIMIT ?3";
}

std::string prefix_end(std::string prefix) {
  while (!prefix.empty() && uint8_t(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = char(uint8_t(prefix.back()) + 1);
  return prefix;
}

// Both gc queries read one partial index of the records gc may delete: running and queued ones
// are never seen.
std::string gc_expired(const char* what) {
  return std::string("SELECT ") + what +
         " FROM records INDEXED BY records_expiring"
         " WHERE " IDEM_SQLITE_COLLECTABLE " AND expires_at <= ?1";
}

// Finished records whose attempt ended before the cutoff ?2 (abandoned ones: began), the expired
// ones left out (gc_expired has them; so a dry run does not count them twice).
std::string gc_ended(const char* what) {
  return std::string("SELECT ") + what +
         " FROM records INDEXED BY records_by_end"
         " WHERE " IDEM_SQLITE_COLLECTABLE
         " AND coalesce(finished_at, started_at) <= ?2"
         " AND (expires_at IS NULL OR expires_at > ?1)";
}

namespace {

const char* index_of(ListDrive drive) {
  switch (drive) {
    case ListDrive::status:
      return "records_by_status";
    case ListDrive::kind:
      return "records_by_kind";
    case ListDrive::result:
      return "records_by_result";
    case ListDrive::unfinished:
      return "records_unfinished";
    case ListDrive::key:
      return "sqlite_autoindex_records_1";
    case ListDrive::recent:
      break;
  }
  return "records_by_recent";
}

// FROM, the index, and the terms its entries are read by: its own condition (for a partial one,
// spelled exactly as in the index, or SQLite does not use it), then the range of started_at and
// the cursor (first as a range of the index, then its tie-break).
std::string drive_terms(const ListQuery& q, ListDrive drive) {
  std::string sql = std::string(" FROM records INDEXED BY ") + index_of(drive) + " WHERE 1";
  if (drive == ListDrive::unfinished) sql += " AND " IDEM_SQLITE_UNFINISHED;
  if (drive == ListDrive::status)
    sql += " AND " IDEM_SQLITE_STATUS_INDEXED " AND status = '" +
           std::string(core::to_string(q.statuses.front())) + "'";
  if (drive == ListDrive::kind) sql += " AND kind = ?4";
  if (drive == ListDrive::result) sql += " AND " IDEM_SQLITE_RESULT_CLASS " = ?9";
  if (q.since_ms > 0) sql += " AND started_at >= ?5";
  if (q.until_ms > 0) sql += " AND started_at < ?6";
  if (q.after) sql += " AND started_at <= ?7 AND (started_at < ?7 OR key > ?8)";
  return sql;
}

ListDrive default_drive(const ListQuery& q, bool by_key) {
  if (lists_unfinished_only(q)) return ListDrive::unfinished;
  if (by_key) return ListDrive::key;
  const std::vector<ListDrive> drives = list_drives(q);
  return drives.empty() ? ListDrive::recent : drives.front();
}

}  // namespace

std::string list(const ListQuery& q, ListDrive drive, bool stop) {
  // ls's columns: no request, no output (never read, so a listing costs the same whatever the
  // records hold), and the stored answer, a status and a few headers, for its status.
  std::string sql =
      q.keys_only ? "SELECT key"
                  : "SELECT key, fingerprint, kind, status, attempt, owner_host, "
                    "owner_boot_id, owner_pid, owner_start, started_at, finished_at, ttl_ms, "
                    "expires_at, exit_code, signal, timed_out, output_bytes, "
                    "output_truncated, '', note, response, pgid, pgid_start, '', "
                    "lease_expires, replay_failures, owner_machine_id, owner_pid_ns, replays, "
                    "last_replay_at, cgroup, serial_group, queue_seq, superseded_by, trace_id, "
                    "span_id, parent_span_id, NULL";
  // Newest first straight from an index whose order is the listing's (records_by_recent, or the
  // index of one condition: records_by_status, _by_kind, _by_result, records_unfinished),
  // stopping at the limit; or a rare prefix's range of the key index, then sorted.
  sql += drive_terms(q, drive);
  if (!q.prefix.empty()) {
    sql += " AND key >= ?2";
    if (!prefix_end(q.prefix).empty()) sql += " AND key < ?3";
  }
  if (!q.kind.empty() && drive != ListDrive::kind) sql += " AND kind = ?4";
  if (!q.result.empty() && drive != ListDrive::result)
    sql += " AND " IDEM_SQLITE_RESULT_CLASS " = ?9";
  std::string live = "(expires_at IS NULL OR expires_at > ?1)";
  if (!q.statuses.empty()) {
    live += " AND status IN (";
    for (size_t i = 0; i < q.statuses.size(); ++i)
      live += (i ? ",'" : "'") + std::string(core::to_string(q.statuses[i])) + "'";
    live += ")";
  }
  const std::string expired = "expires_at <= ?1";
  sql += listing_condition(q, live, expired);
  if (stop) sql += " AND started_at >= ?10 AND (started_at > ?10 OR key <= ?11)";
  sql += " ORDER BY started_at DESC, key";
  if (q.limit > 0) sql += " LIMIT " + std::to_string(q.limit);
  return sql;
}

std::string list(const ListQuery& q, bool by_key) {
  return list(q, default_drive(q, by_key), false);
}

std::string list_count(const ListQuery& q, ListDrive drive) {
  return "SELECT count(*) FROM (SELECT 1" + drive_terms(q, drive) + " LIMIT ?12)";
}

std::string list_stop(const ListQuery& q, ListDrive drive) {
  return "SELECT started_at, key" + drive_terms(q, drive) +
         " ORDER BY started_at DESC, key LIMIT 1 OFFSET ?12 - 1";
}

}  // namespace idem::store::sqlite_sql
