# shellcheck shell=bash
# Helpers for the end-to-end tests of `idem serve` (contract §6). Source after lib.sh:
#
#   source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
#   source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
#
# Daemons run in the background under lib.sh's bg, on 127.0.0.1 with port 0 and a port file, so
# the cleanup trap kills them by pid whatever the outcome. Requests go through curl; each answer
# lands in $T/$RESP.status, $T/$RESP.headers (CRLF removed) and $T/$RESP.body ($RESP defaults to
# "resp"). Signatures are made with the openssl CLI, independently of the daemon's own code.
command -v curl >/dev/null || fail "curl is missing (scripts/deps.sh installs it)"
command -v openssl >/dev/null || fail "openssl is missing (scripts/deps.sh installs it)"

# The daemon of the last start_daemon: its bg name, port and base URL.
DAEMON=daemon
PORT=
URL=
# Options every request and get passes to curl (e.g. --cacert FILE for a daemon serving TLS).
CURL_EXTRA=()

# start_daemon CONFIG [ARG...]: starts `idem serve --config CONFIG` as bg process $DAEMON (its
# stderr, the JSON log, is $T/$DAEMON.err), waits until it has written its port file, and sets
# PORT and URL. Fails with the daemon's stderr if it exits instead.
start_daemon() {
  local config=$1
  shift
  start_serve --config "$config" "$@"
}

# start_serve ARG...: the same for `idem serve ARG...` (--hooks FILE, --upstream URL, ...).
start_serve() {
  local port_file=$T/$DAEMON.port
  rm -f -- "$port_file"
  bg "$DAEMON" idem serve --listen 127.0.0.1:0 --port-file "$port_file" "$@"
  _daemon_up_or_gone() { [[ -s $port_file ]] || bg_exited "$DAEMON"; }
  wait_until "daemon '$DAEMON' writes its port file" _daemon_up_or_gone
  [[ -s $port_file ]] ||
    fail "daemon '$DAEMON' exited before listening; its stderr: $(head -c 2000 "$T/$DAEMON.err" | cat -v)"
  PORT=$(<"$port_file")
  [[ $PORT =~ ^[1-9][0-9]*$ ]] || fail "port file of '$DAEMON' holds '$PORT'"
  URL=http://127.0.0.1:$PORT
  file_has "$T/$DAEMON.err" '"event":"listening"' || fail "no listening event in $T/$DAEMON.err"
}

# notes_script: makes $T/note.sh, a notify command that keeps each notification it is given in
# $NOTES (made here): NOTES/<event>.<n> its stdin, NOTES/<event>.<n>.env its environment.
notes_script() {
  export NOTES=$T/notes
  mkdir "$NOTES"
  cat >"$T/note.sh" <<'EOF2'
#!/bin/sh
n=$(ls "$NOTES" | grep -vc env)
env > "$NOTES/$IDEM_EVENT.$n.env"
cat > "$NOTES/$IDEM_EVENT.$n"
EOF2
  chmod +x "$T/note.sh"
}

# stop_daemon [NAME]: SIGTERM, waits for the exit, expects 0 and a "stopped" event.
stop_daemon() {
  local name=${1:-$DAEMON}
  kill -TERM "$(bg_pid "$name")"
  bg_wait "$name"
  expect_rc 0
  file_has "$T/$name.err" '"event":"stopped"' || fail "no stopped event in $T/$name.err"
}

# kill_daemon [NAME]: SIGKILL, waits for the exit (137).
kill_daemon() {
  local name=${1:-$DAEMON}
  kill -KILL "$(bg_pid "$name")"
  bg_wait "$name"
  expect_rc 137
}

# request METHOD PATH BODY [HEADER...]: sends BODY (exact bytes, no NUL) to $URL$PATH with the
# given "Name: value" headers. The answer goes to $T/$RESP.{status,headers,body}; a transport
# error (no HTTP answer at all) fails the test. curl's own Content-Type and Expect are removed so
# that the request carries only what the test says, plus Host, User-Agent, Accept, Content-Length.
request() {
  local method=$1 path=$2 body=$3
  shift 3
  local r=$T/${RESP:-resp} args=() h
  printf %s "$body" >"$r.sent"
  for h in "$@"; do args+=(-H "$h"); done
  local code=0
  curl -sS --max-time 60 "${CURL_EXTRA[@]}" -X "$method" -H 'Content-Type:' -H 'Expect:' "${args[@]}" \
    --data-binary "@$r.sent" -D "$r.rawheaders" -o "$r.body" -w '%{http_code}' \
    "$URL$path" >"$r.status" 2>"$r.curlerr" || code=$?
  ((code == 0)) || fail "curl $method $path failed ($code): $(cat "$r.curlerr")"
  tr -d '\r' <"$r.rawheaders" >"$r.headers"
}
post() { request POST "$@"; }  # post PATH BODY [HEADER...]
get() {  # get PATH: a GET without a body
  local r=$T/${RESP:-resp} code=0
  curl -sS --max-time 60 "${CURL_EXTRA[@]}" -D "$r.rawheaders" -o "$r.body" -w '%{http_code}' "$URL$1" \
    >"$r.status" 2>"$r.curlerr" || code=$?
  ((code == 0)) || fail "curl GET $1 failed ($code): $(cat "$r.curlerr")"
  tr -d '\r' <"$r.rawheaders" >"$r.headers"
}

http_status() { cat "$T/${RESP:-resp}.status"; }
# header_value NAME: the value of the answer's header NAME (case-insensitive), empty when absent.
header_value() {
  local name=${1,,} line
  while IFS= read -r line; do
    [[ ${line,,} == "$name:"* ]] || continue
    line=${line#*:}
    line=${line#"${line%%[! ]*}"}
    printf '%s' "$line"
    return 0
  done <"$T/${RESP:-resp}.headers"
}
has_header() { grep -qi "^$1:" "$T/${RESP:-resp}.headers"; }

expect_http() {  # expect_http STATUS: the last answer's status
  local got
  got=$(http_status)
  [[ $got == "$1" ]] ||
    fail "HTTP status: want $1, got $got; body: $(head -c 1000 "$T/${RESP:-resp}.body" | cat -v)"
}
assert_header() {  # assert_header NAME VALUE
  has_header "$1" || fail "the answer has no $1 header; headers: $(cat "$T/${RESP:-resp}.headers")"
  assert_eq "$2" "$(header_value "$1")" "header $1"
}
assert_no_header() {
  ! has_header "$1" || fail "the answer should have no $1 header, has '$(header_value "$1")'"
}
assert_body() { assert_bytes "$T/${RESP:-resp}.body" "$@"; }  # assert_body PRINTF_FORMAT [ARG...]

# expect_problem STATUS: an RFC 9457 answer: the status, Content-Type application/problem+json, a
# JSON object body whose "status" member is STATUS and which has a "title"; not a replay.
expect_problem() {
  expect_http "$1"
  assert_header Content-Type application/problem+json
  local body=$T/${RESP:-resp}.body
  assert_eq "$1" "$(jsonq /status <"$body")" "status member of the problem body"
  [[ $(jsonq /title <"$body") != "<missing>" ]] || fail "problem body has no title: $(cat "$body")"
  assert_no_header Idempotent-Replayed
}

# log_count FILE STRING: how many lines of FILE contain STRING (0 for a missing file).
log_count() {
  local n=0
  [[ ! -e $1 ]] || n=$(grep -cF -- "$2" "$1") || true
  echo "$n"
}

# ls_keys: the store's keys, sorted, one a line.
ls_keys() { idem ls --json | jsonq /key | sort; }

# --- Checks that report and go on ----------------------------------------------------------------
# soft CMD...: runs an assertion in a subshell; if it fails (its FAIL line is on stderr), the test
# goes on and soft_done fails it at the end. For checks of known weak spots, so that one of them
# does not hide the others.
SOFT_FAILED=()
soft() { ("$@") || SOFT_FAILED+=("$*"); }
soft_done() {
  ((${#SOFT_FAILED[@]} == 0)) || fail "${#SOFT_FAILED[@]} check(s) failed (FAIL lines above)"
}

# --- Signatures, computed with the openssl CLI ----------------------------------------------------

_hmac() {  # _hmac KEY_OPTION... : raw HMAC-SHA256 of stdin
  openssl dgst -sha256 "$@" -binary
}
to_hex() { od -An -v -tx1 | tr -d ' \n'; }
to_b64() { base64 -w0; }
hmac_hex() { printf %s "$2" | _hmac -hmac "$1" | to_hex; }   # hmac_hex SECRET DATA
hmac_b64() { printf %s "$2" | _hmac -hmac "$1" | to_b64; }   # hmac_b64 SECRET DATA
# hmac_hexkey_b64 HEXKEY DATA: base64 HMAC keyed by raw bytes (which may not be valid as text).
hmac_hexkey_b64() { printf %s "$2" | _hmac -mac HMAC -macopt "hexkey:$1" | to_b64; }

now_s() { echo "${EPOCHREALTIME%.*}"; }

# Each sign_* sets SIG to the array of headers that sign BODY under SECRET, as the provider would
# send them, including the provider's delivery-id header where the scheme takes its key from one.
SIG=()
sign_github() {  # sign_github SECRET BODY DELIVERY_ID
  SIG=("X-Hub-Signature-256: sha256=$(hmac_hex "$1" "$2")" "X-GitHub-Delivery: $3"
       "X-GitHub-Event: push")
}
sign_stripe() {  # sign_stripe SECRET BODY [TIMESTAMP]  (the key is the body's /id)
  local t=${3:-$(now_s)}
  SIG=("Stripe-Signature: t=$t,v1=$(hmac_hex "$1" "$t.$2")")
}
# sign_standard SECRET ID BODY [TIMESTAMP]: SECRET is "whsec_" + base64 of the key bytes.
sign_standard() {
  local t=${4:-$(now_s)} hexkey
  hexkey=$(printf %s "${1#whsec_}" | base64 -d | to_hex)
  SIG=("webhook-id: $2" "webhook-timestamp: $t"
       "webhook-signature: v1,$(hmac_hexkey_b64 "$hexkey" "$2.$t.$3")")
}
sign_shopify() {  # sign_shopify SECRET BODY WEBHOOK_ID
  SIG=("X-Shopify-Hmac-Sha256: $(hmac_b64 "$1" "$2")" "X-Shopify-Webhook-Id: $3"
       "X-Shopify-Topic: orders/create")
}
sign_slack() {  # sign_slack SECRET BODY [TIMESTAMP]  (the key is the body's /event_id)
  local t=${3:-$(now_s)}
  SIG=("X-Slack-Request-Timestamp: $t" "X-Slack-Signature: v0=$(hmac_hex "$1" "v0:$t:$2")")
}

# --- Raw connections, for clients curl cannot play (stalled, trickling, not HTTP) -----------------

# raw_connect NAME: opens a TCP connection to the daemon; RAW_FD is its write side. A background
# reader (bg NAME) copies what the server sends to $T/NAME.out and exits when the server closes
# the connection (bg_exited NAME).
RAW_FD=
raw_connect() {
  exec {RAW_FD}<>"/dev/tcp/127.0.0.1/$PORT"
  # A background job's stdin is /dev/null: the reader takes the socket from an inherited fd.
  # shellcheck disable=SC2016
  bg "$1" bash -c 'exec cat <&"$1"' reader "$RAW_FD"
}
# raw_send TEXT: writes TEXT (printf %b escapes such as \r\n); fails (status 1) once the server
# has closed the connection, without the shell dying of SIGPIPE.
raw_send() { (trap '' PIPE; printf '%b' "$1" >&"$RAW_FD") 2>/dev/null; }
# raw_close: closes our write side (the reader keeps its copy until the server closes).
raw_close() { exec {RAW_FD}>&-; }
