#pragma once
// The SQL the PostgreSQL store runs, apart from the connection code so that it reads as one
// schema and so that tests can EXPLAIN the very text the store runs (the listing and gc go
// through indexes at any size). Every value is a $n parameter: nothing a user gives is ever
// spliced into a statement.
#include <iterator>
#include <string>

#include "store/store.hpp"

namespace idem::store::postgres_sql {

// The schema version this build creates and understands.
inline constexpr int k_schema_version = 4;

// Creates the version table if absent; run in the migration's transaction.
inline constexpr const char* k_create_schema_table = R"sql(
  CREATE TABLE IF NOT EXISTS idem_schema (
    id      integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
  ))sql";

// Migrations from version i to i+1, applied in order in one transaction that holds the lock on
// idem_schema's one row. Never edit a published step: add one and bump k_schema_version.
inline constexpr const char* k_migrations[] = {
    // 0 -> 1: the records table. Times are Unix ms (bigint) as the Store interface gives them;
    // key is COLLATE "C" so that listing ties and prefixes are byte order, as on SQLite.
    // idem_records_expiring and idem_records_by_end are what gc walks (partial: running records
    // are never in them); idem_records_by_recent is ls's order exactly, so no sort.
    R"sql(
    CREATE TABLE idem_records (
      key              text COLLATE "C" NOT NULL PRIMARY KEY,
      fingerprint      text    NOT NULL,
      kind             text    NOT NULL,
      status           text    NOT NULL
                       CHECK (status IN ('running', 'succeeded', 'failed', 'abandoned')),
      attempt          bigint  NOT NULL,
      owner_host       text    NOT NULL,
      owner_boot_id    text    NOT NULL,
      owner_pid        bigint  NOT NULL,
      owner_start      bigint  NOT NULL,
      started_at       bigint  NOT NULL,
      finished_at      bigint,
      ttl_ms           bigint  NOT NULL,
      expires_at       bigint,
      exit_code        bigint,
      signal           bigint,
      timed_out        boolean NOT NULL DEFAULT false,
      output           bytea,
      output_bytes     bigint  NOT NULL DEFAULT 0,
      output_truncated boolean NOT NULL DEFAULT false,
      request          text    NOT NULL DEFAULT '{}',
      note             text    NOT NULL DEFAULT '',
      response         text,
      pgid             bigint,
      pgid_start       bigint,
      attempt_token    text    NOT NULL DEFAULT '',
      lease_expires    bigint
    );
    CREATE INDEX idem_records_expiring ON idem_records (expires_at) WHERE status <> 'running';
    CREATE INDEX idem_records_by_end ON idem_records (coalesce(finished_at, started_at), expires_at)
      WHERE status <> 'running';
    CREATE INDEX idem_records_by_recent ON idem_records (started_at DESC, key);
    )sql",
    // 1 -> 2: the replay policy the attempt was claimed under (true: --replay-failures, its
    // failure is final for every later attempt); false for the records from before, whose
    // failures ran again at every later attempt without the flag. A column with a constant
    // default is added without rewriting the table (PostgreSQL 11+).
    R"sql(
    ALTER TABLE idem_records ADD COLUMN replay_failures boolean NOT NULL DEFAULT false;
    )sql",
    // 2 -> 3: the unfinished records (running and abandoned) in ls's order, for `ls --status
    // running` and `idem doctor`, which otherwise walk idem_records_by_recent through every
    // finished record. Partial, so the finished records, nearly all of them, are never in it.
    // Built in the migration's transaction (not CONCURRENTLY, which a transaction cannot run):
    // writes wait for the one read of the table it takes.
    R"sql(
    CREATE INDEX idem_records_unfinished ON idem_records (started_at DESC, key)
      WHERE status IN ('running', 'abandoned');
    )sql",
    // 3 -> 4: the owner's machine id and pid namespace (core::Owner), so that a twin host of the
    // same name, or another container on the same kernel, never judges an owner by a pid it
    // cannot see. Records from before get '' and 0: their pid is never judged (proc::owner_gone).
    // Constant defaults: no rewrite of the table.
    R"sql(
    ALTER TABLE idem_records ADD COLUMN owner_machine_id text NOT NULL DEFAULT '';
    ALTER TABLE idem_records ADD COLUMN owner_pid_ns bigint NOT NULL DEFAULT 0;
    )sql",
};
static_assert(std::size(k_migrations) == k_schema_version);

// A record's columns in the order the store reads them; `output` last (NULL where not needed).
inline constexpr const char* k_record_columns =
    "key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid, owner_start, "
    "started_at, finished_at, ttl_ms, expires_at, exit_code, signal, timed_out, output_bytes, "
    "output_truncated, request, note, response, pgid, pgid_start, attempt_token, lease_expires, "
    "replay_failures, owner_machine_id, owner_pid_ns";
// The same for ls: no request, response or token (never listed).
inline constexpr const char* k_list_columns =
    "key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid, owner_start, "
    "started_at, finished_at, ttl_ms, expires_at, exit_code, signal, timed_out, output_bytes, "
    "output_truncated, '', note, NULL, pgid, pgid_start, '', lease_expires, replay_failures, "
    "owner_machine_id, owner_pid_ns, NULL::bytea";

// The LIKE pattern matching exactly the keys that start with `prefix` (\, % and _ escaped).
std::string like_prefix(const std::string& prefix);

// Whether the listing asks for unfinished records alone (running, abandoned; none expired), which
// list_page then reads from their partial index, idem_records_unfinished.
bool lists_unfinished_only(const ListQuery& query);

// One page of the listing, newest first (started_at DESC, key), keyset-paginated: $1 now (ms),
// $2 the statuses wanted (a text[]), $3 the prefix's LIKE pattern, $4 and $5 the last row of
// the previous page (started_at, key), $6 the page size. `after` says whether $4/$5 apply.
std::string list_page(const ListQuery& query, bool after);

// gc: $1 now, $2 the --older-than cutoff, $3 the batch size. The expired records, or (`ended`)
// the finished ones older than the cutoff that have not expired; counted (a dry run), or one
// batch of them deleted, skipping rows a claim holds locked.
std::string gc_count(bool ended);
std::string gc_delete_batch(bool ended);

}  // namespace idem::store::postgres_sql
