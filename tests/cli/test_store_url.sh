#!/usr/bin/env bash
# The store chosen by URL (contract §2): --store (before or after the subcommand), then IDEM_STORE,
# then --db, then IDEM_DB; sqlite:PATH or a bare path; a bad URL is a usage error naming it; a
# PostgreSQL URL is refused (exit 74) by this build. The daemon reuses its store connections:
# 200 deliveries open a bounded number of them, and it holds a bounded number of db files open.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

capture first idem --store "sqlite:$T/a.db" run -k k -- echo ran
expect_rc 0
[[ -f $T/a.db && ! -e $IDEM_DB ]] || fail "--store did not pick $T/a.db"
assert_eq succeeded "$(idem status --store "sqlite:$T/a.db" k)" "--store after the subcommand"
assert_eq succeeded "$(idem --store "$T/a.db" status k)" "a bare path"
assert_eq succeeded "$(idem --store "sqlite:///${T#/}/a.db" status k)" "sqlite:///ABSOLUTE"
(cd "$T" && "$IDEM_BIN" --store sqlite:a.db status k >/dev/null) || fail "a relative sqlite:PATH"

# Precedence: --store > IDEM_STORE > --db > IDEM_DB.
idem --db "$T/b.db" run -k only-b -- true
capture env-over-db env IDEM_STORE="sqlite:$T/a.db" "$IDEM_BIN" --db "$T/b.db" status k
expect_rc 0
assert_bytes "$T/env-over-db.out" 'succeeded\n'
capture flag-over-env env IDEM_STORE="sqlite:$T/a.db" "$IDEM_BIN" --store "$T/b.db" status only-b
expect_rc 0
capture db-over-env-db idem --db "$T/b.db" status only-b
expect_rc 0
capture empty-env env IDEM_STORE= "$IDEM_BIN" --db "$T/b.db" status only-b
expect_rc 0

# Bad URLs: usage errors that name the URL, nothing run or created.
for url in 'mysql://db/x' 'sqlite:' 'sqlite://host/x.db' ''; do
  capture bad idem --store "$url" run -k bad -- touch "$T/ran"
  expect_rc 64
  assert_idem_error
  [[ -z $url ]] || grep -qF -- "'$url'" "$T/bad.err" || fail "the error does not name '$url': $(cat "$T/bad.err")"
done
capture bad-env env IDEM_STORE=nope:x "$IDEM_BIN" ls
expect_rc 64
grep -qF "IDEM_STORE 'nope:x'" "$T/bad-env.err" || fail "the error does not name IDEM_STORE: $(cat "$T/bad-env.err")"
[[ ! -e $T/ran ]] || fail "a command ran under a bad store URL"

# PostgreSQL: recognised; an unreachable server (port 1 on loopback) is 74, nothing runs, the
# password never shown.
capture pg idem --store 'postgres://idem:s3cret@127.0.0.1:1/idem' run -k pg -- touch "$T/ran"
expect_rc 74
assert_idem_error
! grep -q s3cret "$T/pg.err" || fail "the password is shown: $(cat "$T/pg.err")"
[[ ! -e $T/ran ]] || fail "a command ran under an unreachable PostgreSQL store"
capture pg-serve idem serve --store postgresql://127.0.0.1:1/idem --config /dev/null
expect_rc 64  # the config is checked first
printf '{"hooks": [{"path": "/h", "command": ["true"], "key": {"header": "X-Key"}}]}\n' >"$T/serve.json"
capture pg-serve idem serve --store postgresql://127.0.0.1:1/idem --config "$T/serve.json" --listen 127.0.0.1:0
expect_rc 74

# The daemon: 200 deliveries (new keys and replays) reuse its connections.
start_daemon "$T/serve.json" --store "sqlite:$T/d.db"
file_has "$T/daemon.err" "\"store\":\"$T/d.db\"" || fail "the listening event does not name the store"
for i in $(seq 1 100); do
  post /h "body" "X-Key: k$i"
  expect_http 200
  post /h "body" "X-Key: k$i"
  expect_http 200
done
get /metrics
opened=$(sed -n 's/^idem_store_connections_opened_total //p' "$T/resp.body")
[[ -n $opened ]] || fail "no idem_store_connections_opened_total in /metrics"
((opened >= 1 && opened <= 4)) || fail "200 sequential deliveries opened $opened store connections"
pid=$(bg_pid daemon)
db_fds=0
for fd in /proc/"$pid"/fd/*; do
  [[ $(readlink "$fd" 2>/dev/null) == "$T/d.db" ]] && db_fds=$((db_fds + 1))
done
# Each pooled connection, plus the one writer that commits every batch.
((db_fds >= 2 && db_fds <= opened + 1)) ||
  fail "the daemon holds $db_fds descriptors of its store open ($opened pooled connections and a writer)"
assert_eq 100 "$(idem --store "$T/d.db" ls --keys | wc -l)" "records in the daemon's store"
stop_daemon
