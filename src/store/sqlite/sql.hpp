#pragma once
// All the SQL the SQLite store runs: its schema and migrations, and every statement, apart from
// the code so that it reads as one schema and so that tests can check query plans (through the
// indexes, no full scan, no sort for ls's order) on the very text the store runs. The transaction
// wrappers' BEGIN IMMEDIATE / COMMIT / ROLLBACK and SAVEPOINTs, and the synchronous setting they
// switch, stay with them (sqlite/connection.hpp). The listing and gc's: ?1 now (ms), ?2 the gc
// cutoff or the ls prefix, ?3 the prefix's end.
#include <cstdint>
#include <iterator>
#include <string>

#include "store/history_sql.hpp"
#include "store/listing.hpp"
#include "store/store.hpp"

namespace idem::store::sqlite_sql {

// The schema version this build creates and understands (PRAGMA user_version).
inline constexpr int k_schema_version = 16;

// A key's history entry made from its record as it stands (the migration to version 10, and
// import): see store/history_sql.hpp.
#define IDEM_SQLITE_HISTORY_OF_RECORDS                                                          \
  "INSERT INTO attempts " IDEM_HISTORY_INSERT_COLUMNS " SELECT " IDEM_HISTORY_COLUMNS_OF_RECORD \
  ", json_extract(response, '$.status'), note "                                                 \
  "FROM records"

// A record's result class (core::result_class) as SQL: the listing's `result` condition and the
// index of it spell it alike, so that SQLite matches the one to the other. The answer's class is
// the first digit of its status, read as text: a stored answer always begins {"status":NNN
// (encode_response and json_object of the migration to version 5 write its status first, a
// number of three digits), and the JSON functions may not be used in an index under
// trusted_schema = OFF (sqlite/connection.cpp).
#define IDEM_SQLITE_RESULT_CLASS                                          \
  "(CASE WHEN substr(response, 1, 10) = '{\"status\":' "                  \
  "THEN substr(response, 11, 1) || 'xx' WHEN exit_code = 0 THEN 'exit0' " \
  "WHEN exit_code IS NOT NULL OR signal IS NOT NULL OR timed_out <> 0 THEN 'exit_nonzero' END)"

// The statuses of the partial indexes, spelled in the queries exactly as in the indexes (or SQLite
// does not use them): records still to be decided (running, abandoned, queued: ls --status of
// them, doctor), finished ones of a status that has an index of its own, and the ones gc may
// delete (never a running or a queued one).
#define IDEM_SQLITE_UNFINISHED "status IN ('running', 'abandoned', 'queued')"
#define IDEM_SQLITE_STATUS_INDEXED "status IN ('succeeded', 'failed', 'superseded')"
#define IDEM_SQLITE_COLLECTABLE "status NOT IN ('running', 'queued')"

// Migrations from version i to i+1, applied in order inside one BEGIN IMMEDIATE transaction.
// Never edit a published step: add a new one and bump k_schema_version.
inline constexpr const char* k_migrations[] = {
    // 0 -> 1: the records table.
    R"sql(
    CREATE TABLE records (
      key              TEXT    NOT NULL PRIMARY KEY,
      fingerprint      TEXT    NOT NULL,
      kind             TEXT    NOT NULL,
      status           TEXT    NOT NULL
                       CHECK (status IN ('running', 'succeeded', 'failed', 'abandoned')),
      attempt          INTEGER NOT NULL,
      owner_host       TEXT    NOT NULL,
      owner_boot_id    TEXT    NOT NULL,
      owner_pid        INTEGER NOT NULL,
      owner_start      INTEGER NOT NULL,
      started_at       INTEGER NOT NULL,
      finished_at      INTEGER,
      ttl_ms           INTEGER NOT NULL,
      expires_at       INTEGER,
      exit_code        INTEGER,
      signal           INTEGER,
      timed_out        INTEGER NOT NULL DEFAULT 0,
      output           BLOB,
      output_bytes     INTEGER NOT NULL DEFAULT 0,
      output_truncated INTEGER NOT NULL DEFAULT 0,
      request          TEXT    NOT NULL DEFAULT '{}',
      note             TEXT    NOT NULL DEFAULT ''
    );
    CREATE INDEX records_by_expiry ON records (expires_at) WHERE expires_at IS NOT NULL;
    CREATE INDEX records_by_start ON records (started_at);
    )sql",
    // 1 -> 2: what an HTTP delivery answered (idem serve), so a duplicate gets the same answer.
    R"sql(
    ALTER TABLE records ADD COLUMN http_status INTEGER;
    ALTER TABLE records ADD COLUMN content_type TEXT NOT NULL DEFAULT '';
    )sql",
    // 2 -> 3: indexes gc and ls walk instead of the table. gc takes expired records from
    // records_expiring and, for --older-than, records whose attempt ended (or, abandoned, began)
    // before the cutoff from records_by_end, which also holds expires_at so a dry run counts from
    // the index alone; both leave running records out by construction. ls reads newest first
    // from records_by_recent, whose order is exactly ls's (started_at DESC, key), so no sort.
    // They replace the version 1 indexes, which no query can use that way.
    R"sql(
    DROP INDEX IF EXISTS records_by_expiry;
    DROP INDEX IF EXISTS records_by_start;
    CREATE INDEX records_expiring ON records (expires_at) WHERE status <> 'running';
    CREATE INDEX records_by_end ON records (coalesce(finished_at, started_at), expires_at)
      WHERE status <> 'running';
    CREATE INDEX records_by_recent ON records (started_at DESC, key);
    -- The process group of the attempt's command and its leader's start time, so a retry of
    -- an abandoned attempt can tell whether processes of it are still alive.
    ALTER TABLE records ADD COLUMN pgid INTEGER;
    ALTER TABLE records ADD COLUMN pgid_start INTEGER;
    )sql",
    // 3 -> 4: the attempt's token (a capability: heartbeat and release need it; '' for records
    // claimed before, which nothing can match) and its lease (Unix ms; NULL: no lease).
    R"sql(
    ALTER TABLE records ADD COLUMN attempt_token TEXT NOT NULL DEFAULT '';
    ALTER TABLE records ADD COLUMN lease_expires INTEGER;
    )sql",
    // 4 -> 5: the stored answer (core::Response's stored form, JSON; NULL: none) replaces the
    // HTTP status and content type of version 2, so the record keeps no HTTP of its own: a
    // delivery's answer becomes that status with its Content-Type header (none when it had no
    // content type). json_object writes the same compact form encode_response does. DROP
    // COLUMN rewrites the table once (SQLite 3.35+); neither column is in an index, so it is
    // allowed.
    R"sql(
    ALTER TABLE records ADD COLUMN response TEXT;
    UPDATE records
      SET response = json_object('status', http_status, 'headers',
                                 CASE WHEN content_type = '' THEN json_array()
                                      ELSE json_array(json_array('Content-Type', content_type))
                                 END)
      WHERE http_status IS NOT NULL;
    ALTER TABLE records DROP COLUMN http_status;
    ALTER TABLE records DROP COLUMN content_type;
    )sql",
    // 5 -> 6: outputs move to a table of their own, keyed by the attempt that wrote them, so that
    // finish writes one by incremental blob I/O from the caller's buffer (SQLite would otherwise
    // build the whole row in memory: a second copy of up to the output cap), which SQLite refuses
    // for a column of a table with an expression index (records_by_end). Records stay small, so
    // a claim, ls or gc reading one never walks an output's overflow pages. The triggers keep
    // an output no longer than its record's attempt: deleting a record (rm, gc, release)
    // deletes it, and so does a claim that starts a new attempt (the record becomes running;
    // an expired record's new attempt may have the number of the one it replaces).
    R"sql(
    CREATE TABLE outputs (
      key     TEXT    NOT NULL,
      attempt INTEGER NOT NULL,
      output  BLOB    NOT NULL,
      PRIMARY KEY (key, attempt)
    );
    INSERT INTO outputs (key, attempt, output)
      SELECT key, attempt, output FROM records WHERE length(output) > 0;
    ALTER TABLE records DROP COLUMN output;
    CREATE TRIGGER outputs_of_deleted AFTER DELETE ON records
      BEGIN DELETE FROM outputs WHERE key = old.key; END;
    CREATE TRIGGER outputs_of_replaced AFTER UPDATE OF status ON records
      WHEN new.status = 'running' BEGIN DELETE FROM outputs WHERE key = old.key; END;
    )sql",
    // 6 -> 7: the replay policy the attempt was claimed under (1: --replay-failures, its failure
    // is final for every later attempt). Records from before were claimed without a recorded
    // policy: 0, a failure runs again, as every later attempt without the flag did then.
    R"sql(
    ALTER TABLE records ADD COLUMN replay_failures INTEGER NOT NULL DEFAULT 0;
    )sql",
    // 7 -> 8: the unfinished records (running and abandoned) in ls's order, for `ls --status
    // running` and `idem doctor`, which otherwise walk records_by_recent through every finished
    // record. Partial, so the finished records, nearly all of them, are never in it: a claim adds
    // its key and a finish takes it out again, an index of a few pages.
    R"sql(
    CREATE INDEX records_unfinished ON records (started_at DESC, key)
      WHERE status IN ('running', 'abandoned');
    )sql",
    // 8 -> 9: the owner's machine id and pid namespace (core::Owner), so that a twin host of the
    // same name, or another container on the same kernel, never judges an owner by a pid it
    // cannot see. Records from before get '' and 0: their pid is never judged (proc::owner_gone).
    R"sql(
    ALTER TABLE records ADD COLUMN owner_machine_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE records ADD COLUMN owner_pid_ns INTEGER NOT NULL DEFAULT 0;
    )sql",
    // 9 -> 10: the attempt history (core::HistoryEntry), one row per attempt, keyed by the key
    // and the attempt's place in it, so a key's history is one range of the primary key (WITHOUT
    // ROWID: the table is that index); a trigger deletes it with its record (rm, gc, a released
    // first attempt). Each record from before gets its current attempt as its history. And the
    // replays counted per key (Store::count_replays).
    R"sql(
    CREATE TABLE attempts (
      key         TEXT    NOT NULL,
      number      INTEGER NOT NULL,
      started_by  TEXT    NOT NULL,
      owner_host  TEXT    NOT NULL,
      owner_pid   INTEGER NOT NULL,
      started_at  INTEGER NOT NULL,
      ended_at    INTEGER,
      outcome     TEXT    NOT NULL
                  CHECK (outcome IN ('running', 'succeeded', 'failed', 'abandoned')),
      reason      TEXT    NOT NULL DEFAULT '',
      exit_code   INTEGER,
      signal      INTEGER,
      http_status INTEGER,
      note        TEXT    NOT NULL DEFAULT '',
      PRIMARY KEY (key, number)
    ) WITHOUT ROWID;
    )sql" IDEM_SQLITE_HISTORY_OF_RECORDS R"sql(;
    CREATE TRIGGER attempts_of_deleted AFTER DELETE ON records
      BEGIN DELETE FROM attempts WHERE key = old.key; END;
    ALTER TABLE records ADD COLUMN replays INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE records ADD COLUMN last_replay_at INTEGER;
    )sql",
    // 10 -> 11: an index per condition of the page's and ls's filters, each in the listing's
    // order after its condition, so that a filter reads its own records newest first (a rare one
    // too) instead of walking records_by_recent through all the others: the status (finished
    // records only, partial as records_unfinished is for the others), the kind
    // (the front), and the result class (IDEM_SQLITE_RESULT_CLASS). CREATE INDEX sorts through
    // SQLite's external sorter: a large store is never held in memory.
    R"sql(
    CREATE INDEX records_by_status ON records (status, started_at DESC, key)
      WHERE status IN ('succeeded', 'failed');
    CREATE INDEX records_by_kind ON records (kind, started_at DESC, key);
    CREATE INDEX records_by_result ON records ()sql" IDEM_SQLITE_RESULT_CLASS R"sql(,
                                               started_at DESC, key);
    )sql",
    // 11 -> 12: the attempt's cgroup beside its process group (core::ProcessGroup::cgroup).
    R"sql(
    ALTER TABLE records ADD COLUMN cgroup TEXT;
    )sql",
    // 12 -> 13: serial groups (SPEC §9). Two statuses more, queued and superseded, which the
    // status column's CHECK must allow: SQLite changes a CHECK only by making the table anew, so
    // the records are copied into a new table, columns in the same order and three more (the
    // group, the place in its line, the key that superseded a queued one), and the indexes and
    // triggers made again. The partial indexes now tell queued records apart: unfinished ones
    // include them, gc's leave them out (like running ones), and the status index holds
    // superseded ones too. records_group_runner lets at most one record of a group run, and
    // records_queue is each group's line in order.
    R"sql(
    CREATE TABLE records_13 (
      key              TEXT    NOT NULL PRIMARY KEY,
      fingerprint      TEXT    NOT NULL,
      kind             TEXT    NOT NULL,
      status           TEXT    NOT NULL
                       CHECK (status IN ('running', 'succeeded', 'failed', 'abandoned', 'queued',
                                         'superseded')),
      attempt          INTEGER NOT NULL,
      owner_host       TEXT    NOT NULL,
      owner_boot_id    TEXT    NOT NULL,
      owner_pid        INTEGER NOT NULL,
      owner_start      INTEGER NOT NULL,
      started_at       INTEGER NOT NULL,
      finished_at      INTEGER,
      ttl_ms           INTEGER NOT NULL,
      expires_at       INTEGER,
      exit_code        INTEGER,
      signal           INTEGER,
      timed_out        INTEGER NOT NULL DEFAULT 0,
      output_bytes     INTEGER NOT NULL DEFAULT 0,
      output_truncated INTEGER NOT NULL DEFAULT 0,
      request          TEXT    NOT NULL DEFAULT '{}',
      note             TEXT    NOT NULL DEFAULT '',
      pgid             INTEGER,
      pgid_start       INTEGER,
      attempt_token    TEXT    NOT NULL DEFAULT '',
      lease_expires    INTEGER,
      response         TEXT,
      replay_failures  INTEGER NOT NULL DEFAULT 0,
      owner_machine_id TEXT    NOT NULL DEFAULT '',
      owner_pid_ns     INTEGER NOT NULL DEFAULT 0,
      replays          INTEGER NOT NULL DEFAULT 0,
      last_replay_at   INTEGER,
      cgroup           TEXT,
      serial_group     TEXT,
      queue_seq        INTEGER,
      superseded_by    TEXT
    );
    INSERT INTO records_13 (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                            owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                            exit_code, signal, timed_out, output_bytes, output_truncated, request,
                            note, pgid, pgid_start, attempt_token, lease_expires, response,
                            replay_failures, owner_machine_id, owner_pid_ns, replays,
                            last_replay_at, cgroup)
      SELECT key, fingerprint, kind, status, attempt, owner_host, owner_boot_id, owner_pid,
             owner_start, started_at, finished_at, ttl_ms, expires_at, exit_code, signal,
             timed_out, output_bytes, output_truncated, request, note, pgid, pgid_start,
             attempt_token, lease_expires, response, replay_failures, owner_machine_id,
             owner_pid_ns, replays, last_replay_at, cgroup
      FROM records;
    DROP TABLE records;
    ALTER TABLE records_13 RENAME TO records;
    CREATE INDEX records_expiring ON records (expires_at) WHERE )sql" IDEM_SQLITE_COLLECTABLE
    R"sql(;
    CREATE INDEX records_by_end ON records (coalesce(finished_at, started_at), expires_at)
      WHERE )sql" IDEM_SQLITE_COLLECTABLE R"sql(;
    CREATE INDEX records_by_recent ON records (started_at DESC, key);
    CREATE INDEX records_unfinished ON records (started_at DESC, key)
      WHERE )sql" IDEM_SQLITE_UNFINISHED R"sql(;
    CREATE INDEX records_by_status ON records (status, started_at DESC, key)
      WHERE )sql" IDEM_SQLITE_STATUS_INDEXED R"sql(;
    CREATE INDEX records_by_kind ON records (kind, started_at DESC, key);
    CREATE INDEX records_by_result ON records ()sql" IDEM_SQLITE_RESULT_CLASS R"sql(,
                                               started_at DESC, key);
    CREATE UNIQUE INDEX records_group_runner ON records (serial_group)
      WHERE status = 'running' AND serial_group IS NOT NULL;
    CREATE INDEX records_queue ON records (serial_group, queue_seq) WHERE status = 'queued';
    CREATE TRIGGER outputs_of_deleted AFTER DELETE ON records
      BEGIN DELETE FROM outputs WHERE key = old.key; END;
    CREATE TRIGGER outputs_of_replaced AFTER UPDATE OF status ON records
      WHEN new.status = 'running' BEGIN DELETE FROM outputs WHERE key = old.key; END;
    CREATE TRIGGER attempts_of_deleted AFTER DELETE ON records
      BEGIN DELETE FROM attempts WHERE key = old.key; END;
    )sql",
    // 13 -> 14: each serial group's line length, kept by triggers whatever writes the records
    // (a claim, a turn, withdraw, rm, import), so that a claim reads it instead of counting the
    // line (k_queue_length). A line that empties leaves no row.
    R"sql(
    CREATE TABLE serial_lines (
      serial_group TEXT PRIMARY KEY,
      queued       INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO serial_lines (serial_group, queued)
      SELECT serial_group, count(*) FROM records
      WHERE status = 'queued' AND serial_group IS NOT NULL GROUP BY serial_group;
    CREATE TRIGGER serial_lines_insert AFTER INSERT ON records
      WHEN new.status = 'queued' AND new.serial_group IS NOT NULL
    BEGIN
      INSERT INTO serial_lines (serial_group, queued) VALUES (new.serial_group, 1)
        ON CONFLICT (serial_group) DO UPDATE SET queued = queued + 1;
    END;
    CREATE TRIGGER serial_lines_delete AFTER DELETE ON records
      WHEN old.status = 'queued' AND old.serial_group IS NOT NULL
    BEGIN
      UPDATE serial_lines SET queued = queued - 1 WHERE serial_group = old.serial_group;
      DELETE FROM serial_lines WHERE serial_group = old.serial_group AND queued <= 0;
    END;
    CREATE TRIGGER serial_lines_update AFTER UPDATE OF status, serial_group ON records
      WHEN (old.status = 'queued' AND old.serial_group IS NOT NULL)
        OR (new.status = 'queued' AND new.serial_group IS NOT NULL)
    BEGIN
      UPDATE serial_lines SET queued = queued - 1
        WHERE old.status = 'queued' AND serial_group = old.serial_group;
      DELETE FROM serial_lines WHERE serial_group = old.serial_group AND queued <= 0;
      INSERT INTO serial_lines (serial_group, queued)
        SELECT new.serial_group, 1 WHERE new.status = 'queued' AND new.serial_group IS NOT NULL
        ON CONFLICT (serial_group) DO UPDATE SET queued = queued + 1;
    END;
    )sql",
    // 14 -> 15: schedules (SPEC §11). The history by start time (an evaluation reads the attempts
    // started since the last one: one range of it; the index holds the key and number as well),
    // the expectations, with where their evaluation stands (core::ScheduleState as JSON), and
    // their findings, whose primary key is their identity (each found once).
    R"sql(
    CREATE INDEX attempts_by_start ON attempts (started_at);
    CREATE TABLE expectations (
      pattern     TEXT    PRIMARY KEY,
      every_ms    INTEGER NOT NULL DEFAULT 0,
      cron        TEXT    NOT NULL DEFAULT '',
      tz          TEXT    NOT NULL DEFAULT '',
      grace_ms    INTEGER NOT NULL,
      max_runtime INTEGER NOT NULL DEFAULT 0,
      at_most     INTEGER NOT NULL DEFAULT 0,
      created_at  INTEGER NOT NULL,
      revision    INTEGER NOT NULL DEFAULT 0,
      state       TEXT    NOT NULL DEFAULT ''
    ) WITHOUT ROWID;
    CREATE TABLE findings (
      pattern  TEXT    NOT NULL,
      kind     TEXT    NOT NULL,
      at       INTEGER NOT NULL,
      key      TEXT    NOT NULL DEFAULT '',
      attempt  INTEGER NOT NULL DEFAULT 0,
      detail   TEXT    NOT NULL,
      found_at INTEGER NOT NULL,
      resolved INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (pattern, kind, at, key, attempt)
    ) WITHOUT ROWID;
    CREATE INDEX findings_by_found ON findings (pattern, found_at);
    )sql",
    // 15 -> 16: the span of the record's current attempt (SPEC §12, core::SpanIds): a replay
    // links to it, `idem end` ends it. NULL: traces were off (and for records from before).
    R"sql(
    ALTER TABLE records ADD COLUMN trace_id TEXT;
    ALTER TABLE records ADD COLUMN span_id TEXT;
    ALTER TABLE records ADD COLUMN parent_span_id TEXT;
    )sql",
};
static_assert(std::size(k_migrations) == k_schema_version);

// Schedules (SPEC §11). An expectation (?1..?8), replacing the pattern's with its state.
inline constexpr const char* k_expectation_put = R"sql(
      INSERT OR REPLACE INTO expectations
        (pattern, every_ms, cron, tz, grace_ms, max_runtime, at_most, created_at, revision, state)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ''))sql";
inline constexpr const char* k_expectation_delete = "DELETE FROM expectations WHERE pattern = ?1";
inline constexpr const char* k_findings_delete = "DELETE FROM findings WHERE pattern = ?1";
inline constexpr const char* k_expectations = R"sql(
      SELECT pattern, every_ms, cron, tz, grace_ms, max_runtime, at_most, created_at, revision,
             state
      FROM expectations ORDER BY pattern LIMIT ?1)sql";
// An evaluation kept: ?1 pattern, ?2 the revision it read, ?3 the new state.
inline constexpr const char* k_expectation_save = R"sql(
      UPDATE expectations SET state = ?3, revision = revision + 1
      WHERE pattern = ?1 AND revision = ?2)sql";
// A success that started at ?2 resolves the open findings about a time before then.
inline constexpr const char* k_findings_resolve = R"sql(
      UPDATE findings SET resolved = 1
      WHERE pattern = ?1 AND resolved = 0 AND kind <> 'recovered' AND at < ?2)sql";
inline constexpr const char* k_finding_put = R"sql(
      INSERT INTO findings (pattern, kind, at, key, attempt, detail, found_at)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING)sql";
// The pattern's findings found before its ?2-th newest (one range of findings_by_found).
inline constexpr const char* k_findings_trim = R"sql(
      DELETE FROM findings WHERE pattern = ?1 AND found_at < (
        SELECT found_at FROM findings WHERE pattern = ?1
        ORDER BY found_at DESC LIMIT 1 OFFSET ?2))sql";
// ?1 pattern, ?2 only open ones (1) or any (0), ?3 limit: newest first.
inline constexpr const char* k_findings = R"sql(
      SELECT kind, at, key, attempt, detail, found_at, resolved FROM findings
      WHERE pattern = ?1 AND (?2 = 0 OR resolved = 0)
      ORDER BY found_at DESC, at DESC LIMIT ?3)sql";
// History entries started after (?1 started, ?2 key, ?3 number) and before ?4, whose key is in
// [?5, ?6) (?6 NULL: no end), oldest first, at most ?7: one range of attempts_by_start.
inline constexpr const char* k_attempts_started = R"sql(
      SELECT key, number, started_at, ended_at, outcome, exit_code, http_status
      FROM attempts INDEXED BY attempts_by_start
      WHERE started_at >= ?1 AND started_at < ?4
        AND (started_at > ?1 OR key > ?2 OR (key = ?2 AND number > ?3))
        AND key >= ?5 AND (?6 IS NULL OR key < ?6)
      ORDER BY started_at, key, number LIMIT ?7)sql";

// The tables and views of a file, SQLite's own aside (is it an idem store?).
inline constexpr const char* k_schema_tables = R"sql(
  SELECT name FROM sqlite_master
  WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
  ORDER BY name)sql";
inline constexpr const char* k_user_version = "PRAGMA user_version";
inline constexpr const char* k_application_id = "PRAGMA application_id";

// Every connection's settings once it is in WAL mode: every commit synced, no automatic
// checkpoint (see sqlite/store.cpp), no function of the schema run with side effects.
inline constexpr const char* k_journal_mode_wal = "PRAGMA journal_mode = WAL";
inline constexpr const char* k_page_size = "PRAGMA page_size";
inline constexpr const char* k_connection_settings =
    "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0; PRAGMA trusted_schema = OFF";

// The key's record (?1), all of its columns in the order the store reads them, then the rowid of
// its output in `outputs` (k_output_column: NULL when it has none, or not `with_output`).
const char* select_record(bool with_output);
// Its SELECT and columns alone, for a query of records that finds them otherwise.
const char* select_record_columns();
inline constexpr int k_output_column = 37;

// The claim (store/claim_flow.hpp): ?1 key, ?2 fingerprint, ?3 kind, ?4 attempt, ?5..?8 and ?16,
// ?17 the owner (host, boot id, pid, start; machine id, pid namespace), ?9 now, ?10 TTL, ?11
// request, ?12 token, ?13 lease end (NULL: none), ?14 replay_failures; ?15 the attempt replaced;
// ?18, ?19, ?20 the command's process group, its leader's start and its cgroup when the claim
// records it (NULL: set_process_group does, later); ?21 the status (running, or queued: a
// serial group's waiter), ?22 its serial group, ?23 its place in the group's line; ?24..?26 its
// span (trace id, span id, parent span id; NULL: none).
inline constexpr const char* k_claim_insert = R"sql(
        INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                             owner_pid, owner_start, started_at, ttl_ms, request, attempt_token,
                             lease_expires, replay_failures, owner_machine_id, owner_pid_ns, pgid,
                             pgid_start, cgroup, serial_group, queue_seq, trace_id, span_id,
                             parent_span_id)
        VALUES (?1, ?2, ?3, ?21, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?16,
                ?17, ?18, ?19, ?20, ?22, ?23, ?24, ?25, ?26)
        ON CONFLICT (key) DO NOTHING)sql";
// Replaces attempt ?15, whatever it holds, by the new running (or queued) attempt.
inline constexpr const char* k_claim_replace = R"sql(
        UPDATE records SET fingerprint = ?2, kind = ?3, status = ?21, attempt = ?4,
               serial_group = ?22, queue_seq = ?23, superseded_by = NULL,
               owner_host = ?5, owner_boot_id = ?6, owner_pid = ?7, owner_start = ?8,
               started_at = ?9, ttl_ms = ?10, request = ?11, finished_at = NULL,
               expires_at = NULL, exit_code = NULL, signal = NULL, timed_out = 0,
               output_bytes = 0, output_truncated = 0, note = '', response = NULL, pgid = ?18,
               pgid_start = ?19, cgroup = ?20, attempt_token = ?12, lease_expires = ?13,
               replay_failures = ?14, owner_machine_id = ?16, owner_pid_ns = ?17,
               trace_id = ?24, span_id = ?25, parent_span_id = ?26
        WHERE key = ?1 AND attempt = ?15)sql";

// ?1 key, ?2 attempt, ?3 the note.
inline constexpr const char* k_set_abandoned = R"sql(
      UPDATE records SET status = 'abandoned', note = ?3, attempt_token = '', lease_expires = NULL
      WHERE key = ?1 AND attempt = ?2 AND status = 'running')sql";

// Release (Store::release): ?1 key, ?2 token.
inline constexpr const char* k_release_first_attempt = R"sql(
        DELETE FROM records
        WHERE key = ?1 AND attempt_token = ?2 AND status = 'running' AND attempt = 1)sql";
inline constexpr const char* k_restore_previous_attempt = R"sql(
        UPDATE records SET attempt = attempt - 1, status = 'abandoned',
               note = 'attempt ' || attempt || ' was released', attempt_token = '',
               lease_expires = NULL
        WHERE key = ?1 AND attempt_token = ?2 AND status = 'running' AND attempt > 1)sql";

// ?1 key, ?2 attempt, ?3 status, ?4 finished (ms), ?5 exit code, ?6 signal, ?7 timed out, ?8 and
// ?9 output bytes and truncated, ?10 note, ?11 response, ?12 kept until removed (no expiry). Its
// output is written after it.
inline constexpr const char* k_finish = R"sql(
        UPDATE records SET status = ?3, finished_at = ?4,
               expires_at = CASE WHEN ?12 THEN NULL ELSE ?4 + ttl_ms END,
               exit_code = ?5, signal = ?6, timed_out = ?7, output_bytes = ?8,
               output_truncated = ?9, note = ?10, response = ?11, attempt_token = '',
               lease_expires = NULL
        WHERE key = ?1 AND attempt = ?2 AND status = 'running'
          AND (lease_expires IS NULL OR lease_expires > ?4))sql";

// The output of attempt ?2 of key ?1, a zeroblob of ?3 bytes that the store then writes in place.
inline constexpr const char* k_write_output = R"sql(
      INSERT OR REPLACE INTO outputs (key, attempt, output) VALUES (?1, ?2, zeroblob(?3)))sql";

// ?1 key, ?2 attempt, ?3 pgid, ?4 its leader's start, ?5 its cgroup (NULL: none).
inline constexpr const char* k_set_process_group = R"sql(
        UPDATE records SET pgid = ?3, pgid_start = ?4, cgroup = ?5
        WHERE key = ?1 AND attempt = ?2 AND status = 'running')sql";

// ?1 key, ?2 token, ?3 now, ?4 the new lease end (NULL: none).
inline constexpr const char* k_heartbeat = R"sql(
      UPDATE records SET lease_expires = ?4
      WHERE key = ?1 AND attempt_token = ?2 AND status = 'running'
        AND (lease_expires IS NULL OR lease_expires > ?3))sql";

// A record as given (put_all): its columns in order, ?1..?36 (no token).
inline constexpr const char* k_put = R"sql(
      INSERT INTO records (key, fingerprint, kind, status, attempt, owner_host, owner_boot_id,
                           owner_pid, owner_start, started_at, finished_at, ttl_ms, expires_at,
                           exit_code, signal, timed_out, output_bytes, output_truncated,
                           request, note, response, pgid, pgid_start, attempt_token,
                           lease_expires, replay_failures, owner_machine_id, owner_pid_ns,
                           replays, last_replay_at, cgroup, serial_group, queue_seq,
                           superseded_by, trace_id, span_id, parent_span_id)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
              ?19, ?20, ?21, ?22, ?23, '', ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34,
              ?35, ?36)
      ON CONFLICT (key) DO NOTHING)sql";
// An imported history entry as given: IDEM_HISTORY_INSERT_COLUMNS' ?1..?13.
inline constexpr const char* k_history_put =
    "INSERT INTO attempts " IDEM_HISTORY_INSERT_COLUMNS
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";

inline constexpr const char* k_delete_record = "DELETE FROM records WHERE key = ?1";

// The history (core::HistoryEntry), each statement one range of the key's primary key. The
// claimed attempt's entry: ?1 key, ?2 trigger, ?3 host, ?4 pid, ?5 started.
inline constexpr const char* k_history_start = R"sql(
      INSERT INTO attempts (key, number, started_by, owner_host, owner_pid, started_at, outcome)
      VALUES (?1, coalesce((SELECT max(number) FROM attempts WHERE key = ?1), 0) + 1, ?2, ?3, ?4,
              ?5, 'running'))sql";
// An expired record's history and replays, before its key's new first attempt (?1 key).
inline constexpr const char* k_history_clear = "DELETE FROM attempts WHERE key = ?1";
inline constexpr const char* k_replays_clear =
    "UPDATE records SET replays = 0, last_replay_at = NULL WHERE key = ?1";
// The latest entry, if running, abandoned: ?1 key, ?2 the reason.
inline constexpr const char* k_history_abandon = R"sql(
      UPDATE attempts SET outcome = 'abandoned', reason = ?2
      WHERE key = ?1 AND number = (SELECT max(number) FROM attempts WHERE key = ?1)
        AND outcome = 'running')sql";
// The latest entry finished: ?1 key, ?2 outcome, ?3 ended, ?4 reason, ?5 exit code, ?6 signal,
// ?7 HTTP status, ?8 note.
inline constexpr const char* k_history_finish = R"sql(
      UPDATE attempts SET outcome = ?2, ended_at = ?3, reason = ?4, exit_code = ?5, signal = ?6,
             http_status = ?7, note = ?8
      WHERE key = ?1 AND number = (SELECT max(number) FROM attempts WHERE key = ?1))sql";
// An imported record's history: its current attempt (?1 key).
inline constexpr const char* k_history_of_record = IDEM_SQLITE_HISTORY_OF_RECORDS " WHERE key = ?1";
// The ?3 newest entries (-1: all) numbered below ?2, newest first.
inline constexpr const char* k_history = R"sql(
      SELECT number, started_by, owner_host, owner_pid, started_at, ended_at, outcome, reason,
             exit_code, signal, http_status, note
      FROM attempts WHERE key = ?1 AND number < ?2 ORDER BY number DESC LIMIT ?3)sql";
// The numbers of the oldest and newest entries kept, each one probe of the primary key (SQLite
// optimises a min() or a max() alone in its query, not both in one).
inline constexpr const char* k_history_bounds = R"sql(
      SELECT (SELECT min(number) FROM attempts WHERE key = ?1),
             (SELECT max(number) FROM attempts WHERE key = ?1))sql";
// After a claim's entry: the entries older than the newest ?2 deleted (one range of the key).
inline constexpr const char* k_history_trim = R"sql(
      DELETE FROM attempts
      WHERE key = ?1 AND number <= (SELECT max(number) FROM attempts WHERE key = ?1) - ?2)sql";
// The rowid of attempt ?2's output of key ?1, for a range read by blob I/O.
inline constexpr const char* k_output_rowid =
    "SELECT rowid FROM outputs WHERE key = ?1 AND attempt = ?2";
// ?1 key, ?2 replays to add, ?3 the last one's time.
inline constexpr const char* k_count_replays = R"sql(
      UPDATE records SET replays = replays + ?2,
             last_replay_at = max(coalesce(last_replay_at, 0), ?3)
      WHERE key = ?1)sql";
// One batch of gc: the records whose rowids the query after it picks (gc_expired, gc_ended, with
// their LIMIT and a closing parenthesis), never a running or queued one.
inline constexpr const char* k_gc_delete_picked_prefix =
    "DELETE FROM records WHERE " IDEM_SQLITE_COLLECTABLE " AND rowid IN (";

// Serial groups (SPEC §9), ?1 the group. Its running record (records_group_runner), its line's
// head (records_queue), how many wait at places up to ?2, the place after its last.
inline constexpr const char* k_group_head_suffix =
    " FROM records WHERE serial_group = ?1 AND status = 'queued' ORDER BY queue_seq LIMIT 1";
inline constexpr const char* k_group_line_suffix =
    " FROM records WHERE serial_group = ?1 AND status = 'queued' ORDER BY queue_seq LIMIT ?2";
inline constexpr const char* k_group_runner_suffix =
    " FROM records WHERE serial_group = ?1 AND status = 'running' AND serial_group IS NOT NULL";
inline constexpr const char* k_queued_in_group = R"sql(
      SELECT count(*) FROM records
      WHERE serial_group = ?1 AND status = 'queued' AND queue_seq <= ?2)sql";
// Whether key ?1's record is in a serial group.
inline constexpr const char* k_in_serial_group =
    "SELECT serial_group IS NOT NULL FROM records WHERE key = ?1";
// Whether ?2 is key ?1's running attempt (live output is kept and read for it alone).
inline constexpr const char* k_running_attempt =
    "SELECT 1 FROM records WHERE key = ?1 AND attempt = ?2 AND status = 'running'";
// How many wait in group ?1's line (the triggers' count: serial_lines).
inline constexpr const char* k_queue_length =
    "SELECT coalesce((SELECT queued FROM serial_lines WHERE serial_group = ?1), 0)";
inline constexpr const char* k_next_queue_seq = R"sql(
      SELECT coalesce(max(queue_seq), 0) + 1 FROM records
      WHERE serial_group = ?1 AND status = 'queued')sql";
// Every queued record of group ?1 superseded by ?2 at ?3: finished then, expiring after its TTL.
inline constexpr const char* k_supersede_pending = R"sql(
      UPDATE records SET status = 'superseded', superseded_by = ?2, finished_at = ?3,
             expires_at = ?3 + ttl_ms, queue_seq = NULL, attempt_token = '',
             lease_expires = NULL
      WHERE serial_group = ?1 AND status = 'queued'
      RETURNING key)sql";
// The abandoned attempt ?2 of key ?1 waits again, as the next attempt, at place ?3.
inline constexpr const char* k_requeue = R"sql(
      UPDATE records SET status = 'queued', attempt = attempt + 1, queue_seq = ?3,
             attempt_token = '', lease_expires = NULL
      WHERE key = ?1 AND attempt = ?2 AND status = 'abandoned')sql";
// The queued attempt ?2 of key ?1 starts: ?3..?8 the owner (host, boot id, pid, start, machine
// id, pid namespace), ?9 token, ?10 lease end (NULL: none), ?11 now.
inline constexpr const char* k_start_queued = R"sql(
      UPDATE records SET status = 'running', owner_host = ?3, owner_boot_id = ?4, owner_pid = ?5,
             owner_start = ?6, owner_machine_id = ?7, owner_pid_ns = ?8, attempt_token = ?9,
             lease_expires = ?10, started_at = ?11, queue_seq = NULL
      WHERE key = ?1 AND attempt = ?2 AND status = 'queued')sql";
// ?1 key, ?2 token, ?3 the new lease end (NULL: none).
inline constexpr const char* k_renew_queued = R"sql(
      UPDATE records SET lease_expires = ?3
      WHERE key = ?1 AND attempt_token = ?2 AND status = 'queued')sql";
// ?1 key, ?2 token (Store::withdraw).
inline constexpr const char* k_withdraw = R"sql(
      DELETE FROM records WHERE key = ?1 AND attempt_token = ?2 AND status = 'queued')sql";
// The groups from ?1 (and below ?2 when bounded) with queued records, ?3 at most.
std::string queued_groups(bool bounded);

// doctor's trial write (Store::check_writable), rolled back: a table of its own, ?1 bytes.
inline constexpr const char* k_create_write_probe = "CREATE TABLE idem_write_probe (b BLOB)";
inline constexpr const char* k_write_probe = "INSERT INTO idem_write_probe VALUES (zeroblob(?1))";
inline constexpr const char* k_quick_check = "PRAGMA quick_check(5)";

// How many keys are >= ?1 (and < ?2 when `bounded`), counting no further than `max`, from the
// key index alone.
std::string count_keys_with_prefix(bool bounded, int64_t max);

// The least string above every string that starts with `prefix`, in byte order ("" if there is
// none), so "key >= prefix AND key < end" is the prefix as an index range.
std::string prefix_end(std::string prefix);

// SELECT `what` (rowid, count(*)) of the expired records / of the finished ones older than ?2.
std::string gc_expired(const char* what);
std::string gc_ended(const char* what);

// Unfinished records alone (store.hpp) are read from their partial index, records_unfinished,
// whatever list()'s `by_key` says.
using store::lists_unfinished_only;

// The listing, newest first, through the index of `drive`; ?4 the kind, ?5 and ?6 the bounds of
// started_at, ?7 and ?8 the cursor, ?9 the result class (ListQuery). With `stop`, only up to the
// entry ?10 (started_at), ?11 (key), where a bounded scan ends (list_stop).
std::string list(const ListQuery& query, ListDrive drive, bool stop);
// The same through the drive SQLite walks without counting: the key index with `by_key` (a rare
// prefix), else the unfinished records' index, or the first of list_drives (for the plan tests).
std::string list(const ListQuery& query, bool by_key);
// How many entries of `drive`'s index are in the listing's range, counting no further than ?12.
std::string list_count(const ListQuery& query, ListDrive drive);
// The ?12-th entry (1-based) of `drive`'s index in the listing's range: its started_at and key,
// where a scan of ?12 entries ends; no row when the range holds fewer.
std::string list_stop(const ListQuery& query, ListDrive drive);

}  // namespace idem::store::sqlite_sql
