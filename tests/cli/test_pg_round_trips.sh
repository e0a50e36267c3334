#!/usr/bin/env bash
# What one `idem run` costs the PostgreSQL server, counted in transactions (every statement outside
# BEGIN ... COMMIT is one, and the server's own at connection start is one more): a replay opens
# the store and reads the schema version in one statement, reads the record and counts the replay
# (1 + 3); a first run adds its claim, which records the command's process group too, and its
# outcome to the first two (1 + 4). Counted by the server in a database of the test's own (its pg_stat_database row), once
# idem's backend has ended and so reported its counts.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
[[ -n ${IDEM_TEST_PG_URL:-} ]] ||
  skip "IDEM_TEST_PG_URL is not set (scripts/test.sh starts a test cluster)"

db=idem_rt_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
admin() { psql -qXAt -v ON_ERROR_STOP=1 "$IDEM_TEST_PG_URL" -c "$1"; }
admin "CREATE DATABASE $db"
export IDEM_STORE=${IDEM_TEST_PG_URL%/*}/$db

# commits: the database's committed transactions so far, once no backend is connected to it (a
# backend reports its counts as it ends, before it leaves pg_stat_activity).
commits() {
  local i
  for ((i = 0; i < 500; i++)); do
    [[ $(admin "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db'") == 0 ]] && break
    sleep 0.01
  done
  admin "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'"
}

# cost KEY: the transactions one `idem run -k KEY -- true` adds, the fewest of three tries (an
# autovacuum worker visiting the database can only add to a count).
cost() {
  local best="" before after try
  for try in 1 2 3; do
    before=$(commits)
    idem run -q -k "$1$try" -- true
    after=$(commits)
    [[ -n $best ]] && ((best <= after - before)) || best=$((after - before))
  done
  echo "$best"
}

for try in 1 2 3; do idem run -q -k "done$try" -- true; done  # creates idem's tables, then keys
assert_eq 4 "$(cost done)" "transactions of a replay"
assert_eq 5 "$(cost fresh)" "transactions of a first run"
assert_status fresh1 succeeded

admin "DROP DATABASE $db WITH (FORCE)"
