#!/usr/bin/env bash
# export / import: every record with its output as JSON Lines, ls's filters, a round trip into
# a fresh store byte-exact (and SQLite -> PostgreSQL -> SQLite when a test cluster is up),
# conflicting keys refused unless --replace, bad lines and bad flags refused.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture a idem run -k k-a -- sh -c 'printf "out\0a\n"; printf "err-a" >&2; printf "tail"'
expect_rc 0
capture b idem run -k k-b -- sh -c 'echo out-b; exit 3'
expect_rc 3
capture c idem run -k other-c --ttl 1ms -- true
expect_rc 0

# Live records only by default (other-c has expired); --all adds it; ls's filters apply.
capture ex idem export
expect_rc 0
assert_lines 2 "$T/ex.out"
jsonq /key <"$T/ex.out" >"$T/ex.keys"
assert_bytes "$T/ex.keys" 'k-b\nk-a\n'
grep -q attempt_token "$T/ex.out" && fail "export shows the attempt token"
capture all idem export --all
assert_lines 3 "$T/all.out"
capture failed idem export --status failed
jsonq /key <"$T/failed.out" >"$T/failed.keys"
assert_bytes "$T/failed.keys" 'k-b\n'
capture pre idem export --all --prefix other-
assert_lines 1 "$T/pre.out"
capture one idem export --limit 1
assert_lines 1 "$T/one.out"

# Into a fresh store: the same lines out again, and the outputs replay byte-exact there.
fresh_store copy
capture imp env "$FRESH_STORE" "$IDEM_BIN" import "$T/all.out"
expect_rc 0
file_has "$T/imp.err" "3 imported, 0 already there, 0 refused" || fail "import summary: $(cat "$T/imp.err")"
capture again env "$FRESH_STORE" "$IDEM_BIN" export --all
assert_same "$T/all.out" "$T/again.out"
capture replay env "$FRESH_STORE" "$IDEM_BIN" run -k k-a -- sh -c 'printf "out\0a\n"; printf "err-a" >&2; printf "tail"'
expect_rc 0
assert_same "$T/a.out" "$T/replay.out"
assert_same "$T/a.err" "$T/replay.err"

# The same records again: nothing to do. Another record under a key: refused (65), kept, the
# other lines imported; --replace overwrites it.
capture same env "$FRESH_STORE" "$IDEM_BIN" import <"$T/all.out"
expect_rc 0
file_has "$T/same.err" "0 imported, 3 already there, 0 refused" || fail "re-import: $(cat "$T/same.err")"
jq -c 'select(.key == "k-b") | .note = "changed"' "$T/all.out" >"$T/changed.jsonl"
capture conflict env "$FRESH_STORE" "$IDEM_BIN" import "$T/changed.jsonl"
expect_rc 65
file_has "$T/conflict.err" "key 'k-b' holds another record here (--replace overwrites it)" ||
  fail "conflict message: $(cat "$T/conflict.err")"
capture replace env "$FRESH_STORE" "$IDEM_BIN" import --replace "$T/changed.jsonl"
expect_rc 0
env "$FRESH_STORE" "$IDEM_BIN" show --json k-b | jsonq /note >"$T/note"
assert_bytes "$T/note" 'changed\n'

# Bad input: a line that is not a record names its line and member (65); bad flags (64).
printf '%s\n' "$(head -1 "$T/all.out")" '{"format":1}' >"$T/bad.jsonl"
capture bad idem import "$T/bad.jsonl"
expect_rc 65
assert_idem_error bad
file_has "$T/bad.err" 'import: line 2: member "key" is missing' || fail "bad line: $(cat "$T/bad.err")"
printf 'not json\n' >"$T/nojson.jsonl"
capture nojson idem import "$T/nojson.jsonl"
expect_rc 65
file_has "$T/nojson.err" "import: line 1:" || fail "not JSON: $(cat "$T/nojson.err")"
capture nofile idem import "$T/missing.jsonl"
expect_rc 64
capture badlimit idem export --limit -1
expect_rc 64
capture badstatus idem export --status done
expect_rc 64

# Replays and the history travel with the record: a failure, its success, two replays.
fresh_store hist
hist=(env "$FRESH_STORE" "$IDEM_BIN")
flaky=(run -k flaky -- sh -c 'test -e "$0"' "$T/ok")
"${hist[@]}" "${flaky[@]}" >/dev/null 2>&1 || true
touch "$T/ok"
for _ in 1 2 3; do "${hist[@]}" "${flaky[@]}" >/dev/null; done
"${hist[@]}" export >"$T/hist.jsonl"
"${hist[@]}" log flaky --json >"$T/hist.log"
assert_eq 2 "$(jsonq /replays <"$T/hist.log")" "replays before the export"
fresh_store hist2
env "$FRESH_STORE" "$IDEM_BIN" import "$T/hist.jsonl" 2>/dev/null
env "$FRESH_STORE" "$IDEM_BIN" log flaky --json >"$T/hist2.log"
assert_same "$T/hist.log" "$T/hist2.log"
env "$FRESH_STORE" "$IDEM_BIN" export >"$T/hist2.jsonl"
assert_same "$T/hist.jsonl" "$T/hist2.jsonl"
# An export from before them (no replays, no attempts) still imports: the record's current attempt
# is then its history, its replays none.
jq -c 'del(.replays, .last_replay_ms, .attempts)' "$T/hist.jsonl" >"$T/old.jsonl"
fresh_store hist3
env "$FRESH_STORE" "$IDEM_BIN" import "$T/old.jsonl" 2>/dev/null
env "$FRESH_STORE" "$IDEM_BIN" log flaky --json >"$T/hist3.log"
assert_eq 0 "$(jsonq /replays <"$T/hist3.log")" "replays of an old export"
assert_eq 2 "$(jsonq /attempts/0/number <"$T/hist3.log")" "the history of an old export"
assert_eq succeeded "$(jsonq /attempts/0/outcome <"$T/hist3.log")" "the history of an old export"

# SQLite -> PostgreSQL -> SQLite, byte-exact (the plain run, with a test cluster up).
if [[ -z ${_pg_schema:-} && -n ${IDEM_TEST_PG_URL:-} ]]; then
  schema=idem_test_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
  psql -qX "$IDEM_TEST_PG_URL" -c "CREATE SCHEMA $schema"
  _pg_schema=$schema  # dropped by the cleanup
  pg="$IDEM_TEST_PG_URL?options=-csearch_path%3D$schema"
  idem export --all | IDEM_STORE=$pg "$IDEM_BIN" import
  IDEM_STORE=$pg "$IDEM_BIN" export --all >"$T/pg.out"
  assert_same "$T/all.out" "$T/pg.out"
  IDEM_STORE=$pg "$IDEM_BIN" export --all | IDEM_DB=$T/back.db "$IDEM_BIN" import
  IDEM_DB=$T/back.db "$IDEM_BIN" export --all >"$T/back.out"
  assert_same "$T/all.out" "$T/back.out"
fi
