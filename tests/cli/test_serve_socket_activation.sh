#!/usr/bin/env bash
# systemd socket activation and Type=notify, with systemd's own systemd-socket-activate: the
# passed TCP socket replaces --listen and a passed Unix socket serves what --socket does;
# NOTIFY_SOCKET hears READY=1 once listening, RELOADING=1 (with MONOTONIC_USEC) then READY=1
# around a SIGHUP, STOPPING=1 at the drain. --pidfile: written once listening, refused while its
# process lives, replaced when that process is gone, removed at exit.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
command -v systemd-socket-activate >/dev/null ||
  skip "systemd-socket-activate is missing (package systemd)"
command -v python3 >/dev/null || fail "python3 is missing (scripts/deps.sh installs it)"

cat >"$T/serve.json" <<'JSON'
{"hooks": [{"path": "/hooks/x",
            "command": ["/bin/sh", "-c", "cat; echo \" sockets=$(ls -l /proc/self/fd | grep -c socket:) env=$(env | grep -c ^LISTEN_)\""],
            "key": {"header": "X-Key"}}]}
JSON

# The service manager's side of Type=notify: a datagram socket whose messages go to
# $T/notify.log, one a line (a message's own newlines turned into spaces).
cat >"$T/notify.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
open(sys.argv[2] + ".ready", "w").close()
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode().replace("\n", " ") + "\n")
PY
bg notify python3 "$T/notify.py" "$T/notify.sock" "$T/notify.log"
wait_until "the notify listener is up" test -e "$T/notify.log.ready"

# A free port: one the kernel just gave out; systemd-socket-activate binds it again at once.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# systemd-socket-activate passes on only the variables named with -E; it execs idem in its own
# process once the first connection comes, so its pid is the daemon's.
listening_or_gone() { file_has "$T/daemon.err" "Listening on $T/ledger.sock" || bg_exited daemon; }
for _ in 1 2 3 4 5; do  # another process may take the free port first: then pick another
  PORT=$(free_port)
  rm -f "$T/ledger.sock"
  bg daemon systemd-socket-activate -l "127.0.0.1:$PORT" -l "$T/ledger.sock" \
    -E PATH -E IDEM_DB -E IDEM_TEST_DIR -E "NOTIFY_SOCKET=$T/notify.sock" \
    "$IDEM_BIN" serve --config "$T/serve.json" --listen 127.0.0.1:1 --pidfile "$T/idem.pid"
  wait_until "systemd-socket-activate listens or fails" listening_or_gone
  bg_running daemon && break
done
bg_running daemon || fail "systemd-socket-activate did not start: $(cat "$T/daemon.err")"
URL=http://127.0.0.1:$PORT

# The first connection starts the daemon; it is answered on the passed socket (--listen's port
# 1 is never bound).
post /hooks/x hello 'X-Key: a'
expect_http 200
# No passed socket (close-on-exec) and no LISTEN_* variable reaches a handler.
assert_body 'hello sockets=0 env=0\n'
wait_until "the daemon says READY=1" file_has "$T/notify.log" "READY=1"
file_has "$T/daemon.err" '"socket_activation":true' || fail "the listening event does not say socket_activation"
file_has "$T/daemon.err" "\"address\":\"127.0.0.1:$PORT\"" || fail "the listening event names another address"
pid=$(bg_pid daemon)
assert_eq "$pid" "$(cat "$T/idem.pid")" "the pid file"
# The passed Unix socket serves the socket's routes: the built-ins and the ledger, no token.
curl -sS --unix-socket "$T/ledger.sock" http://x/healthz >"$T/unix.out" 2>"$T/unix.err" ||
  fail "curl on the passed Unix socket failed: $(cat "$T/unix.err")"
assert_bytes "$T/unix.out" 'ok\n'

# A second daemon with the same pid file is refused while the first lives.
capture second idem serve --config "$T/serve.json" --listen 127.0.0.1:0 --pidfile "$T/idem.pid"
expect_rc 64
assert_idem_error second
file_has "$T/second.err" "--pidfile $T/idem.pid: process $pid is running" || fail "$(cat "$T/second.err")"

# SIGHUP: RELOADING=1 with the monotonic time, then READY=1 again.
kill -HUP "$pid"
wait_until "the daemon reloads" file_has "$T/daemon.err" '"event":"reloaded"'
reloading_then_ready() { grep -A1 '^RELOADING=1 MONOTONIC_USEC=[0-9][0-9]*$' "$T/notify.log" | grep -q '^READY=1$'; }
wait_until "RELOADING=1 then READY=1" reloading_then_ready

kill -TERM "$pid"
bg_wait daemon
expect_rc 0
file_has "$T/notify.log" "STOPPING=1" || fail "no STOPPING=1: $(cat "$T/notify.log")"
[[ ! -e $T/idem.pid ]] || fail "the pid file is left after the exit"
assert_eq 'READY=1|RELOADING=1|READY=1|STOPPING=1' \
  "$(sed 's/ MONOTONIC_USEC=[0-9]*//' "$T/notify.log" | tr '\n' '|' | sed 's/|$//')" "the notifications, in order"

# A pid file whose process is gone is replaced; garbage there is refused.
echo "$pid" >"$T/idem.pid"
DAEMON=plain
start_daemon "$T/serve.json" --pidfile "$T/idem.pid"
assert_eq "$(bg_pid plain)" "$(cat "$T/idem.pid")" "the replaced pid file"
stop_daemon plain
[[ ! -e $T/idem.pid ]] || fail "the pid file is left after the exit"
echo 'not a pid' >"$T/other.pid"
capture garbage idem serve --config "$T/serve.json" --listen 127.0.0.1:0 --pidfile "$T/other.pid"
expect_rc 64
file_has "$T/garbage.err" "holds no process id" || fail "$(cat "$T/garbage.err")"
integrity_ok
kill -TERM "$(bg_pid notify)"
bg_wait notify
