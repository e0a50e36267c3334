# shellcheck shell=bash
# Helpers for the end-to-end tests of the Idempotency-Key proxy (contract §7). Source after lib.sh and
# serve_lib.sh. The upstream is tests/helpers/upstream_server.js under node, on 127.0.0.1 with a
# port file, started under lib.sh's bg (so cleanup kills it); it answers as the request's
# X-Answer-* headers ask and counts what reaches it.
command -v node >/dev/null || fail "node is missing (scripts/deps.sh installs it)"
_upstream_js=${IDEM_TESTS_DIR:-$(dirname "$0")/..}/helpers/upstream_server.js

UPORT=
UURL=

# start_upstream NAME [ARG...]: starts the upstream as bg NAME (its log of requests is
# $T/NAME.log) and sets UPORT and UURL. ARG may be --port N (to come back on a port).
start_upstream() {
  local name=$1
  shift
  local port_file=$T/$name.port
  rm -f -- "$port_file"
  bg "$name" node "$_upstream_js" --port-file "$port_file" --log "$T/$name.log" "$@"
  _upstream_up_or_gone() { [[ -s $port_file ]] || bg_exited "$name"; }
  wait_until "upstream '$name' writes its port file" _upstream_up_or_gone
  [[ -s $port_file ]] || fail "upstream '$name' exited: $(head -c 2000 "$T/$name.err")"
  UPORT=$(<"$port_file")
  UURL=http://127.0.0.1:$UPORT
}

# upstream_count [PATH]: how many requests (to PATH) reached the upstream at $UURL.
upstream_count() {
  curl -sS --max-time 10 "$UURL/__count${1:+?path=$1}" || fail "the upstream does not answer"
}

# start_serve ARG...: starts `idem serve ARG...` as bg $DAEMON, like serve_lib.sh's start_daemon
# without its --config (so --upstream alone can be given).
start_serve() {
  local port_file=$T/$DAEMON.port
  rm -f -- "$port_file"
  bg "$DAEMON" idem serve --listen 127.0.0.1:0 --port-file "$port_file" "$@"
  _serve_up_or_gone() { [[ -s $port_file ]] || bg_exited "$DAEMON"; }
  wait_until "daemon '$DAEMON' writes its port file" _serve_up_or_gone
  [[ -s $port_file ]] ||
    fail "daemon '$DAEMON' exited before listening; its stderr: $(head -c 2000 "$T/$DAEMON.err" | cat -v)"
  PORT=$(<"$port_file")
  URL=http://127.0.0.1:$PORT
}

# expect_idempotency_problem STATUS TITLE: a problem answer with that title and the error member
# SDKs look for.
expect_idempotency_problem() {
  expect_problem "$1"
  local body=$T/${RESP:-resp}.body
  assert_eq "$2" "$(jsonq /title <"$body")" "problem title"
  assert_eq idempotency_error "$(jsonq /error/type <"$body")" "error.type"
  assert_eq "$(jsonq /detail <"$body")" "$(jsonq /error/message <"$body")" "error.message"
}

# record_status KEY: the stored status of record KEY ("" when there is none).
record_status() {
  idem ls --json | KEY=$1 node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      for (const line of s.split("\n").filter(Boolean)) {
        const r = JSON.parse(line);
        if (r.key === process.env.KEY) { process.stdout.write(r.status); return; }
      }
    });'
}

# use_node_packages: installs tests/node's locked npm packages (the SDKs; a no-op when
# scripts/test.sh has installed them) and sets node_dir to tests/node, with NODE_PATH.
use_node_packages() {
  local tests=${IDEM_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
  "$tests/../scripts/npm_deps.sh" >&2 || fail "scripts/npm_deps.sh could not install tests/node"
  node_dir=$tests/node
  export NODE_PATH=$node_dir/node_modules
}
