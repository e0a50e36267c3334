#pragma once
// All the SQL the PostgreSQL store runs (the transactions' BEGIN, COMMIT and ROLLBACK aside, in
// postgres/connection.hpp), apart from the connection code so that it reads as one
// schema and so that tests can EXPLAIN the very text the store runs (the listing and gc go
// through indexes at any size). Every value is a $n parameter: nothing a user gives is ever
// spliced into a statement.
#include <iterator>
#include <string>

#include "store/history_sql.hpp"
#include "store/listing.hpp"
#include "store/store.hpp"

namespace idem::store::postgres_sql {

// The schema version this build creates and understands.
inline constexpr int k_schema_version = 12;

// Creates the version table if absent; run in the migration's transaction.
inline constexpr const char* k_create_schema_table = R"sql(
  CREATE TABLE IF NOT EXISTS idem_schema (
    id      integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
  ))sql";

// A key's history entry made from its record as it stands (the migration to version 5, and
// import): see store/history_sql.hpp.
#define IDEM_PG_HISTORY_OF_RECORDS                         \
  "INSERT INTO idem_attempts " IDEM_HISTORY_INSERT_COLUMNS \
  " SELECT " IDEM_HISTORY_COLUMNS_OF_RECORD                \
  ", (response::json ->> 'status')::bigint, note "         \
  "FROM idem_records"

// A record's result class (core::result_class) as SQL: the listing's `result` condition and the
// index of it spell it alike, so that the planner matches the one to the other.
#define IDEM_PG_RESULT_CLASS                                                                   \
  "(CASE WHEN response IS NOT NULL THEN ((response::json ->> 'status')::integer / 100)::text " \
  "|| 'xx' WHEN exit_code = 0 THEN 'exit0' "                                                   \
  "WHEN exit_code IS NOT NULL OR signal IS NOT NULL OR timed_out THEN 'exit_nonzero' END)"

// The statuses of the partial indexes, spelled in the queries exactly as in the indexes: records
// still to be decided (running, abandoned, queued), finished ones of a status with an index of
// its own, and the ones gc may delete (never a running or a queued one).
#define IDEM_PG_UNFINISHED "status IN ('running', 'abandoned', 'queued')"
#define IDEM_PG_STATUS_INDEXED "status IN ('succeeded', 'failed', 'superseded')"
#define IDEM_PG_COLLECTABLE "status NOT IN ('running', 'queued')"

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
    // 4 -> 5: the attempt history (core::HistoryEntry), one row per attempt, keyed by the key and
    // the attempt's place in it (a key's history is one range of the primary key), deleted with
    // its record by the foreign key's cascade (rm, gc, a released first attempt). Each record
    // from before gets its current attempt as its history. And the replays counted per key
    // (Store::count_replays): constant defaults, no rewrite of idem_records.
    R"sql(
    CREATE TABLE idem_attempts (
      key         text COLLATE "C" NOT NULL
                  REFERENCES idem_records (key) ON DELETE CASCADE,
      number      bigint NOT NULL,
      started_by  text   NOT NULL,
      owner_host  text   NOT NULL,
      owner_pid   bigint NOT NULL,
      started_at  bigint NOT NULL,
      ended_at    bigint,
      outcome     text   NOT NULL
                  CHECK (outcome IN ('running', 'succeeded', 'failed', 'abandoned')),
      reason      text   NOT NULL DEFAULT '',
      exit_code   bigint,
      signal      bigint,
      http_status bigint,
      note        text   NOT NULL DEFAULT '',
      PRIMARY KEY (key, number)
    );
    )sql" IDEM_PG_HISTORY_OF_RECORDS R"sql(;
    ALTER TABLE idem_records ADD COLUMN replays bigint NOT NULL DEFAULT 0;
    ALTER TABLE idem_records ADD COLUMN last_replay_at bigint;
    )sql",
    // 5 -> 6: an index per condition of the page's and ls's filters, each in the listing's order
    // after its condition, so that a filter reads its own records newest first (a rare one too)
    // instead of walking idem_records_by_recent through all the others: the status (finished
    // records only, partial as idem_records_unfinished is for the others), the kind
    // (the front), and the result class (IDEM_PG_RESULT_CLASS). CREATE INDEX sorts within
    // maintenance_work_mem, spilling to disk beyond it.
    R"sql(
    CREATE INDEX idem_records_by_status ON idem_records (status, started_at DESC, key)
      WHERE status IN ('succeeded', 'failed');
    CREATE INDEX idem_records_by_kind ON idem_records (kind, started_at DESC, key);
    CREATE INDEX idem_records_by_result ON idem_records ()sql" IDEM_PG_RESULT_CLASS R"sql(,
                                                         started_at DESC, key);
    )sql",
    // 6 -> 7: the attempt's cgroup beside its process group (core::ProcessGroup::cgroup).
    R"sql(
    ALTER TABLE idem_records ADD COLUMN cgroup text;
    )sql",
    // 7 -> 8: serial groups (SPEC §9). Two statuses more, queued and superseded (the CHECK is
    // made again: validating it reads the table once); the group, the place in its line (drawn
    // from idem_queue_seq) and the key that superseded a queued one. The partial indexes tell
    // queued records apart: unfinished ones include them, gc's leave them out (like running
    // ones), the status index holds superseded ones too. idem_records_group_runner lets at most
    // one record of a group run, and idem_records_queue is each group's line in order.
    R"sql(
    ALTER TABLE idem_records DROP CONSTRAINT idem_records_status_check;
    ALTER TABLE idem_records ADD CONSTRAINT idem_records_status_check
      CHECK (status IN ('running', 'succeeded', 'failed', 'abandoned', 'queued', 'superseded'));
    ALTER TABLE idem_records ADD COLUMN serial_group text COLLATE "C";
    ALTER TABLE idem_records ADD COLUMN queue_seq bigint;
    ALTER TABLE idem_records ADD COLUMN superseded_by text;
    CREATE SEQUENCE idem_queue_seq;
    DROP INDEX idem_records_expiring;
    CREATE INDEX idem_records_expiring ON idem_records (expires_at)
      WHERE )sql" IDEM_PG_COLLECTABLE R"sql(;
    DROP INDEX idem_records_by_end;
    CREATE INDEX idem_records_by_end ON idem_records (coalesce(finished_at, started_at), expires_at)
      WHERE )sql" IDEM_PG_COLLECTABLE R"sql(;
    DROP INDEX idem_records_unfinished;
    CREATE INDEX idem_records_unfinished ON idem_records (started_at DESC, key)
      WHERE )sql" IDEM_PG_UNFINISHED R"sql(;
    DROP INDEX idem_records_by_status;
    CREATE INDEX idem_records_by_status ON idem_records (status, started_at DESC, key)
      WHERE )sql" IDEM_PG_STATUS_INDEXED R"sql(;
    CREATE UNIQUE INDEX idem_records_group_runner ON idem_records (serial_group)
      WHERE status = 'running' AND serial_group IS NOT NULL;
    CREATE INDEX idem_records_queue ON idem_records (serial_group, queue_seq)
      WHERE status = 'queued';
    )sql",
    // 8 -> 9: each serial group's line length, kept by triggers whatever writes the records (a
    // claim, a turn, withdraw, rm, import), so that a claim reads it instead of counting the line
    // (k_queue_length). Each trigger fires only for a row entering or leaving a line (its WHEN),
    // so gc and the other writes pay nothing for it. A line that empties leaves no row.
    R"sql(
    CREATE TABLE idem_serial_lines (
      serial_group text COLLATE "C" PRIMARY KEY,
      queued       bigint NOT NULL
    );
    INSERT INTO idem_serial_lines (serial_group, queued)
      SELECT serial_group, count(*) FROM idem_records
      WHERE status = 'queued' AND serial_group IS NOT NULL GROUP BY serial_group;
    CREATE FUNCTION idem_serial_lines_count() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF TG_OP <> 'INSERT' AND OLD.status = 'queued' AND OLD.serial_group IS NOT NULL THEN
        UPDATE idem_serial_lines SET queued = queued - 1 WHERE serial_group = OLD.serial_group;
        DELETE FROM idem_serial_lines WHERE serial_group = OLD.serial_group AND queued <= 0;
      END IF;
      IF TG_OP <> 'DELETE' AND NEW.status = 'queued' AND NEW.serial_group IS NOT NULL THEN
        INSERT INTO idem_serial_lines (serial_group, queued) VALUES (NEW.serial_group, 1)
          ON CONFLICT (serial_group) DO UPDATE SET queued = idem_serial_lines.queued + 1;
      END IF;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER idem_serial_lines_insert AFTER INSERT ON idem_records FOR EACH ROW
      WHEN (NEW.status = 'queued' AND NEW.serial_group IS NOT NULL)
      EXECUTE FUNCTION idem_serial_lines_count();
    CREATE TRIGGER idem_serial_lines_delete AFTER DELETE ON idem_records FOR EACH ROW
      WHEN (OLD.status = 'queued' AND OLD.serial_group IS NOT NULL)
      EXECUTE FUNCTION idem_serial_lines_count();
    CREATE TRIGGER idem_serial_lines_update AFTER UPDATE OF status, serial_group ON idem_records
      FOR EACH ROW
      WHEN ((OLD.status = 'queued' AND OLD.serial_group IS NOT NULL)
            OR (NEW.status = 'queued' AND NEW.serial_group IS NOT NULL))
      EXECUTE FUNCTION idem_serial_lines_count();
    )sql",
    // 9 -> 10: live output (SPEC §10, core/live.hpp): the segments a running attempt has written
    // so far, by key, attempt and offset. They go when the attempt stops running or its record
    // goes; each trigger fires only for a running record (its WHEN), so gc's deletes and a
    // replay's writes pay nothing for it.
    R"sql(
    CREATE TABLE idem_live_output (
      key     text COLLATE "C" NOT NULL,
      attempt bigint NOT NULL,
      at      bigint NOT NULL,
      size    bigint NOT NULL,
      frames  bytea  NOT NULL,
      PRIMARY KEY (key, attempt, at)
    );
    CREATE FUNCTION idem_live_output_drop() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        DELETE FROM idem_live_output WHERE key = OLD.key;
      ELSE
        DELETE FROM idem_live_output
          WHERE key = OLD.key AND (attempt <> NEW.attempt OR NEW.status <> 'running');
      END IF;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER idem_live_output_of_deleted AFTER DELETE ON idem_records FOR EACH ROW
      WHEN (OLD.status = 'running')
      EXECUTE FUNCTION idem_live_output_drop();
    CREATE TRIGGER idem_live_output_of_ended AFTER UPDATE OF status, attempt ON idem_records
      FOR EACH ROW
      WHEN (OLD.status = 'running' OR NEW.status = 'running')
      EXECUTE FUNCTION idem_live_output_drop();
    )sql",
    // 10 -> 11: schedules (SPEC §11): the history by start time, the expectations with their
    // evaluation's state (core::ScheduleState as JSON), and their findings, each found once (its
    // primary key is its identity).
    R"sql(
    CREATE INDEX idem_attempts_by_start ON idem_attempts (started_at, key, number);
    CREATE TABLE idem_expectations (
      pattern     text COLLATE "C" PRIMARY KEY,
      every_ms    bigint NOT NULL DEFAULT 0,
      cron        text   NOT NULL DEFAULT '',
      tz          text   NOT NULL DEFAULT '',
      grace_ms    bigint NOT NULL,
      max_runtime bigint NOT NULL DEFAULT 0,
      at_most     bigint NOT NULL DEFAULT 0,
      created_at  bigint NOT NULL,
      revision    bigint NOT NULL DEFAULT 0,
      state       text   NOT NULL DEFAULT ''
    );
    CREATE TABLE idem_findings (
      pattern  text COLLATE "C" NOT NULL,
      kind     text   NOT NULL,
      at       bigint NOT NULL,
      key      text COLLATE "C" NOT NULL DEFAULT '',
      attempt  bigint NOT NULL DEFAULT 0,
      detail   text   NOT NULL,
      found_at bigint NOT NULL,
      resolved boolean NOT NULL DEFAULT false,
      PRIMARY KEY (pattern, kind, at, key, attempt)
    );
    CREATE INDEX idem_findings_by_found ON idem_findings (pattern, found_at);
    )sql",
    // 11 -> 12: the span of the record's current attempt (SPEC §12, core::SpanIds): a replay
    // links to it, `idem end` and the ledger end it. NULL: traces were off (and for records
    // from before).
    R"sql(
    ALTER TABLE idem_records ADD COLUMN trace_id text, ADD COLUMN span_id text,
      ADD COLUMN parent_span_id text;
    )sql",
};
static_assert(std::size(k_migrations) == k_schema_version);

// A record's columns in the order the store reads them; `output` last (NULL where not needed).
inline constexpr const char* k_record_columns =
    "key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid, owner_start, "
    "started_at, finished_at, ttl_ms, expires_at, exit_code, signal, timed_out, output_bytes, "
    "output_truncated, request, note, response, pgid, pgid_start, attempt_token, lease_expires, "
    "replay_failures, owner_machine_id, owner_pid_ns, replays, last_replay_at, cgroup, "
    "serial_group, queue_seq, superseded_by, trace_id, span_id, parent_span_id";
// The same for ls: no request or token (never listed); the stored answer, a status and a few
// headers, for its status.
inline constexpr const char* k_list_columns =
    "key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid, owner_start, "
    "started_at, finished_at, ttl_ms, expires_at, exit_code, signal, timed_out, output_bytes, "
    "output_truncated, '', note, response, pgid, pgid_start, '', lease_expires, replay_failures, "
    "owner_machine_id, owner_pid_ns, replays, last_replay_at, cgroup, serial_group, queue_seq, "
    "superseded_by, trace_id, span_id, parent_span_id, NULL::bytea";

// The version table's one row, and the version set by a migration ($1).
inline constexpr const char* k_insert_schema_row =
    "INSERT INTO idem_schema (id, version) VALUES (1, 0) ON CONFLICT DO NOTHING";
inline constexpr const char* k_set_schema_version =
    "UPDATE idem_schema SET version = $1 WHERE id = 1";
// The schema version; `lock`: its row locked until the transaction ends.
const char* schema_version(bool lock);

// Each connection's set-up, in one round trip: the server's clock (ms) and the lock_timeout ($1).
inline constexpr const char* k_set_up_session =
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint, "
    "set_config('lock_timeout', $1, false)";
// The same and the schema version, for a connection's first round trip (a command's first
// statement): fails with 42P01 where idem's tables are not there yet, and returns no row without
// the version's row; the caller then sets the session up alone and migrates.
inline constexpr const char* k_set_up_session_and_version =
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint, "
    "set_config('lock_timeout', $1, false), version FROM idem_schema WHERE id = 1";
inline constexpr const char* k_server_version = "SELECT current_setting('server_version')";

// The key's record ($1): k_record_columns, then its output (NULL unless `with_output`); locked
// with `for_update`.
const char* select_record(bool with_output, bool for_update);

// The claim (store/claim_flow.hpp): $1 key, $2 fingerprint, $3 kind, $4 attempt, $5..$8 and $15,
// $16 the owner (host, boot id, pid, start; machine id, pid namespace), $9 now, $10 TTL, $11
// request, $12 token, $13 lease end (NULL: none), $14 replay_failures (0 or 1); $17 the attempt
// replaced, or for the insert the attempt's trigger; $18, $19, $20 the command's process group, its
// leader's start and its cgroup when the claim records it (NULL: set_process_group does, later);
// $21 its serial group (NULL: none); $22..$24 its span (trace id, span id, parent span id; NULL:
// none).
// The insert
// returns a row when it inserted,
// and then has written the key's first history entry too (k_history_start's, in the same
// statement: a new key's claim is one round trip between BEGIN and COMMIT). A key without a
// record has no history (its rows go with the record), so that entry is number 1.
inline constexpr const char* k_claim_insert = R"sql(
          WITH c AS (
            INSERT INTO idem_records (key, fingerprint, kind, status, attempt, owner_host,
                                      owner_boot_id, owner_pid, owner_start, started_at, ttl_ms,
                                      request, attempt_token, lease_expires, replay_failures,
                                      owner_machine_id, owner_pid_ns, pgid, pgid_start,
                                      cgroup, serial_group, trace_id, span_id, parent_span_id)
            VALUES ($1, $2, $3, 'running', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 <> 0,
                    $15, $16, $18, $19, $20, $21, $22, $23, $24)
            ON CONFLICT (key) DO NOTHING RETURNING attempt),
          h AS (
            INSERT INTO idem_attempts (key, number, started_by, owner_host, owner_pid, started_at,
                                       outcome)
            SELECT $1, 1, $17, $5, $7, $9, 'running' FROM c)
          SELECT attempt FROM c)sql";
inline constexpr const char* k_claim_replace = R"sql(
          UPDATE idem_records SET fingerprint = $2, kind = $3, status = 'running', attempt = $4,
                 owner_host = $5, owner_boot_id = $6, owner_pid = $7, owner_start = $8,
                 started_at = $9, ttl_ms = $10, request = $11, finished_at = NULL,
                 expires_at = NULL, exit_code = NULL, signal = NULL, timed_out = false,
                 output = NULL, output_bytes = 0, output_truncated = false, note = '',
                 response = NULL, pgid = $18, pgid_start = $19, cgroup = $20, attempt_token = $12,
                 lease_expires = $13, replay_failures = $14 <> 0, owner_machine_id = $15,
                 owner_pid_ns = $16, serial_group = $21, queue_seq = NULL, superseded_by = NULL,
                 trace_id = $22, span_id = $23, parent_span_id = $24
          WHERE key = $1 AND attempt = $17)sql";
// A serial group's waiter (claim_flow's enqueue): k_claim_insert's $1..$16 without a history
// entry (it has none until it starts), $17 its group, $18 its place in the group's line, $19..$21
// its span as k_claim_insert's $22..$24.
inline constexpr const char* k_enqueue_insert = R"sql(
          INSERT INTO idem_records (key, fingerprint, kind, status, attempt, owner_host,
                                    owner_boot_id, owner_pid, owner_start, started_at, ttl_ms,
                                    request, attempt_token, lease_expires, replay_failures,
                                    owner_machine_id, owner_pid_ns, serial_group, queue_seq,
                                    trace_id, span_id, parent_span_id)
          VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 <> 0,
                  $15, $16, $17, $18, $19, $20, $21)
          ON CONFLICT (key) DO NOTHING)sql";
// The same in place of attempt $22, whatever it holds.
inline constexpr const char* k_enqueue_replace = R"sql(
          UPDATE idem_records SET fingerprint = $2, kind = $3, status = 'queued', attempt = $4,
                 owner_host = $5, owner_boot_id = $6, owner_pid = $7, owner_start = $8,
                 started_at = $9, ttl_ms = $10, request = $11, finished_at = NULL,
                 expires_at = NULL, exit_code = NULL, signal = NULL, timed_out = false,
                 output = NULL, output_bytes = 0, output_truncated = false, note = '',
                 response = NULL, pgid = NULL, pgid_start = NULL, cgroup = NULL,
                 attempt_token = $12, lease_expires = $13, replay_failures = $14 <> 0,
                 owner_machine_id = $15, owner_pid_ns = $16, serial_group = $17, queue_seq = $18,
                 superseded_by = NULL, trace_id = $19, span_id = $20, parent_span_id = $21
          WHERE key = $1 AND attempt = $22)sql";
// Serial groups, $1 the group: held until the transaction ends (an advisory lock in a class of
// idem's own), its running record, the head of its line, how many wait at places up to $2, a
// new place.
inline constexpr const char* k_lock_group =
    "SELECT pg_advisory_xact_lock(1768189293, hashtext($1))";
inline constexpr const char* k_group_runner_suffix =
    " FROM idem_records WHERE serial_group = $1 AND status = 'running' AND serial_group IS NOT "
    "NULL";
inline constexpr const char* k_group_line_suffix =
    " FROM idem_records WHERE serial_group = $1 AND status = 'queued' ORDER BY queue_seq LIMIT $2";
inline constexpr const char* k_group_head_suffix =
    " FROM idem_records WHERE serial_group = $1 AND status = 'queued' ORDER BY queue_seq LIMIT 1"
    " FOR UPDATE";
inline constexpr const char* k_queued_in_group = R"sql(
      SELECT count(*) FROM idem_records
      WHERE serial_group = $1 AND status = 'queued' AND queue_seq <= $2)sql";
// How many wait in group $1's line (the triggers' count: idem_serial_lines).
inline constexpr const char* k_queue_length =
    "SELECT coalesce((SELECT queued FROM idem_serial_lines WHERE serial_group = $1), 0)";
inline constexpr const char* k_next_queue_seq = "SELECT nextval('idem_queue_seq')";
// Every queued record of group $1 superseded by $2 at $3: finished then, expiring after its TTL.
inline constexpr const char* k_supersede_pending = R"sql(
      UPDATE idem_records SET status = 'superseded', superseded_by = $2, finished_at = $3,
             expires_at = $3 + ttl_ms, queue_seq = NULL, attempt_token = '',
             lease_expires = NULL
      WHERE serial_group = $1 AND status = 'queued'
      RETURNING key)sql";
// The abandoned attempt $2 of key $1 waits again, as the next attempt, at place $3.
inline constexpr const char* k_requeue = R"sql(
      UPDATE idem_records SET status = 'queued', attempt = attempt + 1, queue_seq = $3,
             attempt_token = '', lease_expires = NULL
      WHERE key = $1 AND attempt = $2 AND status = 'abandoned')sql";
// The queued attempt $2 of key $1 starts: $3..$8 the owner (host, boot id, pid, start, machine
// id, pid namespace), $9 token, $10 lease end (NULL: none), $11 now; with its history entry
// (k_history_start's, $12 the trigger, $13 the entries kept), in one round trip.
inline constexpr const char* k_start_queued = R"sql(
      WITH s AS (
        UPDATE idem_records SET status = 'running', owner_host = $3, owner_boot_id = $4,
               owner_pid = $5, owner_start = $6, owner_machine_id = $7, owner_pid_ns = $8,
               attempt_token = $9, lease_expires = $10, started_at = $11, queue_seq = NULL
        WHERE key = $1 AND attempt = $2 AND status = 'queued'
        RETURNING key),
      n AS (SELECT coalesce(max(number), 0) + 1 AS next FROM idem_attempts WHERE key = $1),
      d AS (DELETE FROM idem_attempts WHERE key = $1 AND number <= (SELECT next FROM n) - $13
              AND EXISTS (SELECT 1 FROM s)),
      h AS (INSERT INTO idem_attempts (key, number, started_by, owner_host, owner_pid, started_at,
                                       outcome)
            SELECT $1, next, $12, $3, $5, $11, 'running' FROM n WHERE EXISTS (SELECT 1 FROM s))
      SELECT count(*) FROM s)sql";
// $1 key, $2 token, $3 the new lease end (NULL: none).
inline constexpr const char* k_renew_queued = R"sql(
      UPDATE idem_records SET lease_expires = $3
      WHERE key = $1 AND attempt_token = $2 AND status = 'queued')sql";
// $1 key, $2 token (Store::withdraw).
inline constexpr const char* k_withdraw = R"sql(
      DELETE FROM idem_records WHERE key = $1 AND attempt_token = $2 AND status = 'queued')sql";
// The groups that start with $1 (a LIKE pattern) with queued records, $2 at most, by name.
// The lines' lengths are the triggers' counts; the oldest is the head's, read from the line's
// index.
inline constexpr const char* k_queued_groups = R"sql(
      SELECT l.serial_group, l.queued,
             (SELECT r.started_at FROM idem_records r
              WHERE r.serial_group = l.serial_group AND r.status = 'queued'
              ORDER BY r.queue_seq LIMIT 1)
      FROM idem_serial_lines l
      WHERE l.serial_group LIKE $1 AND l.queued > 0
      ORDER BY l.serial_group LIMIT $2)sql";
// Whether a claim whose answer the connection lost had landed: $1 key, $2 its token; a queued
// one too.
inline constexpr const char* k_claim_landed =
    "SELECT attempt, lease_expires, status FROM idem_records WHERE key = $1 AND "
    "attempt_token = $2 AND status IN ('running', 'queued')";
// $1 key, $2 attempt, $3 the note.
inline constexpr const char* k_set_abandoned = R"sql(
      UPDATE idem_records SET status = 'abandoned', note = $3, attempt_token = '',
             lease_expires = NULL
      WHERE key = $1 AND attempt = $2 AND status = 'running')sql";
// Release (Store::release): $1 key, $2 token.
inline constexpr const char* k_release_first_attempt = R"sql(
        DELETE FROM idem_records
        WHERE key = $1 AND attempt_token = $2 AND status = 'running' AND attempt = 1)sql";
inline constexpr const char* k_restore_previous_attempt = R"sql(
          UPDATE idem_records SET attempt = attempt - 1, status = 'abandoned',
                 note = 'attempt ' || attempt || ' was released', attempt_token = '',
                 lease_expires = NULL
          WHERE key = $1 AND attempt_token = $2 AND status = 'running' AND attempt > 1)sql";

// $1 key, $2 attempt, $3 status, $4 finished (ms), $5 exit code, $6 signal, $7 timed out, $8
// output, $9 and $10 its bytes and truncation, $11 note, $12 response; $13 why it ended and $14
// the answer's status, for the history entry it ends in the same statement; $15 kept until removed
// (not 0: no expiry). Its last alternative
// matches this very outcome already written, so that it can be repeated. Answers the count of
// records written (1 or 0).
inline constexpr const char* k_finish = R"sql(
        WITH r AS (UPDATE idem_records SET status = $3, finished_at = $4,
               expires_at = CASE WHEN $15 <> 0 THEN NULL ELSE $4 + ttl_ms END,
               exit_code = $5, signal = $6, timed_out = $7 <> 0, output = $8,
               output_bytes = $9, output_truncated = $10 <> 0, note = $11, response = $12,
               attempt_token = '', lease_expires = NULL
        WHERE key = $1 AND attempt = $2
          AND ((status = 'running' AND (lease_expires IS NULL OR lease_expires > $4))
               OR (status = $3 AND finished_at = $4 AND attempt_token = ''))
        RETURNING 1),
        h AS (UPDATE idem_attempts SET outcome = $3, ended_at = $4, reason = $13, exit_code = $5,
                     signal = $6, http_status = $14, note = $11
              WHERE key = $1
                AND number = (SELECT max(number) FROM idem_attempts WHERE key = $1)
                AND EXISTS (SELECT 1 FROM r))
        SELECT count(*) FROM r)sql";
// $1 key, $2 attempt, $3 pgid, $4 its leader's start, $5 its cgroup (NULL: none).
inline constexpr const char* k_set_process_group = R"sql(
        UPDATE idem_records SET pgid = $3, pgid_start = $4, cgroup = $5
        WHERE key = $1 AND attempt = $2 AND status = 'running')sql";
// $1 key, $2 token, $3 now, $4 the new lease end (NULL: none).
inline constexpr const char* k_heartbeat = R"sql(
        UPDATE idem_records SET lease_expires = $4
        WHERE key = $1 AND attempt_token = $2 AND status = 'running'
          AND (lease_expires IS NULL OR lease_expires > $3))sql";
// A record as given (put_all): its columns in order, $1..$37 (no token). A queued one without a
// place waits at the end of its line.
inline constexpr const char* k_put = R"sql(
      INSERT INTO idem_records (key, fingerprint, kind, status, attempt, owner_host,
                                owner_boot_id, owner_pid, owner_start, started_at, finished_at,
                                ttl_ms, expires_at, exit_code, signal, timed_out, output,
                                output_bytes, output_truncated, request, note, response, pgid,
                                pgid_start, attempt_token, lease_expires, replay_failures,
                                owner_machine_id, owner_pid_ns, replays, last_replay_at, cgroup,
                                serial_group, queue_seq, superseded_by, trace_id, span_id,
                                parent_span_id)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 <> 0, $17, $18, $19 <> 0, $20, $21, $22, $23,
              $24, '', $25, $26 <> 0, $27, $28, $29, $30, $31, $32,
              CASE WHEN $4 = 'queued' THEN coalesce($33, nextval('idem_queue_seq')) END, $34, $35,
              $36, $37)
      ON CONFLICT (key) DO NOTHING RETURNING attempt)sql";
// An imported history entry as given: IDEM_HISTORY_INSERT_COLUMNS' $1..$13.
inline constexpr const char* k_history_put =
    "INSERT INTO idem_attempts " IDEM_HISTORY_INSERT_COLUMNS
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";
inline constexpr const char* k_delete_record = "DELETE FROM idem_records WHERE key = $1";

// The history (core::HistoryEntry), each statement one range of the key's primary key. The
// claimed attempt's entry: $1 key, $2 trigger, $3 host, $4 pid, $5 started; with it, the
// entries older than the newest $6 deleted (one range of the key, in the same round trip).
inline constexpr const char* k_history_start = R"sql(
      WITH n AS (SELECT coalesce(max(number), 0) + 1 AS next FROM idem_attempts WHERE key = $1),
      d AS (DELETE FROM idem_attempts WHERE key = $1 AND number <= (SELECT next FROM n) - $6)
      INSERT INTO idem_attempts (key, number, started_by, owner_host, owner_pid, started_at,
                                 outcome)
      SELECT $1, next, $2, $3, $4, $5, 'running' FROM n)sql";
// An expired record's history and replays, before its key's new first attempt ($1 key).
inline constexpr const char* k_history_clear = R"sql(
      WITH h AS (DELETE FROM idem_attempts WHERE key = $1)
      UPDATE idem_records SET replays = 0, last_replay_at = NULL WHERE key = $1)sql";
// The latest entry, if running, abandoned: $1 key, $2 the reason.
inline constexpr const char* k_history_abandon = R"sql(
      UPDATE idem_attempts SET outcome = 'abandoned', reason = $2
      WHERE key = $1 AND number = (SELECT max(number) FROM idem_attempts WHERE key = $1)
        AND outcome = 'running')sql";
// An imported record's history: its current attempt ($1 key).
inline constexpr const char* k_history_of_record = IDEM_PG_HISTORY_OF_RECORDS " WHERE key = $1";
// The $3 newest entries (NULL: all) numbered below $2, newest first.
inline constexpr const char* k_history = R"sql(
      SELECT number, started_by, owner_host, owner_pid, started_at, ended_at, outcome, reason,
             exit_code, signal, http_status, note
      FROM idem_attempts WHERE key = $1 AND number < $2 ORDER BY number DESC LIMIT $3)sql";
// Schedules (SPEC §11). An expectation ($1..$8), replacing the pattern's with its state.
inline constexpr const char* k_expectation_put = R"sql(
      INSERT INTO idem_expectations
        (pattern, every_ms, cron, tz, grace_ms, max_runtime, at_most, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (pattern) DO UPDATE SET every_ms = $2, cron = $3, tz = $4, grace_ms = $5,
        max_runtime = $6, at_most = $7, created_at = $8, revision = 0, state = '')sql";
inline constexpr const char* k_expectation_delete =
    "DELETE FROM idem_expectations WHERE pattern = $1";
inline constexpr const char* k_findings_delete = "DELETE FROM idem_findings WHERE pattern = $1";
inline constexpr const char* k_expectations = R"sql(
      SELECT pattern, every_ms, cron, tz, grace_ms, max_runtime, at_most, created_at, revision,
             state
      FROM idem_expectations ORDER BY pattern LIMIT $1)sql";
// An evaluation kept: $1 pattern, $2 the revision it read, $3 the new state.
inline constexpr const char* k_expectation_save = R"sql(
      UPDATE idem_expectations SET state = $3, revision = revision + 1
      WHERE pattern = $1 AND revision = $2)sql";
// A success that started at $2 resolves the open findings about a time before then.
inline constexpr const char* k_findings_resolve = R"sql(
      UPDATE idem_findings SET resolved = true
      WHERE pattern = $1 AND NOT resolved AND kind <> 'recovered' AND at < $2)sql";
inline constexpr const char* k_finding_put = R"sql(
      INSERT INTO idem_findings (pattern, kind, at, key, attempt, detail, found_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING)sql";
// The pattern's findings found before its $2-th newest (one range of idem_findings_by_found).
inline constexpr const char* k_findings_trim = R"sql(
      DELETE FROM idem_findings WHERE pattern = $1 AND found_at < (
        SELECT found_at FROM idem_findings WHERE pattern = $1
        ORDER BY found_at DESC LIMIT 1 OFFSET $2))sql";
// $1 pattern, $2 only open ones, $3 limit: newest first.
inline constexpr const char* k_findings = R"sql(
      SELECT kind, at, key, attempt, detail, found_at, resolved::int FROM idem_findings
      WHERE pattern = $1 AND (NOT $2::boolean OR NOT resolved)
      ORDER BY found_at DESC, at DESC LIMIT $3)sql";
// History entries started after ($1 started, $2 key, $3 number) and before $4, whose key is in
// LIKE $5 (a prefix: like_prefix), oldest first, at most $6: one range of
// idem_attempts_by_start.
inline constexpr const char* k_attempts_started = R"sql(
      SELECT key, number, started_at, ended_at, outcome, exit_code, http_status
      FROM idem_attempts
      WHERE (started_at, key, number) > ($1, $2, $3) AND started_at < $4
        AND key LIKE $5
      ORDER BY started_at, key, number LIMIT $6)sql";

// The numbers of the oldest and newest entries kept (two probes of the primary key).
inline constexpr const char* k_history_bounds =
    "SELECT min(number), max(number) FROM idem_attempts WHERE key = $1";
// $4 bytes of attempt $2's output of key $1 from byte $3 (0-based): substring() reads the
// slices of the value it needs (an uncompressed value's TOAST chunks in that range).
inline constexpr const char* k_read_output = R"sql(
      SELECT substring(output FROM ($3 + 1)::int FOR $4::int) FROM idem_records
      WHERE key = $1 AND attempt = $2 AND output IS NOT NULL)sql";
// $1 key, $2 replays to add, $3 the last one's time; its transaction's commit is not waited
// for (Store::count_replays).
inline constexpr const char* k_count_replays = R"sql(
      WITH unsynced AS (SELECT set_config('synchronous_commit', 'off', true))
      UPDATE idem_records SET replays = replays + $2,
             last_replay_at = greatest(coalesce(last_replay_at, 0), $3)
      FROM unsynced WHERE key = $1)sql";

// Live output (Store::append_live, read_live, drop_stale_live): not synced, as k_count_replays. A
// segment is written only for the key's current running attempt, whose row it locks (FOR KEY
// SHARE) so that a finish, rm or takeover committing meanwhile waits, and its trigger sees it.
inline constexpr const char* k_append_live = R"sql(
      WITH unsynced AS (SELECT set_config('synchronous_commit', 'off', true))
      INSERT INTO idem_live_output (key, attempt, at, size, frames)
      SELECT $1, $2, $3, $4, $5 FROM unsynced
      WHERE EXISTS (SELECT 1 FROM idem_records
                    WHERE key = $1 AND attempt = $2 AND status = 'running' FOR KEY SHARE)
      ON CONFLICT DO NOTHING)sql";
inline constexpr const char* k_read_live = R"sql(
      SELECT at, size, frames FROM idem_live_output
      WHERE key = $1 AND attempt = $2
        AND at >= coalesce((SELECT max(at) FROM idem_live_output
                            WHERE key = $1 AND attempt = $2 AND at <= $3), 0)
      ORDER BY at LIMIT $4)sql";
inline constexpr const char* k_live_attempts =
    "SELECT DISTINCT key, attempt FROM idem_live_output LIMIT 1000";
inline constexpr const char* k_drop_live =
    "DELETE FROM idem_live_output WHERE key = $1 AND attempt = $2";

// doctor's trial write (Store::check_writable): each kind of write idem makes, on no row.
inline constexpr const char* k_write_probe =
    "INSERT INTO idem_records SELECT * FROM idem_records WHERE false; "
    "UPDATE idem_records SET note = note WHERE false; "
    "DELETE FROM idem_records WHERE false";

// The LIKE pattern matching exactly the keys that start with `prefix` (\, % and _ escaped).
std::string like_prefix(const std::string& prefix);

// Unfinished records alone (store.hpp) are read by list_page from their partial index,
// idem_records_unfinished.
using store::lists_unfinished_only;

// One page of the listing, newest first (started_at DESC, key), keyset-paginated: $1 now (ms),
// $2 the statuses wanted (a text[]), $3 the prefix's LIKE pattern, $4 and $5 the last row of
// the previous page (started_at, key), $6 the page size, $7 the kind, $8 and $9 the bounds of
// started_at, $10 the result class; with `stop`, only up to the row $11 (started_at), $12 (key)
// where a bounded scan ends (list_stop). `after` says whether $4/$5 apply.
std::string list_page(const ListQuery& query, bool after, bool stop = false);
// The same parameters, $4/$5 the listing's cursor (ListQuery::after): how many entries of
// `drive`'s index are in the listing's range, counting no further than $13; and the $13-th of
// them (1-based), its started_at and key, where a scan of $13 entries ends (no row: fewer).
std::string list_count(const ListQuery& query, ListDrive drive);
std::string list_stop(const ListQuery& query, ListDrive drive);

// gc: $1 now, $2 the --older-than cutoff, $3 the batch size. The expired records, or (`ended`)
// the finished ones older than the cutoff that have not expired; counted (a dry run), or one
// batch of them deleted, skipping rows a claim holds locked.
std::string gc_count(bool ended);
std::string gc_delete_batch(bool ended);

// A serial group's ($1) running record (`runner`), or the head of its line, locked; without its
// output.
std::string select_group_record(bool runner);
// A serial group's ($1) queued records in their order, at most $2; without output.
std::string select_group_line();

}  // namespace idem::store::postgres_sql
