# shellcheck shell=bash
# Shared setup of the test_serve_http*.sh scripts (source after lib.sh and serve_lib.sh): a
# handler that keeps its stdin in $T/stdin.KEY and logs "DAEMON HOOK KEY" to $T/handler.log, a
# config with a plain hook (/hooks/x, max_body 1024) and two GitHub-signed ones (/hooks/github,
# 200 KiB; /hooks/small, 64 KiB), and raw-connection helpers for what curl cannot send.
export GH_SECRET='form secret'
cat >"$T/handler.sh" <<'EOF'
#!/bin/sh
# Keeps its stdin, logs the run, answers JSON naming the key and the body's size.
cat >"$IDEM_TEST_DIR/stdin.$IDEM_KEY"
echo "${DAEMON_NAME:-first} $IDEM_HOOK $IDEM_KEY" >>"$IDEM_TEST_DIR/handler.log"
printf '{"key":"%s","bytes":%s}\n' "$IDEM_KEY" "$(wc -c <"$IDEM_TEST_DIR/stdin.$IDEM_KEY")"
EOF
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF
{"hooks": [
  {"path": "/hooks/x", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}, "max_body": 1024},
  {"path": "/hooks/github", "command": ["$T/handler.sh"], "max_body": "200KiB",
   "signature": {"scheme": "github", "secret_env": "GH_SECRET"}},
  {"path": "/hooks/small", "command": ["$T/handler.sh"], "max_body": "64KiB",
   "signature": {"scheme": "github", "secret_env": "GH_SECRET"}}
]}
EOF
runs() { log_count "$T/handler.log" " $1 $2"; }  # runs HOOK KEY

# exchange NAME TEXT: sends TEXT (printf %b escapes) on a new raw connection, waits until the
# server closes it, and leaves what the server sent in $T/NAME.out.
exchange() {
  raw_connect "$1"
  raw_send "$2" || true
  raw_close
  wait_until "the server closes connection $1" bg_exited "$1"
  bg_wait "$1"
}
statuses() {  # statuses NAME: the status codes of the answers on connection NAME, in order
  grep -ao $'^HTTP/1\.[01] [0-9][0-9][0-9] ' "$T/$1.out" | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//'
}
expect_statuses() {  # expect_statuses NAME WANT
  assert_eq "$2" "$(statuses "$1")" "answers on connection $1 (got: $(head -c 600 "$T/$1.out" | tr '\r\n' '  '))"
}
