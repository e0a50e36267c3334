#!/usr/bin/env bash
# Serial groups of `idem serve` (contract §9): deliveries of one group run one at a time, in the
# order they were accepted; one that must wait is stored as queued and answered 202 with its
# place; duplicates are not queued twice; `latest` keeps one pending; max_pending answers 503;
# the line survives kill -9 of the daemon (nothing lost, nothing run twice, never two at once);
# a hooks file's hook takes the same object. The handler proves it runs alone: it takes its
# group's lock without waiting (flock -n), else logs an overlap.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
# A killed daemon's attempts are judged by their lease on PostgreSQL.
export IDEM_LEASE=1s

# Bad configs: one line, exit 64.
bad_config() {  # bad_config NAME JSON WORD: the error names WORD
  printf '%s\n' "$2" >"$T/$1.json"
  capture "$1" idem serve --config "$T/$1.json" --listen 127.0.0.1:0
  expect_rc 64
  assert_idem_error
  grep -q -- "$3" "$T/$1.err" || fail "the error should name $3: $(cat "$T/$1.err")"
}
bad_config mode '{"hooks": [{"path": "/h", "command": ["true"], "serial": {"mode": "newest"}}]}' 'serial.mode'
bad_config nokey '{"hooks": [{"path": "/h", "command": ["true"], "no_key": "run", "serial": {}}]}' 'serial'
bad_config pending '{"hooks": [{"path": "/h", "command": ["true"], "serial": {"max_pending": 0}}]}' 'max_pending'
bad_config member '{"hooks": [{"path": "/h", "command": ["true"], "serial": {"groups": "x"}}]}' 'groups'

# The handler: logs its key in its group's order file under the group's lock (an overlap if it
# cannot take it at once); the key "hold-*" waits for the fifo of that name first.
cat >"$T/handler.sh" <<'EOF2'
#!/bin/sh
d=$IDEM_TEST_DIR
g=${IDEM_HEADER_X_REPO:-none}
exec flock -n "$d/lock-$g" sh -c '
  echo "$IDEM_KEY${WHO:+ $WHO}" >> "$1/order-$2"
  case $IDEM_KEY in
    hold-*) read x < "$1/$IDEM_KEY" ;;
    z*) sleep 0.1 ;;  # work that takes a while: the kills below land while it runs
  esac
  echo "ran $IDEM_KEY"' sh "$d" "$g" || echo "$IDEM_KEY" >> "$d/overlap"
EOF2
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF2
{"hooks": [
  {"path": "/deploy", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "serial": {"group": {"header": "X-Repo"}, "max_pending": 30}, "max_concurrency": 4},
  {"path": "/latest", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "serial": {"group": "one", "mode": "latest"}},
  {"path": "/drain", "command": ["$T/handler.sh"], "key": {"header": "X-Key"},
   "serial": {"group": {"header": "X-Repo"}}}
]}
EOF2
# hold G HOOK: a delivery of key hold-G in group G of HOOK that holds the group (its handler waits
# for the fifo hold-G), running once this returns; release G lets it end.
hold() {
  mkfifo "$T/hold-$1"
  RESP=held-$1 bg "held-$1" post "$2" x "X-Key: hold-$1" "X-Repo: $1"
  wait_until "hold-$1 runs" status_is "$2#hold-$1" running
}
release() {
  release_fifo "$T/hold-$1"
  bg_wait "held-$1"
}
start_daemon "$T/serve.json"

# --- fifo: a held run, 30 waiting in order, duplicates, other groups, the line's limit ---------
hold a /deploy
for ((i = 1; i <= 30; i++)); do
  post /deploy "body $i" "X-Key: k$i" 'X-Repo: a'
  expect_http 202
  assert_body '{"position":%d,"status":"queued"}\n' "$i"
done
# A duplicate is told its place again and is not queued twice.
post /deploy 'body 5' 'X-Key: k5' 'X-Repo: a'
expect_http 202
assert_body '{"position":5,"status":"queued"}\n'
# The same key with another body is still a conflict.
post /deploy 'other body' 'X-Key: k5' 'X-Repo: a'
expect_problem 422
# The line is full at max_pending: 503 with Retry-After, nothing stored.
post /deploy 'body 31' 'X-Key: k31' 'X-Repo: a'
expect_problem 503
has_header Retry-After || fail "503 without Retry-After"
[[ $(idem status '/deploy#k31' 2>&1) != queued ]] || fail "a refused delivery was queued"
# Another group runs beside the held one at once.
post /deploy 'b' 'X-Key: b1' 'X-Repo: b'
expect_http 200
assert_body 'ran b1\n'
# A delivery without its group: 400, nothing stored.
post /deploy 'none' 'X-Key: n1'
expect_problem 400
assert_eq no_group "$(tail -n 1 "$T/$DAEMON.err" | jsonq /outcome)" "the log's outcome"
capture queued idem ls --status queued
assert_lines 31 "$T/queued.out"  # the header and 30
assert_eq queued "$(idem status '/deploy#k7')" "status of a waiting delivery"
# /metrics tells the line, as of the daemon's last look (each second).
metrics_show_30() {
  RESP=metrics get /metrics
  grep -qx 'idem_queued{hook="/deploy"} 30' "$T/metrics.body"
}
wait_until "/metrics shows 30 queued" metrics_show_30
grep -q '^idem_queued_oldest_seconds{hook="/deploy"} [0-9.]*$' "$T/metrics.body" ||
  fail "no oldest age in /metrics: $(grep queued "$T/metrics.body")"

release a
all_done() { [[ $(idem ls --status queued --json | wc -l) == 0 ]] && ! idem ls --status running --json | grep -q .; }
wait_until "the line drains" all_done
want=$(echo hold-a; for ((i = 1; i <= 30; i++)); do echo "k$i"; done)
assert_eq "$want" "$(cat "$T/order-a")" "the order group a ran in"
[[ ! -e $T/overlap ]] || fail "runs overlapped: $(cat "$T/overlap")"
assert_status '/deploy#k30' succeeded
# A queued delivery's outcome is recorded as a delivery's: its duplicate replays it.
post /deploy 'body 12' 'X-Key: k12' 'X-Repo: a'
expect_http 200
assert_header Idempotent-Replayed true
assert_body 'ran k12\n'

# --- concurrency: 10 keys x 100 deliveries at once, in one group ---------------------------------
: >"$T/curl.cfg"
for ((r = 0; r < 100; r++)); do
  for ((k = 0; k < 10; k++)); do
    ((r == 0 && k == 0)) || echo next >>"$T/curl.cfg"
    printf 'url = "%s/deploy"\nheader = "X-Key: c%d"\nheader = "X-Repo: c"\nheader = "Content-Type:"\ndata = "body c%d"\nwrite-out = "%%{http_code}\\n"\noutput = /dev/null\n' \
      "$URL" "$k" "$k" >>"$T/curl.cfg"
  done
done
curl -sS --no-progress-meter -Z --parallel-max 50 --max-time 60 -K "$T/curl.cfg" >"$T/codes" 2>"$T/curl.err" ||
  fail "curl: $(head -c 500 "$T/curl.err")"
assert_lines 1000 "$T/codes"
# 200 ran or replayed, 202 queued, 409 while its key runs: nothing else.
bad=$(grep -cvxE '200|202|409' "$T/codes") || true
assert_eq 0 "$bad" "answers other than 200, 202 and 409: $(sort "$T/codes" | uniq -c)"
wait_until "group c drains" all_done
assert_eq 10 "$(sort -u "$T/order-c" | wc -l)" "keys of group c that ran"
assert_eq 10 "$(wc -l <"$T/order-c")" "runs of group c (each key once)"
[[ ! -e $T/overlap ]] || fail "runs overlapped: $(cat "$T/overlap")"
for ((k = 0; k < 10; k++)); do assert_status "/deploy#c$k" succeeded; done

# --- latest: 49 arrive while one runs: the last of them runs, 48 are superseded, each by the next -
hold l /latest
for ((i = 1; i <= 49; i++)); do
  post /latest "l $i" "X-Key: l$i" 'X-Repo: l'
  expect_http 202
  assert_body '{"position":1,"status":"queued"}\n'
done
release l
wait_until "the latest line drains" all_done
assert_eq "$(printf 'hold-l\nl49')" "$(cat "$T/order-l")" "what ran in the latest group"
assert_eq 48 "$(idem ls --status superseded --json | wc -l)" "superseded deliveries"
capture log idem log '/latest#l7'
grep -q "^superseded at .* by '/latest#l8' in serial group '/latest#one' before it ran$" "$T/log.out" ||
  fail "log should say l7 was superseded: $(cat "$T/log.out")"
post /latest 'l 7' 'X-Key: l7' 'X-Repo: l'
expect_http 200
assert_body '{"status":"superseded","superseded_by":"l8"}\n'
stop_daemon

# --- kill -9 during the drain, 20 rounds (8 on PostgreSQL): nothing lost or run twice, one at a time
start_daemon "$T/serve.json"
hold z /drain
n=45
for ((i = 1; i <= n; i++)); do
  post /drain "z $i" "X-Key: z$i" 'X-Repo: z'
  expect_http 202
done
release z
ran() { [[ -e $T/order-z ]] && wc -l <"$T/order-z" || echo 0; }
ran_at_least() { (($(ran) >= $1)); }
# On PostgreSQL a killed daemon's running attempt is judged abandoned only once its lease (1 s)
# has run out, so each round waits that long: 8 rounds there (each proving the same takeover at
# another point of the drain), 20 on SQLite (where the dead pid is seen at once).
rounds=20
[[ ${IDEM_TEST_BACKEND:-} != postgres ]] || rounds=8
for ((round = 1; round <= rounds; round++)); do
  # Killed after one or two more runs began: at a random point of the drain.
  target=$(($(ran) + 1 + RANDOM % 2))
  ((target <= n + 1)) || target=$((n + 1))
  wait_until "run $target of group z begins" ran_at_least "$target"
  kill_daemon
  start_daemon "$T/serve.json"
done
# The last start drains what is left; a run the kill cut off is abandoned, never run again.
settled() {
  local running
  running=$(idem ls --status running --json | wc -l)
  [[ $(idem ls --status queued --json | wc -l) == 0 && $running == 0 ]]
}
wait_until "group z settles" settled
[[ ! -e $T/overlap ]] || fail "runs overlapped: $(cat "$T/overlap")"
assert_eq "$(sort "$T/order-z")" "$(sort -u "$T/order-z")" "no key of group z ran twice"
# A kill abandons the group's one running attempt: most often while its handler sleeps (its line
# written), but on a slow machine the run may have ended and the next turn begun, its handler not
# yet at its first line. Either way at most one attempt a kill, and none of them runs again.
abandoned=0
for ((i = 1; i <= n; i++)); do
  s=$(idem status "/drain#z$i")
  case $s in
    succeeded) file_has "$T/order-z" "z$i" || fail "z$i succeeded without running" ;;
    abandoned)
      abandoned=$((abandoned + 1))
      # Not started: the turn right after one that did (each kill follows a new line).
      grep -qx "z$i" "$T/order-z" || { ((i > 1)) && grep -qx "z$((i - 1))" "$T/order-z"; } ||
        fail "z$i abandoned though the key before it never ran" ;;
    *) fail "z$i ended $s after the restarts" ;;
  esac
done
((abandoned <= rounds)) || fail "$abandoned attempts abandoned by $rounds kills"
# In order: what ran, ran in the order accepted.
assert_eq "$(sort -t z -k 2 -n "$T/order-z")" "$(cat "$T/order-z")" "the order group z ran in"
stop_daemon

# --- PostgreSQL: two daemons share the groups ------------------------------------------------------
if [[ ${IDEM_TEST_BACKEND:-} == postgres ]]; then
  DAEMON=one start_daemon "$T/serve.json"
  url_one=$URL
  DAEMON=two start_daemon "$T/serve.json"
  url_two=$URL
  URL=$url_one hold p /drain
  # Alternately to each daemon: one line, whoever accepted them.
  for ((i = 1; i <= 20; i++)); do
    if ((i % 2)); then URL=$url_two; else URL=$url_one; fi
    post /drain "p $i" "X-Key: p$i" 'X-Repo: p'
    expect_http 202
    assert_body '{"position":%d,"status":"queued"}\n' "$i"
  done
  release p
  wait_until "group p drains on two daemons" settled
  assert_eq "$(echo hold-p; for ((i = 1; i <= 20; i++)); do echo "p$i"; done)" "$(cat "$T/order-p")" \
    "the order group p ran in across two daemons"
  [[ ! -e $T/overlap ]] || fail "runs overlapped: $(cat "$T/overlap")"
  # Both daemons ran some of them: the log says which accepted and which started each.
  stop_daemon one
  stop_daemon two
fi

# --- a hooks file's hook: the same object in its idem object -------------------------------------
cat >"$T/hooks.json" <<EOF2
[{"id": "q", "execute-command": "$T/handler.sh", "include-command-output-in-response": true,
  "pass-environment-to-command": [{"source": "url", "name": "who", "envname": "WHO"},
    {"source": "header", "name": "X-Repo", "envname": "IDEM_HEADER_X_REPO"}],
  "idem": {"key": {"source": "header", "name": "X-Key"}, "serial": {"group": {"header": "X-Repo"}}}}]
EOF2
start_serve --hooks "$T/hooks.json"
hold w /hooks/q
post '/hooks/q?who=w1' 'w' 'X-Key: w1' 'X-Repo: w'
expect_http 202
assert_body '{"position":1,"status":"queued"}\n'
release w
wait_until "w1 runs in its turn" status_is '/hooks/q#w1' succeeded
assert_eq "$(printf 'hold-w\nw1 w1')" "$(cat "$T/order-w")" "the hooks file's group (w1 with its query)"
capture req idem show '/hooks/q#w1' --request
assert_eq 'who=w1' "$(jsonq /query <"$T/req.out")" "the stored query"
stop_daemon
integrity_ok
