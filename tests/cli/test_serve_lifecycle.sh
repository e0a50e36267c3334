#!/usr/bin/env bash
# contract §6 and §8 for the daemon's life: concurrent duplicates run once (§8.1), records survive a
# restart, kill -9 mid-handler never leads to a second run without retry_abandoned (§8.3), SIGHUP
# reloads (a broken file keeps the old config), SIGTERM drains, slow clients are cut off, a bad
# config or a remote --listen is refused at start with 64 (§8.4).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
# A killed owner is abandoned once its lease runs out on PostgreSQL (await_abandoned); SQLite
# takes no lease.
export IDEM_LEASE=2s

mkfifo "$T/gate" "$T/gate2"
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
d=$IDEM_TEST_DIR
body=$(cat)
echo "$IDEM_HOOK $IDEM_KEY $IDEM_ATTEMPT" >> "$d/handler.log"
case $IDEM_HEADER_X_MODE in
  block) echo $$ > "$d/block.$IDEM_KEY.pid"; read x < "$d/${IDEM_HEADER_X_GATE:-gate}" ;;
esac
printf '{"key":"%s","attempt":%s,"body":"%s"}\n' "$IDEM_KEY" "$IDEM_ATTEMPT" "$body"
EOF
chmod +x "$T/handler.sh"
hook() {  # hook PATH [EXTRA_JSON_MEMBERS]: one hook object of the config
  printf '{"path": "%s", "command": ["%s"], "key": {"header": "X-Key"}%s}' "$1" "$T/handler.sh" "${2:+, $2}"
}
write_config() {  # write_config FILE HOOK_JSON...: a config with these hooks, replaced atomically
  local file=$1
  shift
  { printf '{"hooks": [\n'; (IFS=,; printf '%s\n' "$*"); printf ']}\n'; } >"$file.tmp"
  mv -f -- "$file.tmp" "$file"
}
runs() { log_count "$T/handler.log" "$1 $2 "; }  # runs HOOK KEY
base_hooks=("$(hook /hooks/x)" "$(hook /hooks/retry '"retry_abandoned": true')"
  "$(hook /hooks/async '"async": true')")
write_config "$T/serve.json" "${base_hooks[@]}"
start_daemon "$T/serve.json" --grace 20s

# --- 20 concurrent duplicates: the handler runs once -----------------------------------------------
N=20
exited_count() {  # exited_count PREFIX WANT
  local i n=0
  for ((i = 0; i < N; i++)); do
    if bg_exited "$1$i"; then n=$((n + 1)); fi
  done
  ((n >= $2))
}
# Round 1: the winner blocks until every other delivery has been answered: exactly one 200.
for ((i = 0; i < N; i++)); do
  RESP=a$i bg "a$i" post /hooks/x 'same delivery' 'X-Key: dup-1' 'X-Mode: block'
done
track_pid_file "$T/block.dup-1.pid"
wait_until "the handler of dup-1 starts" test -s "$T/block.dup-1.pid"
wait_until "$((N - 1)) duplicates are answered" exited_count a $((N - 1))
release_fifo "$T/gate"
ok=0 busy=0
for ((i = 0; i < N; i++)); do
  bg_wait "a$i"
  expect_rc 0
  case $(RESP=a$i http_status) in
    200) ok=$((ok + 1)) winner=$i ;;
    409) busy=$((busy + 1))
         RESP=a$i expect_problem 409 ;;
    *) fail "duplicate $i of dup-1 got $(RESP=a$i http_status): $(cat "$T/a$i.body")" ;;
  esac
done
assert_eq "1 $((N - 1))" "$ok $busy" "answers 200 / 409 to $N concurrent duplicates"
assert_bytes "$T/a$winner.body" '{"key":"dup-1","attempt":1,"body":"same delivery"}\n'
assert_eq 1 "$(runs /hooks/x dup-1)" "runs of dup-1"
# Round 2: a fast handler, duplicates in a burst: 200 (run or replay) or 409, one run.
for ((i = 0; i < N; i++)); do
  RESP=b$i bg "b$i" post /hooks/x 'burst' 'X-Key: dup-2'
done
for ((i = 0; i < N; i++)); do
  bg_wait "b$i"
  expect_rc 0
  case $(RESP=b$i http_status) in
    200) assert_bytes "$T/b$i.body" '{"key":"dup-2","attempt":1,"body":"burst"}\n' ;;
    409) RESP=b$i expect_problem 409 ;;
    *) fail "duplicate $i of dup-2 got $(RESP=b$i http_status): $(cat "$T/b$i.body")" ;;
  esac
done
assert_eq 1 "$(runs /hooks/x dup-2)" "runs of dup-2"

# --- a restart keeps the records -------------------------------------------------------------------
post /hooks/x 'kept' 'X-Key: kept'
expect_http 200
stop_daemon
DAEMON=daemon2
start_daemon "$T/serve.json" --grace 20s
post /hooks/x 'kept' 'X-Key: kept'
expect_http 200
assert_header Idempotent-Replayed true
assert_body '{"key":"kept","attempt":1,"body":"kept"}\n'
post /hooks/x 'same delivery' 'X-Key: dup-1'
assert_header Idempotent-Replayed true
assert_eq 1 "$(runs /hooks/x kept)" "runs of 'kept' across the restart"

# --- kill -9 of the daemon mid-handler: abandoned, 409 after a restart unless retry_abandoned -------
for path in /hooks/x /hooks/retry; do
  k=killed${path##*/}
  RESP=victim bg victim post "$path" 'cut off' "X-Key: $k" 'X-Mode: block'
  track_pid_file "$T/block.$k.pid"
  wait_until "the handler of $k starts" test -s "$T/block.$k.pid"
  kill_daemon daemon2
  bg_wait victim  # its connection is gone: no answer at all
  expect_rc 1
  RESP=victim expect_http 000
  # The handler dies with the daemon: no side effect goes on unrecorded.
  wait_until "the handler of $k is gone" pid_gone "$(cat "$T/block.$k.pid")"
  rm -f "$T/block.$k.pid"
  await_abandoned "$path#$k"
  integrity_ok
  start_daemon "$T/serve.json" --grace 20s
done
post /hooks/x 'cut off' 'X-Key: killedx'
expect_problem 409
await_abandoned '/hooks/x#killedx'
post /hooks/x 'cut off' 'X-Key: killedx'
expect_problem 409
assert_eq 1 "$(runs /hooks/x killedx)" "runs of the abandoned key without retry_abandoned"
# retry_abandoned: the next delivery runs it again, as attempt 2.
post /hooks/retry 'cut off' 'X-Key: killedretry'
expect_http 200
assert_no_header Idempotent-Replayed
assert_body '{"key":"killedretry","attempt":2,"body":"cut off"}\n'
assert_status '/hooks/retry#killedretry' succeeded
post /hooks/retry 'cut off' 'X-Key: killedretry'
assert_header Idempotent-Replayed true
assert_eq 2 "$(runs /hooks/retry killedretry)" "runs of the abandoned key with retry_abandoned"
# `idem rm` is the way out for the other hook.
idem rm '/hooks/x#killedx'
post /hooks/x 'cut off' 'X-Key: killedx'
expect_http 200
assert_body '{"key":"killedx","attempt":1,"body":"cut off"}\n'

# --- SIGHUP reloads the config; a broken file keeps the old one ------------------------------------
events() { log_count "$T/daemon2.err" "\"event\":\"$1\""; }
events_at_least() { (($(events "$1") >= $2)); }  # events_at_least EVENT N
post /hooks/new 'n' 'X-Key: n1'
expect_problem 404
write_config "$T/serve.json" "${base_hooks[@]}" \
  "$(hook /hooks/new)"
kill -HUP "$(bg_pid daemon2)"
wait_until "the daemon reloads" events_at_least reloaded 1
post /hooks/new 'n' 'X-Key: n1'
expect_http 200
assert_body '{"key":"n1","attempt":1,"body":"n"}\n'
# A typo in the file: refused, logged with the field, the old config stays.
printf '{"hooks": [{"path": "/hooks/x", "comand": ["true"]}]}\n' >"$T/serve.json.tmp"
mv -f "$T/serve.json.tmp" "$T/serve.json"
kill -HUP "$(bg_pid daemon2)"
wait_until "the reload fails" events_at_least reload_failed 1
grep '"event":"reload_failed"' "$T/daemon2.err" | grep -qF 'comand' ||
  fail "reload_failed does not name the bad field: $(grep reload_failed "$T/daemon2.err")"
assert_eq 1 "$(events reloaded)" "reloaded events"
post /hooks/new 'n2' 'X-Key: n2'
expect_http 200
post /hooks/x 'x after a failed reload' 'X-Key: x-reload'
expect_http 200
assert_body '{"key":"x-reload","attempt":1,"body":"x after a failed reload"}\n'
# Not JSON at all: the same.
printf '{"hooks": [' >"$T/serve.json"
kill -HUP "$(bg_pid daemon2)"
wait_until "the second reload fails" events_at_least reload_failed 2
post /hooks/new 'n3' 'X-Key: n3'
expect_http 200
bg_running daemon2 || fail "the daemon exited after a broken reload"
# A reload that removes a hook: it answers 404 from then on; a delivery in flight still finishes.
RESP=inflight bg inflight post /hooks/new 'in flight' 'X-Key: n-inflight' 'X-Mode: block'
track_pid_file "$T/block.n-inflight.pid"
wait_until "the in-flight handler starts" test -s "$T/block.n-inflight.pid"
write_config "$T/serve.json" "${base_hooks[@]}"
kill -HUP "$(bg_pid daemon2)"
wait_until "the daemon reloads again" events_at_least reloaded 2
post /hooks/new 'n4' 'X-Key: n4'
expect_problem 404
release_fifo "$T/gate"
bg_wait inflight
expect_rc 0
RESP=inflight expect_http 200
RESP=inflight assert_body '{"key":"n-inflight","attempt":1,"body":"in flight"}\n'
assert_status '/hooks/new#n-inflight' succeeded

# --- SIGTERM drains: handlers in flight finish, their clients get 200; exit 0 ----------------------
RESP=drain bg drain post /hooks/x 'drain me' 'X-Key: drain' 'X-Mode: block'
track_pid_file "$T/block.drain.pid"
post /hooks/async 'async drain' 'X-Key: adrain' 'X-Mode: block' 'X-Gate: gate2'
expect_http 202
track_pid_file "$T/block.adrain.pid"
wait_until "the handler to drain starts" test -s "$T/block.drain.pid"
wait_until "the async handler to drain starts" test -s "$T/block.adrain.pid"
kill -TERM "$(bg_pid daemon2)"
wait_until "the daemon says it drains" events_at_least draining 1
bg_running daemon2 || fail "the daemon exited with a handler in flight"
# A new delivery meanwhile is not run: its connection is refused, or it is answered 503.
curl_rc=0
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -H 'X-Key: during-drain' \
  --data-binary 'new' "$URL/hooks/x" 2>/dev/null) || curl_rc=$?
((curl_rc != 0)) || [[ $code == 503 ]] || fail "a new delivery while draining was answered $code"
release_fifo "$T/gate"
bg_wait drain
expect_rc 0
RESP=drain expect_http 200
RESP=drain assert_body '{"key":"drain","attempt":1,"body":"drain me"}\n'
# The async handler is still running: the daemon waits for it too.
assert_status '/hooks/async#adrain' running
bg_running daemon2 || fail "the daemon exited with an async handler in flight"
release_fifo "$T/gate2"
bg_wait daemon2
expect_rc 0
file_has "$T/daemon2.err" '"event":"stopped"' || fail "no stopped event"
assert_status '/hooks/x#drain' succeeded
assert_status '/hooks/x#during-drain' none
assert_status '/hooks/async#adrain' succeeded
assert_eq '{"key":"adrain","attempt":1,"body":"async drain"}' "$(idem show '/hooks/async#adrain' --stdout)" \
  "stored answer of the drained async handler"

# Past the grace period the daemon leaves; the unfinished handler is abandoned, not done.
DAEMON=daemon3
start_daemon "$T/serve.json" --grace 1s
RESP=late bg late post /hooks/x 'too slow' 'X-Key: late' 'X-Mode: block'
track_pid_file "$T/block.late.pid"
wait_until "the slow handler starts" test -s "$T/block.late.pid"
start=$(now_ms)
kill -TERM "$(bg_pid daemon3)"
bg_wait daemon3
elapsed=$(($(now_ms) - start))
[[ $rc != 0 ]] || fail "the daemon exited 0 although its grace period ran out with a handler in flight"
((elapsed >= 900 && elapsed < 10000)) || fail "the daemon left ${elapsed} ms after TERM with --grace 1s"
wait_until "the slow handler is gone" pid_gone "$(cat "$T/block.late.pid")"
bg_wait late
await_abandoned '/hooks/x#late'

# --- bad config at start: 64, one line naming the file and the field ------------------------------
refused_config() {  # refused_config NAME CONTENT WORD...: the error names the file and each WORD
  printf '%s' "$2" >"$T/$1.json"
  capture "$1" idem serve --config "$T/$1.json" --listen 127.0.0.1:0 --port-file "$T/$1.port"
  expect_rc 64
  assert_idem_error
  [[ ! -e $T/$1.port ]] || fail "$1: a port file was written"
  local word
  for word in "$1.json" "${@:3}"; do
    file_has "$T/$1.err" "$word" || fail "$1: the error does not say '$word': $(cat "$T/$1.err")"
  done
}
refused_config typo '{"hooks": [{"path": "/a", "comand": ["true"]}]}' 'hooks[0]' comand
refused_config ttl '{"hooks": [{"path": "/a", "command": ["true"], "ttl": "5x"}]}' 'hooks[0].ttl'
refused_config scheme '{"hooks": [{"path": "/a", "command": ["true"], "signature": {"scheme": "githbu", "secret_env": "X"}}]}' \
  'hooks[0].signature.scheme' githbu
refused_config secret '{"hooks": [{"path": "/a", "command": ["true"], "signature": {"scheme": "github", "secret_env": "IDEM_TEST_UNSET_SECRET"}}]}' \
  'hooks[0].signature.secret_env' IDEM_TEST_UNSET_SECRET
refused_config inline '{"hooks": [{"path": "/a", "command": ["true"], "signature": {"scheme": "github", "secret": "s3cr3t"}}]}' \
  'hooks[0].signature.secret'
refused_config second '{"hooks": [{"path": "/a", "command": ["true"]}, {"path": "/a", "command": ["true"]}]}' \
  'hooks[1].path'
refused_config notjson '{"hooks": [' 'not JSON'
capture missing idem serve --config "$T/no-such.json" --listen 127.0.0.1:0 --port-file "$T/missing.port"
expect_rc 64
assert_idem_error
file_has "$T/missing.err" no-such.json || fail "the error does not name the missing file"

# --- a non-loopback address needs --allow-remote ---------------------------------------------------
capture badport idem serve --config "$T/serve.json" --listen 127.0.0.1:99999 --port-file "$T/badport.port"
expect_rc 64
assert_idem_error
for addr in 0.0.0.0:0 '[::]:0' 192.0.2.1:0; do
  capture remote idem serve --config "$T/serve.json" --listen "$addr" --port-file "$T/remote.port"
  expect_rc 64
  assert_idem_error
  file_has "$T/remote.err" --allow-remote || fail "the refusal of $addr does not mention --allow-remote"
  [[ ! -e $T/remote.port ]] || fail "a port file was written for $addr"
done

# --- slow clients are cut off after --request-timeout, others are still served ----------------------
# The timing checks report and go on (soft), so that every way a slow client is let in shows.
DAEMON=daemon4
start_daemon "$T/serve.json" --request-timeout 1s --max-connections 4
# slow_client NAME REQUEST_PART: sends the part of a request and stalls.
slow_client() {
  raw_connect "$1"
  raw_send "$2"
  raw_close
}
# cut_in_time NAME ELAPSED_MS: NAME's connection was closed about --request-timeout (1 s) after it
# began.
cut_in_time() {
  bg_exited "$1" || fail "$1: still connected after $2 ms (--request-timeout 1s)"
  (($2 >= 900)) || fail "$1: cut off after $2 ms, before --request-timeout 1s"
  (($2 < 3000)) || fail "$1: disconnected only $2 ms after it began (--request-timeout 1s);" \
    "the server had answered: $(head -c 300 "$T/$1.out" | tr '\r\n' '  ')"
}
start=$(now_ms)
slow_client half-body 'POST /hooks/x HTTP/1.1\r\nHost: t\r\nX-Key: slow-1\r\nContent-Length: 100\r\n\r\nonly half'
slow_client half-head 'POST /hooks/x HTTP/1.1\r\nHost: t\r\nX-Ke'
post /hooks/x 'served meanwhile' 'X-Key: meanwhile'
expect_http 200
for c in half-body half-head; do
  wait_until "the stalled client $c is disconnected" bg_exited "$c"
  soft cut_in_time "$c" $(($(now_ms) - start))
  bg_wait "$c"
done
assert_status '/hooks/x#slow-1' none
assert_eq 0 "$(runs /hooks/x slow-1)" "runs of a delivery whose body never arrived"
post /hooks/x 'served after' 'X-Key: after-slow'
expect_http 200

# A client that trickles a byte every 250 ms never stalls for a whole second, but contract §6 cuts off
# slow clients with a whole-request deadline: --request-timeout bounds the request as a whole.
raw_connect trickle
request_text=$'POST /hooks/x HTTP/1.1\r\nHost: t\r\nX-Key: trickle\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n'
start=$(now_ms)
for ((i = 0; i < ${#request_text}; i++)); do
  bg_running trickle || break
  raw_send "${request_text:i:1}" || break
  (($(now_ms) - start < 6000)) || break
  sleep 0.25  # pacing the trickle, not synchronisation
done
raw_close
soft cut_in_time trickle $(($(now_ms) - start))
stop_daemon

# The connection cap bounds connections at once, not in a row: with --max-connections 1, clients
# that each connect after the previous one has closed are all served, at once.
DAEMON=daemon5
start_daemon "$T/serve.json" --request-timeout 2s --max-connections 1
one_at_a_time_served() {
  local i code t0
  for ((i = 1; i <= 6; i++)); do
    t0=$(now_ms)
    code=$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' "$URL/healthz") || true
    [[ $code == 200 ]] || fail "--max-connections 1: sequential request $i of 6 (each connecting after" \
      "the previous connection closed) got '$code' after $(($(now_ms) - t0)) ms, want 200"
  done
}
soft one_at_a_time_served
stop_daemon
integrity_ok
soft_done
