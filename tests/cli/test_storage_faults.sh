#!/usr/bin/env bash
# Issue 3 / contract §8.4: when the store cannot grow, is read-only, or stays locked past the busy
# timeout, idem exits 74 with a one-line message, the command does not run if its claim could not
# be made durable, and the records already stored are intact.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

seed() {
  capture seed idem run -k kept -- printf 'kept output\n'
  expect_rc 0
  capture gc idem gc  # truncates the WAL to zero bytes: the next write must grow a file
  expect_rc 0
}
records_intact() {
  assert_status kept succeeded
  idem show kept --stdout >"$T/kept.out"
  assert_bytes "$T/kept.out" 'kept output\n'
  integrity_ok
}
# limited BLOCKS CMD...: runs CMD under `ulimit -f BLOCKS`, its stderr through a pipe into
# $T/limited.err (a file written past the limit would fail too), its stdout discarded. Sets rc.
limited() {
  local blocks=$1 err
  shift
  rc=0
  _last=limited
  err=$(bash -c 'ulimit -f "$1"; shift; exec "$@"' limit "$blocks" "$@" 2>&1 >/dev/null) || rc=$?
  printf '%s\n' "$err" >"$T/limited.err"
  : >"$T/limited.out"
}

# PostgreSQL: the server's disk is not this process's to limit (ulimit -f), and the server keeps
# its own files; parts 1 and 2 are SQLite's. Parts 3 and 4 have their PostgreSQL forms below.
pg=${IDEM_STORE:+yes}
seed
if [[ -z $pg ]]; then
# 1. The database cannot grow at all: the claim cannot be made durable, so nothing runs.
limited 0 "$IDEM_BIN" run -k new -- sh -c 'echo ran >"$1"' sh "$T/ran"
expect_rc 74
assert_idem_error limited
[[ ! -e $T/ran ]] || fail "the command ran although its claim could not be stored"
grep -q 'disk I/O error\|disk is full' "$T/limited.err" || fail "unclear message: $(cat "$T/limited.err")"
assert_status new none
records_intact

# 2. Room for the claim but not for the outcome: the command has run, idem says so, and the key
# is left for a human (abandoned), never silently run again.
limited 64 "$IDEM_BIN" run -k big -- sh -c 'echo x >>"$1"; head -c 300000 /dev/zero' sh "$T/ran-big"
expect_rc 74
grep -q 'the command ran (exit 0) but its outcome could not be recorded' "$T/limited.err" ||
  fail "unclear message: $(cat "$T/limited.err")"
assert_lines 1 "$T/ran-big"
assert_status big abandoned
capture big-again idem run -k big -- sh -c 'echo x >>"$1"; head -c 300000 /dev/zero' sh "$T/ran-big"
expect_rc 69
assert_lines 1 "$T/ran-big"
records_intact
fi

# 3. Read-only store. On PostgreSQL: a session whose transactions are read-only.
if [[ -n $pg ]]; then
  capture readonly env IDEM_STORE="$IDEM_STORE%20-cdefault_transaction_read_only%3Don" "$IDEM_BIN" \
    run -k new -- sh -c 'echo ran >"$1"' sh "$T/ran-ro"
  expect_rc 74
  assert_idem_error readonly
  grep -qi 'read-only' "$T/readonly.err" || fail "unclear message: $(cat "$T/readonly.err")"
  [[ ! -e $T/ran-ro ]] || fail "the command ran on a read-only store"
  records_intact
else
# 3. Read-only store. Root ignores file modes, so as root the test runs idem as nobody on a store
# that nobody owns but may not write.
ro_db=$T/ro/idem.db
mkdir -p "$T/ro"
IDEM_DB=$ro_db idem run -k kept -- printf 'kept output\n' >/dev/null
IDEM_DB=$ro_db idem gc >/dev/null
as_user=()
ro_bin=$IDEM_BIN
if [[ $(id -u) == 0 ]]; then
  chown -R nobody: "$T/ro"
  chmod 755 "$T"
  # The build tree may sit in a private folder nobody cannot enter: use a copy of the binary.
  ro_bin=$T/idem-copy
  cp "$IDEM_BIN" "$ro_bin"
  chmod 755 "$ro_bin"
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
chmod 400 "$ro_db"
capture readonly "${as_user[@]}" env IDEM_DB="$ro_db" "$ro_bin" run -k new -- sh -c 'echo ran >"$1"' sh "$T/ran-ro"
expect_rc 74
assert_idem_error readonly
grep -qi 'readonly\|read-only\|unable to open' "$T/readonly.err" || fail "unclear message: $(cat "$T/readonly.err")"
[[ ! -e $T/ran-ro ]] || fail "the command ran on a read-only store"
chmod 600 "$ro_db"
assert_eq succeeded "$("${as_user[@]}" env IDEM_DB="$ro_db" "$ro_bin" status kept)" "status of kept in the read-only store"
integrity_ok "$ro_db"
fi

# 4. Another process holds the write lock longer than the busy timeout. On PostgreSQL: a session
# that holds a lock on the records table that every write waits for.
mkfifo "$T/sql"
if [[ -n $pg ]]; then
  psql -qX "$IDEM_STORE" <"$T/sql" >/dev/null 2>&1 &
  BG[locker]=$!
  exec 7>"$T/sql"
  printf 'BEGIN;\nLOCK TABLE idem_records IN EXCLUSIVE MODE;\n' >&7
  probe() {
    [[ $(psql -qXAt "$IDEM_STORE" -c "SELECT count(*) FROM pg_locks WHERE granted AND
      mode = 'ExclusiveLock' AND relation = 'idem_records'::regclass") == 1 ]]
  }
  locked_message='lock timeout'
else
  sqlite3 "$IDEM_DB" <"$T/sql" >/dev/null 2>&1 &
  BG[locker]=$!
  exec 7>"$T/sql"
  printf '.timeout 20000\nBEGIN IMMEDIATE;\nUPDATE records SET note = note;\n' >&7
  # The lock is held once a writer with no patience (busy timeout 0) is refused.
  probe() {
    local r=0
    # A new key each time: one that ran before the lock was taken would only be replayed,
    # which takes no lock, so the probe would never see it.
    probes=$((${probes:-0} + 1))
    IDEM_BUSY_TIMEOUT=0 "$IDEM_BIN" run -k "probe-$probes" -- true >/dev/null 2>&1 || r=$?
    ((r == 74))
  }
  locked_message='database is locked'
fi
wait_until "the locker holds the write lock" probe
capture locked env IDEM_BUSY_TIMEOUT=1s "$IDEM_BIN" run -k new -- sh -c 'echo ran >"$1"' sh "$T/ran-locked"
expect_rc 74
assert_idem_error locked
grep -q "$locked_message" "$T/locked.err" || fail "unclear message: $(cat "$T/locked.err")"
[[ ! -e $T/ran-locked ]] || fail "the command ran without a claim"

# A lock released while idem waits is waited out, never shown.
bg waiter idem run -k waited -- printf 'waited\n'
printf 'COMMIT;\n' >&7
exec 7>&-
bg_wait waiter
expect_rc 0
assert_bytes "$T/waiter.out" 'waited\n'
assert_empty "$T/waiter.err"
records_intact
