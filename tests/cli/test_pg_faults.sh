#!/usr/bin/env bash
# Faults between idem and a real PostgreSQL server, each put at an exact point by
# tests/helpers/tcp_fault_proxy: a claim whose COMMIT answer is lost (the claim landed) or whose
# COMMIT never reached the server; the answer to the final write, to the process group's write (of
# `each`) or to a renewal lost after the write landed; every connection cut while the command of `run`, a handler
# of `each` or a hook's handler in `serve` runs. Then, on a cluster of the test's own
# (scripts/pg_cluster.sh): the server restarted while the command runs, and the server down while it
# runs or ends, back within the lease or after it. Each time the command runs exactly once; the
# outcome is recorded, or, when the lease ran out first, idem stops the command, records nothing and
# exits 74, and the key reads abandoned once the server is back. Commands wait on fifos and the test
# on the proxy's log lines: nothing is timed. An unreachable server at the start is
# tests/cli/test_postgres.sh's.
tests_dir=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}" && pwd)  # lib.sh changes directory
source "$tests_dir/cli/lib.sh"
source "$tests_dir/cli/serve_lib.sh"
[[ -n ${IDEM_TEST_PG_URL:-} ]] ||
  skip "IDEM_TEST_PG_URL is not set (scripts/test.sh starts a test cluster)"

_pg_schema=idem_test_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')  # dropped by lib.sh's cleanup
psql -qX "$IDEM_TEST_PG_URL" -c "CREATE SCHEMA $_pg_schema"
search_path="options=-csearch_path%3D$_pg_schema"
pg_port=${IDEM_TEST_PG_URL##*:}
pg_port=${pg_port%%/*}
# The proxies listen on ports of their own: the test cluster's password for any port.
sed 's/^\([^:]*\):[^:]*:/\1:*:/' "$PGPASSFILE" >"$T/pgpass"
cat "$PGPASSFILE" "$T/pgpass" >"$T/pgpass.new" && mv "$T/pgpass.new" "$T/pgpass"
chmod 0600 "$T/pgpass"
export PGPASSFILE=$T/pgpass
# The schema is made straight on the server: the first COMMIT through a proxy is a claim's.
IDEM_STORE="$IDEM_TEST_PG_URL?$search_path" idem ls >/dev/null

# start_proxy NAME [OPTION...]: a proxy to the test cluster; sets $via, a store URL through it.
start_proxy() {
  local name=$1
  shift
  bg "$name" "$(helper tcp_fault_proxy)" "$pg_port" "$@"
  wait_until "proxy '$name' listens" test -s "$T/$name.out"
  via="postgresql://idem@127.0.0.1:$(head -n 1 "$T/$name.out")/postgres?$search_path"
}
stop_proxy() {
  kill -TERM "$(bg_pid "$1")"
  bg_wait "$1"
  expect_rc 0
}
proxy_said() { file_has "$T/$1.err" "$2"; }  # proxy_said NAME TEXT
# cut_times N: proxy px-cut has cut open connections N times.
cut_times() { [[ $(grep -Ec '^tcp_fault_proxy: cut [1-9]' "$T/px-cut.err") == "$1" ]]; }
# connected_since NAME TEXT: the proxy accepted a connection after the last line holding TEXT.
connected_since() {
  awk -v text="$2" 'index($0, text) { since = 1; seen = 0; next }
    since && /^tcp_fault_proxy: connection [0-9]+$/ { seen = 1 }
    END { exit !seen }' "$T/$1.err"
}

# runner URL KEY [FIFO [LEASE]]: sets cmd to `idem run -k KEY` on the store URL of a command that
# counts its runs in $T/KEY.count, writes its pid to $T/KEY.count.pid, waits for a line from FIFO
# if given, and prints "done"; with a lease of LEASE.
runner() {
  cmd=(env IDEM_STORE="$1")
  [[ -z ${4:-} ]] || cmd+=(IDEM_LEASE="$4")
  cmd+=("$IDEM_BIN" run -k "$2" -- sh -c \
    'echo ran >> "$1"; echo "$$" > "$1.pid"; [ -z "$2" ] || read x < "$2"; echo done' \
    sh "$T/$2.count" "${3:-}")
  track_pid_file "$T/$2.count.pid"
}
runs() { [[ -e $T/$1.count ]] && wc -l <"$T/$1.count" || echo 0; }
assert_ran_once() {
  assert_eq 1 "$(runs "$1")" "executions of '$1'"
  local url=${2:-$IDEM_TEST_PG_URL?$search_path}
  assert_eq 1 "$(IDEM_STORE=$url idem show "$1" --json | jsonq /attempt)" "attempt of '$1'"
}

# a. The claim's COMMIT reached the server, its answer did not: idem reads the key back by its
# attempt token, finds the claim its own, and runs the command once.
start_proxy px-claim --drop-answer-after COMMIT --times 1
runner "$via" lost-commit
capture lost-commit "${cmd[@]}"
expect_rc 0
assert_bytes "$T/lost-commit.out" 'done\n'
proxy_said px-claim "its answer is lost" || fail "the proxy never dropped a COMMIT answer"
assert_ran_once lost-commit
IDEM_STORE="$via" assert_status lost-commit succeeded
stop_proxy px-claim

# ... the COMMIT never reached the server (the transaction rolled back): idem claims again.
start_proxy px-unsent --drop-message COMMIT --times 1
runner "$via" unsent-commit
capture unsent-commit "${cmd[@]}"
expect_rc 0
assert_bytes "$T/unsent-commit.out" 'done\n'
proxy_said px-unsent "dropped a message holding 'COMMIT'" || fail "the proxy never dropped a COMMIT"
assert_ran_once unsent-commit
stop_proxy px-unsent

# ... the final write landed, its answer did not: the retry finds the outcome already recorded.
start_proxy px-finish --drop-answer-after "finished_at = \$4" --times 1
runner "$via" lost-finish
capture lost-finish "${cmd[@]}"
expect_rc 0
assert_bytes "$T/lost-finish.out" 'done\n'
proxy_said px-finish "its answer is lost" || fail "the proxy never dropped the final write's answer"
assert_ran_once lost-finish
IDEM_STORE="$via" assert_status lost-finish succeeded
stop_proxy px-finish

# ... so for the process group's, written before the command starts where the claim did not write
# it (`each`: a first run's claim writes it itself): it starts, once.
start_proxy px-group --drop-answer-after "SET pgid" --times 1
printf '{"id": "lost-group"}\n' >"$T/lost-group.jsonl"
capture lost-group env IDEM_STORE="$via" "$IDEM_BIN" each --key-field /id -- sh -c \
  'echo ran >> "$1"; echo "$$" > "$1.pid"' sh "$T/lost-group.count" <"$T/lost-group.jsonl"
expect_rc 0
proxy_said px-group "its answer is lost" || fail "the proxy never dropped the process group's answer"
assert_ran_once lost-group
stop_proxy px-group

# ... a renewal landed, its answer did not: the next renewal, on a new connection, goes on.
mkfifo "$T/renew.fifo"
start_proxy px-renew --drop-answer-after "SET lease_expires" --times 1
runner "$via" renew "$T/renew.fifo" 3s
bg renew "${cmd[@]}"
wait_until "idem connects again after a renewal's answer is lost" \
  connected_since px-renew "the answer is dropped"
release_fifo "$T/renew.fifo"
bg_wait renew
expect_rc 0
assert_ran_once renew
IDEM_STORE="$via" assert_status renew succeeded
stop_proxy px-renew

# b. The connection cut while the command runs. The final write reconnects ...
start_proxy px-cut
mkfifo "$T/cut.fifo"
runner "$via" cut "$T/cut.fifo" 3s
bg cut "${cmd[@]}"
wait_until "the command runs" test -s "$T/cut.count.pid"
kill -USR1 "$(bg_pid px-cut)"
wait_until "the proxy cut the connection" cut_times 1
release_fifo "$T/cut.fifo"
bg_wait cut
expect_rc 0
assert_bytes "$T/cut.out" 'done\n'
assert_ran_once cut
IDEM_STORE="$via" assert_status cut succeeded

# ... and so do the renewals while the command goes on running.
mkfifo "$T/cut2.fifo"
runner "$via" cut2 "$T/cut2.fifo" 3s
bg cut2 "${cmd[@]}"
wait_until "the command runs" test -s "$T/cut2.count.pid"
kill -USR1 "$(bg_pid px-cut)"
wait_until "the proxy cut the connection again" cut_times 2
wait_until "a renewal connects again" connected_since px-cut "tcp_fault_proxy: cut "
release_fifo "$T/cut2.fifo"
bg_wait cut2
expect_rc 0
assert_ran_once cut2
IDEM_STORE="$via" assert_status cut2 succeeded

# ... and the same for a message of `each`.
mkfifo "$T/each.fifo"
printf '{"id":"msg-1"}\n' >"$T/messages"
track_pid_file "$T/msg-1.count.pid"
bg each sh -c 'exec "$@" <"$0"' "$T/messages" env IDEM_STORE="$via" IDEM_LEASE=3s \
  "$IDEM_BIN" each --key-field /id -- sh -c \
  'echo ran >> "$1"; echo "$$" > "$1.pid"; read x < "$2"; cat' sh "$T/msg-1.count" "$T/each.fifo"
wait_until "the handler runs" test -s "$T/msg-1.count.pid"
kill -USR1 "$(bg_pid px-cut)"
wait_until "the proxy cut the connections a third time" cut_times 3
wait_until "each's renewal connects again" connected_since px-cut "tcp_fault_proxy: cut "
release_fifo "$T/each.fifo"
bg_wait each
expect_rc 0
assert_bytes "$T/each.out" '{"id":"msg-1"}\n'
assert_ran_once msg-1
IDEM_STORE="$via" assert_status msg-1 succeeded

# ... and for a delivery's handler in `idem serve`: answered 200, recorded.
mkfifo "$T/serve.fifo"
printf '#!/bin/sh\necho ran >> "%s"; echo "$$" > "%s"; read x < "%s"; echo handled\n' \
  "$T/hook.count" "$T/hook.count.pid" "$T/serve.fifo" >"$T/handler"
chmod +x "$T/handler"
track_pid_file "$T/hook.count.pid"
printf '{"hooks": [{"path": "/hooks/slow", "command": ["%s"], "key": {"header": "X-Key"}}]}\n' \
  "$T/handler" >"$T/serve.json"
IDEM_STORE="$via" start_daemon "$T/serve.json" --lease 3s
RESP=slow bg delivery post /hooks/slow 'body' 'X-Key: d1'
wait_until "the hook's handler runs" test -s "$T/hook.count.pid"
kill -USR1 "$(bg_pid px-cut)"
wait_until "the proxy cut the connections a fourth time" cut_times 4
wait_until "the daemon connects again" connected_since px-cut "tcp_fault_proxy: cut "
release_fifo "$T/serve.fifo"
bg_wait delivery
expect_rc 0
RESP=slow expect_http 200
assert_eq 1 "$(runs hook)" "executions of the hook's handler"
IDEM_STORE="$via" assert_status '/hooks/slow#d1' succeeded
stop_daemon
stop_proxy px-cut

# c. and d. on a cluster of the test's own, restarted and stopped under idem.
own_pg_cluster  # stopped by lib.sh's cleanup, which also kills the proxies by their pids
bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
# pg_ctl as the cluster's owner, as scripts/pg_cluster.sh runs it; `restart` of a stopped server
# starts it with the options it last ran with (postmaster.opts: its port, its socket dir).
own_pg_ctl() {
  local run=()
  [[ $(id -u) -ne 0 ]] || run=(runuser -u postgres --)
  "${run[@]}" "$bindir/pg_ctl" -D "$own_dir/data" -l "$own_dir/server.log" -w -t 60 "$@" \
    >/dev/null 2>&1 || fail "pg_ctl $*: $(tail -n 5 "$own_dir/server.log")"
}

# c. The server restarted while the command runs: the outcome is recorded after the restart.
mkfifo "$T/restart.fifo"
runner "$own_url" restart "$T/restart.fifo" 5s
bg restart "${cmd[@]}"
wait_until "the command runs" test -s "$T/restart.count.pid"
own_pg_ctl -m fast restart
release_fifo "$T/restart.fifo"
bg_wait restart
expect_rc 0
assert_bytes "$T/restart.out" 'done\n'
assert_ran_once restart "$own_url"
IDEM_STORE="$own_url" assert_status restart succeeded

# ... and down while the command ends, back within the lease: the outcome's write, tried again
# meanwhile, gets through.
mkfifo "$T/back.fifo"
runner "$own_url" back "$T/back.fifo" 20s
bg back "${cmd[@]}"
wait_until "the command runs" test -s "$T/back.count.pid"
own_pg_ctl -m fast stop
release_fifo "$T/back.fifo"
wait_until "the command has ended" pid_gone "$(cat "$T/back.count.pid")"
bg_running back || fail "idem ended while the server was down: $(cat "$T/back.err")"
own_pg_ctl restart
bg_wait back
expect_rc 0
assert_bytes "$T/back.out" 'done\n'
assert_ran_once back "$own_url"
IDEM_STORE="$own_url" assert_status back succeeded

# d. The server down for longer than the lease: idem stops the command, records nothing and
# exits 74 saying so; once the server is back the key reads abandoned, and a plain run is
# refused (69) rather than running the command a second time.
mkfifo "$T/down.fifo"
runner "$own_url" down "$T/down.fifo" 2s
bg down "${cmd[@]}"
wait_until "the command runs" test -s "$T/down.count.pid"
own_pg_ctl -m fast stop
bg_wait down
expect_rc 74
assert_idem_error
file_has "$T/down.err" "lease" || fail "the error does not name the lease: $(cat "$T/down.err")"
wait_until "the command is stopped" pid_gone "$(cat "$T/down.count.pid")"
own_pg_ctl restart
IDEM_STORE="$own_url" assert_status down abandoned
IDEM_STORE="$own_url" idem ls | grep -q '^down  *abandoned ' || fail "ls does not show 'down' abandoned"
runner "$own_url" down "$T/down.fifo"  # the same command: if it ran again, the timeout ends it
capture down-again timeout 20 "${cmd[@]}"
expect_rc 69
assert_eq 1 "$(runs down)" "executions of 'down'"

# ... the same when the command ends while the server is away: its outcome's write is tried
# until the lease runs out, then idem exits 74 with the outcome unrecorded.
mkfifo "$T/gone.fifo"
runner "$own_url" gone "$T/gone.fifo" 2s
bg gone "${cmd[@]}"
wait_until "the command runs" test -s "$T/gone.count.pid"
own_pg_ctl -m fast stop
release_fifo "$T/gone.fifo"
bg_wait gone
expect_rc 74
assert_lines 1 "$T/gone.err"  # (its stdout is the command's, passed on as it ran)
file_has "$T/gone.err" "recorded" || fail "unclear error: $(cat "$T/gone.err")"
own_pg_ctl restart
IDEM_STORE="$own_url" assert_status gone abandoned
runner "$own_url" gone "$T/gone.fifo"
capture gone-again timeout 20 "${cmd[@]}"
expect_rc 69
assert_eq 1 "$(runs gone)" "executions of 'gone'"
