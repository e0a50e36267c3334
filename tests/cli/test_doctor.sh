#!/usr/bin/env bash
# doctor: a healthy store says so (exit 0); each finding is one line with what to do (exit 1):
# no store yet, loose modes, a world-writable folder, records running with their owner gone and
# abandoned ones (counted past twenty), a config whose secrets are unset or that does not load;
# a store that cannot be opened or is damaged exits 74. --json says the same; bad flags are 64.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
# A killed owner is abandoned once its lease runs out on PostgreSQL (await_abandoned); SQLite
# takes no lease.
export IDEM_LEASE=2s

on_sqlite() { [[ -z ${IDEM_STORE:-} ]]; }
# wal_extent WAL committed|written: where the WAL's last committed frame ends, or the last frame
# written since its last reset (a frame with the header's salt). idem's WAL is longer than its
# frames: it is extended with zeros ahead of its writes (src/store/sqlite/connection.cpp).
wal_extent() {
  python3 - "$1" "$2" <<'PY'
import sys
wal = open(sys.argv[1], "rb").read()
page = int.from_bytes(wal[8:12], "big")
salt, end, committed = wal[16:24], 32, 32
while len(wal) >= 32 and end + 24 + page <= len(wal) and wal[end + 8:end + 16] == salt:
    if int.from_bytes(wal[end + 4:end + 8], "big"):
        committed = end + 24 + page
    end += 24 + page
print(committed if sys.argv[2] == "committed" else end)
PY
}
# last_line NAME: the summary line of a capture.
last_line() { tail -n 1 "$T/$1.out"; }
# json_checks NAME: the check of each finding of a --json capture, one per line.
json_checks() { jsonq /findings <"$T/$1.out" | grep -o '"check":"[a-z-]*"' | cut -d'"' -f4; }

# No store yet: said, and none is created.
if on_sqlite; then
  capture none idem doctor
  expect_rc 1
  file_has "$T/none.out" "warning: there is no store at $IDEM_DB yet (the first idem command creates it); if records were expected here" ||
    fail "missing store: $(cat "$T/none.out")"
  assert_eq "0 errors, 1 warning: store $IDEM_DB" "$(last_line none)" "summary"
  [[ ! -e $IDEM_DB ]] || fail "doctor created the store"
fi

# Healthy.
capture first idem run -k first -- echo hi
expect_rc 0
capture ok idem doctor
expect_rc 0
assert_lines 2 "$T/ok.out"
grep -qE '^healthy: store .* \((SQLite|PostgreSQL) [0-9.]+.*, schema [0-9]+\)$' "$T/ok.out" ||
  fail "healthy line: $(cat "$T/ok.out")"
# And what leftovers of an attempt can be seen here: in a cgroup of its own, or its group only.
grep -qE '^processes: (each attempt runs in a cgroup of its own under /|attempts have their process group only \()' "$T/ok.out" ||
  fail "processes line: $(cat "$T/ok.out")"
assert_empty "$T/ok.err"
capture okj idem doctor --json
expect_rc 0
assert_eq true "$(jsonq /healthy <"$T/okj.out")" "healthy"
assert_eq 0 "$(jsonq /exit <"$T/okj.out")" "exit"
assert_eq '[]' "$(jsonq /findings <"$T/okj.out")" "findings"
IDEM_CGROUP=off capture offj idem doctor --json
assert_eq false "$(jsonq /processes/cgroups <"$T/offj.out")" "cgroups with IDEM_CGROUP=off"
file_has "$T/offj.out" "process group only (IDEM_CGROUP=off)" || fail "off: $(cat "$T/offj.out")"
assert_eq '[]' "$(jsonq /store/damage <"$T/okj.out")" "damage"

if on_sqlite; then
  # A store folder reached through a symlink (systemd's DynamicUser makes /var/lib/idem one) is
  # judged by the folder it names.
  mkdir -m 0700 "$T/private"
  ln -s private "$T/linked"
  IDEM_DB="$T/linked/s.db" "$IDEM_BIN" run -k k -- true
  capture linked env IDEM_DB="$T/linked/s.db" "$IDEM_BIN" doctor
  expect_rc 0
  # Modes: a folder others can read, a world-writable one, a WAL others can read.
  chmod 0755 "$T"
  capture open idem doctor
  expect_rc 1
  file_has "$T/open.out" "warning: store folder $T is mode 0755: others can see or change what is in it; chmod 700 $T" ||
    fail "folder mode: $(cat "$T/open.out")"
  chmod 0777 "$T"
  capture world idem doctor --json
  expect_rc 74  # idem refuses a store there (test_planted_wal.sh)
  [[ $(json_checks world) == folder-world-writable* ]] ||
    fail "world-writable folder: $(json_checks world)"
  chmod 0700 "$T"
  [[ -e $IDEM_DB-wal ]] || fail "no WAL beside the store"
  chmod 0644 "$IDEM_DB-wal"
  capture wal idem doctor
  expect_rc 1
  file_has "$T/wal.out" "warning: WAL $IDEM_DB-wal is mode 0644: others can read what it holds (outputs may hold secrets); chmod 600 $IDEM_DB-wal" ||
    fail "WAL mode: $(cat "$T/wal.out")"
  chmod 0600 "$IDEM_DB-wal"
  if (($(id -u) == 0)); then
    chown 65534 "$IDEM_DB"
    capture owner idem doctor
    expect_rc 74
    file_has "$T/owner.out" "error: store $IDEM_DB is owned by uid 65534, not by you (uid 0): idem refuses it;" ||
      fail "owner: $(cat "$T/owner.out")"
    file_has "$T/owner.out" "error: store $IDEM_DB is owned by uid 65534, not by you; refusing to use it;" ||
      fail "open refused: $(cat "$T/owner.out")"
    chown 0 "$IDEM_DB"
  fi
fi

# A writer lock held past the busy timeout: said, with what to look for.
if on_sqlite; then
  mkfifo "$T/hold"
  # The holder waits for the lock itself: the poll below takes it for a moment too.
  bg holder sh -c '{ echo ".timeout 20000"; echo "BEGIN IMMEDIATE; DELETE FROM records WHERE 0;"; cat "$1"; } | sqlite3 "$2"' sh "$T/hold" "$IDEM_DB"
  wait_until "sqlite3 holds the writer lock" sh -c '! sqlite3 "$1" "PRAGMA busy_timeout = 0; BEGIN IMMEDIATE; ROLLBACK" 2>/dev/null' sh "$IDEM_DB"
  capture locked env IDEM_BUSY_TIMEOUT=200ms "$IDEM_BIN" doctor
  expect_rc 1
  grep -q "^error: .*locked.*; find the process that holds the store's writer lock (fuser)" "$T/locked.out" ||
    fail "locked store: $(cat "$T/locked.out")"
  release_fifo "$T/hold"
  bg_wait holder
  capture unlocked idem doctor
  expect_rc 0
fi

# A store that can be read but not written: a read-only mount, a full file system. Every run
# then fails (74); doctor says so (exit 1) with a trial write that is rolled back, and the free
# space of the store's file system. Each in a mount namespace of its own (needs root).
if on_sqlite && (($(id -u) == 0)) && unshare --mount true 2>/dev/null; then
  mkdir -m 0700 "$T/ro"
  IDEM_DB="$T/ro/s.db" "$IDEM_BIN" run -k kept -- echo kept >/dev/null
  cp "$T/ro/s.db" "$T/ro.copy"
  cp "$T/ro/s.db-wal" "$T/ro-wal.copy"
  capture ro unshare --mount sh -c 'mount --bind -o ro "$1" "$1" || exit 99
    IDEM_DB="$1/s.db" "$2" run -k new -- true 2>"$1.run.err" && exit 98
    IDEM_DB="$1/s.db" "$2" doctor >"$1.human"
    IDEM_DB="$1/s.db" exec "$2" doctor --json' sh "$T/ro" "$IDEM_BIN"
  expect_rc 1
  assert_eq store-writable "$(json_checks ro)" "read-only mount"
  grep -q 'readonly' "$T/ro.run.err" || fail "the run's refusal: $(cat "$T/ro.run.err")"
  grep -q "^error: a trial write to the store failed: store $T/ro/s.db: attempt to write a readonly database; until it can write, every run fails (exit 74): " "$T/ro.human" ||
    fail "read-only finding: $(cat "$T/ro.human")"
  grep -qx "1 error, 0 warnings: store $T/ro/s.db (SQLite [0-9.]*, schema [0-9]*)" "$T/ro.human" ||
    fail "read-only summary: $(cat "$T/ro.human")"
  # Writable again: the trial write changed nothing. The database file is as it was, the WAL's
  # committed frames too; its own frames lie past them (sqlite3 comes last: closing, it
  # checkpoints the WAL into the database and removes it).
  capture rw env IDEM_DB="$T/ro/s.db" "$IDEM_BIN" doctor
  expect_rc 0
  assert_same "$T/ro.copy" "$T/ro/s.db"
  committed=$(wal_extent "$T/ro-wal.copy" committed)
  cmp -s <(head -c "$committed" "$T/ro/s.db-wal") <(head -c "$committed" "$T/ro-wal.copy") ||
    fail "the trial write changed the WAL's committed frames"
  assert_eq "$committed" "$(wal_extent "$T/ro/s.db-wal" committed)" "the WAL's committed frames"
  grew=$(($(wal_extent "$T/ro/s.db-wal" written) - committed))
  ((grew <= 6 * (4096 + 24))) || fail "the trial write wrote $grew bytes of frames"
  IDEM_DB="$T/ro/s.db" "$IDEM_BIN" doctor >/dev/null  # again: written over, not appended
  assert_eq "$grew" "$(($(wal_extent "$T/ro/s.db-wal" written) - committed))" "frames after a second trial"
  assert_eq "kept succeeded" "$(sqlite3 "$T/ro/s.db" "SELECT group_concat(key || ' ' || status) FROM records")" "records"
  assert_eq "attempts expectations findings outputs records serial_lines" "$(sqlite3 "$T/ro/s.db" "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name)")" "tables"
  integrity_ok "$T/ro/s.db"

  # A small file system: a warning; a full one: an error, and the trial write fails.
  mkdir -m 0700 "$T/small"
  capture small unshare --mount sh -c 'mount -t tmpfs -o size=8m,mode=0700 idem-test "$1" || exit 99
    IDEM_DB="$1/s.db" "$2" run -k kept -- echo kept >/dev/null || exit 98
    IDEM_DB="$1/s.db" "$2" gc >/dev/null || exit 97
    IDEM_DB="$1/s.db" "$2" doctor --json >"$1.small.json"
    head -c 16M /dev/zero >"$1/filler" 2>/dev/null && exit 96
    # The WAL has room past its frames (idem extends it ahead of its writes): runs fit there
    # until it is used up, then fail.
    i=0
    while IDEM_DB="$1/s.db" "$2" run -k "new$i" -- true 2>"$1.run.err"; do
      i=$((i + 1))
      [ "$i" -lt 200 ] || exit 95
    done
    IDEM_DB="$1/s.db" "$2" doctor >"$1.human"
    IDEM_DB="$1/s.db" exec "$2" doctor --json' sh "$T/small" "$IDEM_BIN"
  expect_rc 1
  grep -q 'disk is full' "$T/small.run.err" || fail "the run's refusal: $(cat "$T/small.run.err")"
  assert_eq free-space "$(jsonq /findings <"$T/small.small.json" | grep -o '"check":"[a-z-]*"' | cut -d'"' -f4)" "small file system"
  grep -q '"problem":"the file system of store folder [^"]* has 7\.[0-9]MiB free, less than the 34MiB the store may need' "$T/small.small.json" ||
    fail "small file system: $(cat "$T/small.small.json")"
  assert_eq warning "$(jsonq /findings/0/severity <"$T/small.small.json")" "small file system's severity"
  free=$(jsonq /store/free_bytes <"$T/small.small.json")
  ((free > 7 << 20 && free < 8 << 20)) || fail "free_bytes $free"
  # (The failed run may leave its claim behind, running with its owner gone: a finding too.)
  for check in free-space store-writable; do
    json_checks small | grep -qx "$check" || fail "full file system: no $check in $(cat "$T/small.out")"
  done
  assert_eq 0 "$(jsonq /store/free_bytes <"$T/small.out")" "free_bytes when full"
  file_has "$T/small.human" "error: the file system of store folder $T/small has 0B free: a run's claim or outcome may not fit, and every run then fails (exit 74); free space on it" ||
    fail "full: $(cat "$T/small.human")"
  grep -q "^error: a trial write to the store failed: .*disk is full; until it can write" "$T/small.human" ||
    fail "full: $(cat "$T/small.human")"
fi

# On PostgreSQL: a role that may read the records but not write them, and a session whose
# transactions are read-only. Every run would fail (74); the trial write finds it (exit 1).
if ! on_sqlite; then
  role=idem_reader_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
  schema=${IDEM_STORE##*search_path%3D}  # the test's own (lib.sh)
  psql -qX "$IDEM_STORE" -c "CREATE ROLE $role LOGIN PASSWORD 'reader'" \
    -c "GRANT USAGE ON SCHEMA $schema TO $role" \
    -c "GRANT SELECT ON ALL TABLES IN SCHEMA $schema TO $role"
  reader=(env PGPASSWORD=reader IDEM_STORE="${IDEM_STORE/idem@/$role@}" "$IDEM_BIN")
  capture reader-run "${reader[@]}" run -k by-reader -- true
  expect_rc 74
  file_has "$T/reader-run.err" "permission denied" || fail "the reader's run: $(cat "$T/reader-run.err")"
  capture reader "${reader[@]}" doctor
  expect_rc 1
  grep -q "^error: a trial write to the store failed: .*permission denied for table idem_records; until it can write, every run fails (exit 74): " "$T/reader.out" ||
    fail "a role that cannot write: $(cat "$T/reader.out")"
  capture reader-json "${reader[@]}" doctor --json
  expect_rc 1
  assert_eq store-writable "$(json_checks reader-json)" "a role that cannot write"
  psql -qX "$IDEM_STORE" -c "DROP OWNED BY $role" -c "DROP ROLE $role"
  capture readonly env IDEM_STORE="$IDEM_STORE%20-cdefault_transaction_read_only%3Don" "$IDEM_BIN" doctor
  expect_rc 1
  grep -q "^error: a trial write to the store failed: .*read-only transaction" "$T/readonly.out" ||
    fail "a read-only session: $(cat "$T/readonly.out")"
  assert_eq none "$(idem status by-reader)" "the reader's run"
  capture writer idem doctor
  expect_rc 0
fi

# A running record whose owner was killed, then the same record abandoned.
cmd=(sh -c 'echo $$ > "$1"; exec sleep 1000' sh "$T/cmd.pid")
track_pid_file "$T/cmd.pid"
bg owner idem run -k 'night ly' -- "${cmd[@]}"
wait_until "the command starts" test -s "$T/cmd.pid"
wait_until "the record is running" status_is 'night ly' running
capture live idem doctor
expect_rc 0  # a running record whose owner lives is no finding
kill -KILL "$(bg_pid owner)"
bg_wait owner
wait_until "the command is gone" pid_gone "$(cat "$T/cmd.pid")"
# On PostgreSQL its lease decides: the owner is gone once it has run out.
[[ -z ${_pg_schema:-} ]] || wait_until "the lease of 'night ly' runs out" status_is 'night ly' abandoned
capture gone idem doctor
expect_rc 1
gone_why="its owner is gone"
[[ -z ${_pg_schema:-} ]] || gone_why="its lease ran out at "
grep -qF "warning: 'night ly' is still marked running, but $gone_why" "$T/gone.out" ||
  fail "owner gone: $(cat "$T/gone.out")"
file_has "$T/gone.out" "the next attempt finds it abandoned (exit 69): check whether its side effect happened, then idem rm 'night ly'" ||
  fail "owner gone fix: $(cat "$T/gone.out")"
capture refused idem run -k 'night ly' -- "${cmd[@]}"
expect_rc 69
capture ab idem doctor --json
expect_rc 1
assert_eq abandoned "$(json_checks ab)" "abandoned check"
assert_eq 1 "$(jsonq /store/abandoned <"$T/ab.out")" "abandoned count"
assert_eq false "$(jsonq /healthy <"$T/ab.out")" "healthy"

# Past twenty abandoned records the rest are counted in one line.
capture exp idem export --status abandoned
for i in $(seq 1 24); do sed "s/\"key\":\"night ly\"/\"key\":\"ab-$i\"/" "$T/exp.out"; done >"$T/many.jsonl"
capture imp idem import "$T/many.jsonl"
expect_rc 0
capture many idem doctor
expect_rc 1
assert_eq 20 "$(grep -c "^warning: '.*' is abandoned" "$T/many.out")" "abandoned lines shown"
file_has "$T/many.out" "warning: 5 more abandoned records; see them all with idem ls --status abandoned" ||
  fail "the rest: $(cat "$T/many.out")"
assert_eq 25 "$(idem doctor --json | jsonq /store/abandoned)" "abandoned counted"
idem rm 'night ly' >/dev/null
for i in $(seq 1 24); do idem rm "ab-$i" >/dev/null; done
capture clean idem doctor
expect_rc 0

# A daemon's config: unset secrets named, each once; loads with them set; a broken one refused.
cat >"$T/serve.json" <<'EOF'
{"hooks": [
  {"path": "/a", "command": ["true"], "signature": {"scheme": "github", "secret_env": "DOCTOR_A_SECRET"}},
  {"path": "/b", "command": ["true"], "signature": {"scheme": "standard-webhooks", "secret_env": "DOCTOR_B_SECRET"}},
  {"path": "/c", "command": ["true"], "signature": {"scheme": "github", "secret_env": "DOCTOR_A_SECRET"}}
]}
EOF
capture unset env -u DOCTOR_A_SECRET -u DOCTOR_B_SECRET "$IDEM_BIN" doctor --config "$T/serve.json"
expect_rc 1
assert_eq 2 "$(grep -c '^error: ' "$T/unset.out")" "one error per unset secret"
file_has "$T/unset.out" "error: $T/serve.json: secret variable DOCTOR_A_SECRET is not set (or empty): idem serve refuses to start without it; set it in the daemon's environment" ||
  fail "unset secret: $(cat "$T/unset.out")"
file_has "$T/unset.out" "secret variable DOCTOR_B_SECRET is not set" || fail "second secret: $(cat "$T/unset.out")"
capture set env DOCTOR_A_SECRET=s3cret DOCTOR_B_SECRET=whsec_c2VjcmV0 "$IDEM_BIN" doctor --config "$T/serve.json"
expect_rc 0
grep -q s3cret "$T/set.out" && fail "doctor printed a secret"
capture badsecret env DOCTOR_A_SECRET=s3cret DOCTOR_B_SECRET=not-whsec "$IDEM_BIN" doctor --config "$T/serve.json"
expect_rc 1
file_has "$T/badsecret.out" "a standard-webhooks secret is whsec_ followed by base64" ||
  fail "bad secret: $(cat "$T/badsecret.out")"
printf '{"hooks": [{"path": "/a", "command": ["true"], "ttl": "5x"}]}' >"$T/broken.json"
capture broken idem doctor --config "$T/broken.json"
expect_rc 1
grep -qE "^error: .*broken.json: hooks\[0\]\.ttl: .*; fix the file: idem serve refuses to start with it$" "$T/broken.out" ||
  fail "broken config: $(cat "$T/broken.out")"
capture missing idem doctor --config "$T/nowhere.json"
expect_rc 1
file_has "$T/missing.out" "nowhere.json: cannot read the config file" || fail "missing config: $(cat "$T/missing.out")"
# A hooks file expanded as a template: an unset variable is a warning, as serve logs it.
cat >"$T/hooks.json" <<'EOF'
[{"id": "deploy", "execute-command": "true", "response-message": "{{ getenv "DOCTOR_UNSET_VAR" }}"}]
EOF
capture tmpl env -u DOCTOR_UNSET_VAR "$IDEM_BIN" doctor --hooks "$T/hooks.json" --template
expect_rc 1
grep -q '^warning: .*DOCTOR_UNSET_VAR.*; idem serve starts, but check that this is meant$' "$T/tmpl.out" ||
  fail "template warning: $(cat "$T/tmpl.out")"
capture tmplset env DOCTOR_UNSET_VAR=x "$IDEM_BIN" doctor --hooks "$T/hooks.json" --template
expect_rc 0

# A store that cannot be opened, or is damaged: 74, the finding says so.
if on_sqlite; then
  printf 'not a database at all, not even close to one; %0500d' 0 >"$T/junk.db"
  chmod 600 "$T/junk.db"
  capture junk idem --db "$T/junk.db" doctor
  expect_rc 74
  grep -q "^error: .*junk.db.*: file is not a database; mend what it names" "$T/junk.out" ||
    fail "junk store: $(cat "$T/junk.out")"
  # Another program's file: refused as it is, and left so.
  sqlite3 "$T/theirs.db" 'CREATE TABLE t (x); INSERT INTO t VALUES (1)'
  chmod 600 "$T/theirs.db"
  cp "$T/theirs.db" "$T/theirs.copy"
  capture theirs idem --db "$T/theirs.db" doctor
  expect_rc 74
  file_has "$T/theirs.out" "error: store $T/theirs.db is not an idem store (it holds other tables: t): give idem a file of its own; mend what it names" ||
    fail "foreign file: $(cat "$T/theirs.out")"
  cmp -s "$T/theirs.db" "$T/theirs.copy" || fail "doctor changed another program's file"
  [[ ! -e $T/theirs.db-wal ]] || fail "doctor left a WAL beside another program's file"
  # Many records over many pages, checkpointed into the file; then pages in the middle smashed.
  for i in $(seq 1 150); do printf '{"id":"m-%s"}\n' "$i"; done |
    IDEM_DB="$T/big.db" "$IDEM_BIN" each --key-field /id -- sh -c 'head -c 6000 /dev/zero | tr "\0" x' >/dev/null
  IDEM_DB="$T/big.db" "$IDEM_BIN" gc >/dev/null
  pages=$(($(stat -c %s "$T/big.db") / 4096))
  ((pages > 100)) || fail "the store holds only $pages pages"
  dd if=/dev/urandom of="$T/big.db" bs=4096 seek=2 count=$((pages / 2)) conv=notrunc status=none
  capture damaged idem --db "$T/big.db" doctor --json
  expect_rc 74
  assert_eq false "$(jsonq /healthy <"$T/damaged.out")" "healthy"
  json_checks damaged | grep -qx 'integrity\|store-open' || fail "damage: $(cat "$T/damaged.out")"
fi

# Bad input.
capture flag idem doctor --bogus
expect_rc 64
assert_idem_error
capture tnh idem doctor --template
expect_rc 64
assert_idem_error
file_has "$T/tnh.err" "--template needs --hooks" || fail "template alone: $(cat "$T/tnh.err")"
capture url idem --store 'bogus://x' doctor
expect_rc 64
assert_idem_error
