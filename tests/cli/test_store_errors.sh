#!/usr/bin/env bash
# A store that cannot be opened, read or written: exit 74, one "idem:" line, the command not run.
# SQLite's files, or on PostgreSQL what stands for them.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

cmd=(sh -c 'echo x > "$1"' sh "$T/ran")
store_error() {  # store_error NAME DB [IDEM ARGS...]: with IDEM_DB=DB, idem exits 74, ran nothing
  local name=$1 db=$2
  shift 2
  capture "$name" env IDEM_DB="$db" "$IDEM_BIN" "$@"
  expect_rc 74
  assert_idem_error
  [[ ! -e $T/ran ]] || fail "$name: the command ran although the store failed"
}

# PostgreSQL: idem has no files there to break (test_postgres.sh covers a refused login). A server
# nobody listens on, a database that does not exist, and a schema newer than this idem.
if [[ -n ${IDEM_STORE:-} ]]; then
  pg_store_error() {  # pg_store_error NAME URL [IDEM ARGS...]: as store_error, with IDEM_STORE=URL
    local name=$1 url=$2
    shift 2
    capture "$name" env IDEM_STORE="$url" "$IDEM_BIN" "$@"
    expect_rc 74
    assert_idem_error
    [[ ! -e $T/ran ]] || fail "$name: the command ran although the store failed"
  }
  pg_store_error closed "postgresql://idem@127.0.0.1:1/postgres" run -k k -- "${cmd[@]}"
  pg_store_error closed-ls "postgresql://idem@127.0.0.1:1/postgres" ls
  pg_store_error no-database "${IDEM_TEST_PG_URL%/*}/idem_no_such_database" run -k k -- "${cmd[@]}"
  idem run -k k -- true
  version=$(psql -qXAt "$IDEM_STORE" -c 'SELECT version FROM idem_schema')
  psql -qX "$IDEM_STORE" -c 'UPDATE idem_schema SET version = 999'
  pg_store_error future "$IDEM_STORE" run -k k2 -- "${cmd[@]}"
  pg_store_error future-status "$IDEM_STORE" status k
  assert_eq 999 "$(psql -qXAt "$IDEM_STORE" -c 'SELECT version FROM idem_schema')" "version after the refusal"
  psql -qX "$IDEM_STORE" -c "UPDATE idem_schema SET version = $version"
  assert_status k succeeded
  exit 0
fi

# A path that cannot be created. Root ignores permission bits, so use a path under a regular file.
if (($(id -u) == 0)); then
  : >"$T/file"
  unwritable=$T/file/idem.db
else
  mkdir "$T/ro"
  chmod 500 "$T/ro"
  unwritable=$T/ro/idem.db
fi
store_error unwritable "$unwritable" run -k k -- "${cmd[@]}"
store_error unwritable-ls "$unwritable" ls

# Garbage in the database file.
"$(helper genbytes)" 8192 5 >"$T/corrupt.db"
cp "$T/corrupt.db" "$T/corrupt.orig"
store_error corrupt "$T/corrupt.db" run -k k -- "${cmd[@]}"
store_error corrupt-status "$T/corrupt.db" status k
store_error corrupt-ls "$T/corrupt.db" ls
assert_same "$T/corrupt.orig" "$T/corrupt.db"
printf 'SQLite format 3\0garbage after the header' >"$T/corrupt2.db"
store_error corrupt-header "$T/corrupt2.db" run -k k -- "${cmd[@]}"

# A symlinked database, existing or dangling, is refused and not followed.
IDEM_DB=$T/real.db idem run -k k -- true
ln -s "$T/real.db" "$T/link.db"
store_error symlink "$T/link.db" run -k other -- "${cmd[@]}"
grep -qiE 'symlink|symbolic link' "$T/symlink.err" || fail "the symlink refusal does not say why: $(cat "$T/symlink.err")"
store_error symlink-ls "$T/link.db" ls
ln -s "$T/target.db" "$T/dangling.db"
store_error dangling "$T/dangling.db" run -k k -- "${cmd[@]}"
[[ ! -e $T/target.db ]] || fail "idem created the database through a dangling symlink"

# A folder where the WAL or the shared-memory file goes: refused, and no database file is left
# behind (a later idem would find an empty file of nobody's making).
for companion in wal shm; do
  mkdir -p "$T/taken-$companion/s.db-$companion"
  store_error "taken-$companion" "$T/taken-$companion/s.db" run -k k -- "${cmd[@]}"
  assert_bytes "$T/taken-$companion.err" 'idem: store %s is not a regular file; move it away\n' \
    "$T/taken-$companion/s.db-$companion"
  [[ ! -e $T/taken-$companion/s.db ]] || fail "a failed open left $T/taken-$companion/s.db behind"
done

# A database owned by someone else (only root can set that up).
if (($(id -u) == 0)); then
  IDEM_DB=$T/foreign.db idem run -k k -- true
  chown 65534 "$T/foreign.db"
  store_error foreign "$T/foreign.db" run -k k2 -- "${cmd[@]}"
fi

# A schema newer than the binary knows is refused, and left as it is.
IDEM_DB=$T/future.db idem run -k k -- true
sqlite3 "$T/future.db" 'PRAGMA user_version=999'
store_error future "$T/future.db" run -k k2 -- "${cmd[@]}"
store_error future-status "$T/future.db" status k
assert_eq 999 "$(sqlite3 "$T/future.db" 'PRAGMA user_version')" "user_version after the refusal"

# A file that is not an idem store (another program's tables, another application_id) is refused
# and left exactly as it was: its bytes, its mode (not made private), nothing beside it.
sqlite3 "$T/other.db" 'create table t(x)'
chmod 644 "$T/other.db"
cp "$T/other.db" "$T/other.orig"
capture other "$IDEM_BIN" --db "$T/other.db" run -k k -- "${cmd[@]}"
expect_rc 74
assert_idem_error
assert_bytes "$T/other.err" 'idem: store %s is not an idem store (it holds other tables: t): give idem a file of its own\n' "$T/other.db"
[[ ! -e $T/ran ]] || fail "the command ran although the store was refused"
assert_same "$T/other.orig" "$T/other.db"
assert_eq 644 "$(stat -c %a "$T/other.db")" "mode of the refused file"
for f in "$T/other.db"-{wal,shm,journal}; do
  [[ ! -e $f ]] || fail "the refusal left $f behind"
done
sqlite3 "$T/other-app.db" 'PRAGMA application_id = 1234; create table records(x)'
store_error other-app "$T/other-app.db" ls
grep -qF 'is not an idem store (it holds another application_id 0x000004d2)' "$T/other-app.err" ||
  fail "the refusal does not say why: $(cat "$T/other-app.err")"

# The working store is untouched by all this.
IDEM_DB=$T/real.db idem status k >"$T/real.status"
assert_bytes "$T/real.status" 'succeeded\n'
integrity_ok "$T/real.db"
