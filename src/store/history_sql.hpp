#pragma once
// The SQL both store backends share for a history entry made from a record as it stands (the
// migrations that brought the history, and import): its current attempt, as far as the record
// tells it. A released attempt's record notes it ("attempt N was released"); any other abandoned
// one counts as its owner's death. Plain SQL of both dialects; each backend adds its table names
// and how it reads the stored answer's HTTP status.

// The columns key, number, started_by, owner_host, owner_pid, started_at, ended_at, outcome,
// reason, exit_code and signal of the history entry, read from a record's row.
#define IDEM_HISTORY_COLUMNS_OF_RECORD                                                        \
  "key, attempt, CASE kind WHEN 'http' THEN 'hook' ELSE kind END, owner_host, owner_pid, "    \
  "started_at, finished_at, status, "                                                         \
  "CASE WHEN status = 'running' THEN '' "                                                     \
  "WHEN status = 'abandoned' THEN CASE WHEN note LIKE 'lease ran out%' THEN 'lease ran out' " \
  "WHEN note LIKE '% was released' THEN 'released' ELSE 'owner died' END "                    \
  "WHEN timed_out THEN 'timeout' WHEN signal IS NOT NULL THEN 'signal' "                      \
  "WHEN response IS NOT NULL THEN 'status' WHEN exit_code IS NOT NULL THEN 'exit' "           \
  "ELSE 'error' END, exit_code, signal"

// The column list of the history entry those are inserted into, http_status and note after them.
#define IDEM_HISTORY_INSERT_COLUMNS                                                          \
  "(key, number, started_by, owner_host, owner_pid, started_at, ended_at, outcome, reason, " \
  "exit_code, signal, http_status, note)"
