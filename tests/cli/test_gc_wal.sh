#!/usr/bin/env bash
# gc ends with a TRUNCATE checkpoint that empties the WAL. A process that reads the store (here
# sqlite3 inside a read transaction) keeps it from doing so: gc still deletes and prints its
# count (exit 0), and says on stderr that the WAL was left, and how large; once the reader is
# done, the next gc empties it and says nothing. SQLite only (PostgreSQL has no WAL of idem's).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
[[ -z ${IDEM_STORE:-} ]] || skip "the WAL is SQLite's"

wal_size() { stat -c %s "$IDEM_DB-wal"; }

capture first idem run -k first -- echo hi
expect_rc 0
capture gc0 idem gc
expect_rc 0
assert_empty "$T/gc0.err"
assert_eq 0 "$(wal_size)" "the WAL after gc"

capture second idem run -k second -- echo hi
expect_rc 0
(($(wal_size) > 0)) || fail "the run wrote no WAL"
# The reader: a read transaction that holds its snapshot until the test releases it. It says
# that it holds it through the fifo 'reading' (.system runs once the SELECT has been read).
mkfifo "$T/reading" "$T/hold"
bg reader sh -c '{ printf "BEGIN;\nSELECT count(*) FROM records;\n.system echo >%s\n" "$1"
                   cat "$2"; printf "COMMIT;\n"; } | sqlite3 "$3"' sh "$T/reading" "$T/hold" "$IDEM_DB"
timeout 20 cat "$T/reading" >/dev/null || fail "the reader never began its read transaction"
capture held env IDEM_BUSY_TIMEOUT=100ms "$IDEM_BIN" gc
expect_rc 0
assert_bytes "$T/held.out" 'removed 0\n'
left=$(wal_size)
((left > 0)) || fail "the WAL was emptied under a reader"
grep -qx "idem: the WAL $IDEM_DB-wal still holds [0-9.]*KiB: the checkpoint could not empty it while another process reads the store (or holds its writer lock); run idem gc again once it is done (fuser $IDEM_DB-wal names the processes that have it open)" "$T/held.err" ||
  fail "gc's notice: $(cat "$T/held.err")"
assert_lines 1 "$T/held.err"
release_fifo "$T/hold"
bg_wait reader
expect_rc 0
assert_eq 2 "$(cat "$T/reader.out")" "the reader's count"

# Done reading: the next gc empties the WAL (after another run, so that it holds frames again
# whatever sqlite3 did on closing).
capture third idem run -k third -- echo hi
expect_rc 0
(($(wal_size) > 0)) || fail "the run wrote no WAL"
capture free idem gc
expect_rc 0
assert_empty "$T/free.err"
assert_eq 0 "$(wal_size)" "the WAL after gc"
# A dry run checkpoints nothing and says nothing.
capture dry idem gc --dry-run
expect_rc 0
assert_empty "$T/dry.err"
