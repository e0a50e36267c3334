# shellcheck shell=bash
# Helpers for the end-to-end tests of the ledger API (contract §7b). Source after lib.sh and
# serve_lib.sh. start_ledger runs `idem serve --ledger` on 127.0.0.1 port 0 and sets PORT, URL
# and TOKEN (from the token file beside $IDEM_DB); call sends one request with the token.
TOKEN=
TOKEN_FILE=$IDEM_DB.token

# start_ledger [ARG...]: `idem serve --ledger ARG...` as bg process $DAEMON (see start_daemon).
start_ledger() {
  local port_file=$T/$DAEMON.port
  rm -f -- "$port_file"
  bg "$DAEMON" idem serve --ledger --listen 127.0.0.1:0 --port-file "$port_file" "$@"
  _ledger_up_or_gone() { [[ -s $port_file ]] || bg_exited "$DAEMON"; }
  wait_until "daemon '$DAEMON' writes its port file" _ledger_up_or_gone
  [[ -s $port_file ]] ||
    fail "daemon '$DAEMON' exited before listening; its stderr: $(head -c 2000 "$T/$DAEMON.err" | cat -v)"
  PORT=$(<"$port_file")
  URL=http://127.0.0.1:$PORT
  TOKEN=$(<"$TOKEN_FILE")
}

# call METHOD PATH [BODY]: with "Authorization: Bearer $TOKEN"; the answer as request() leaves it.
call() {
  request "$1" "$2" "${3:-}" "Authorization: Bearer $TOKEN" "Content-Type: application/json"
}

# answer_field POINTER: a member of the last answer's JSON body (jsonq's "<missing>" if absent).
answer_field() { jsonq "$1" <"$T/${RESP:-resp}.body"; }

# claim KEY [MEMBERS]: POST /v1/claim {"key": KEY, MEMBERS}; MEMBERS is raw JSON, e.g. '"lease": 1'.
claim() { call POST /v1/claim "{\"key\": \"$1\"${2:+, $2}}"; }
# finish KEY TOKEN STATUS [MEMBERS]
finish() {
  call POST /v1/finish "{\"key\": \"$1\", \"attempt_token\": \"$2\", \"status\": \"$3\"${4:+, $4}}"
}
heartbeat() { call POST /v1/heartbeat "{\"key\": \"$1\", \"attempt_token\": \"$2\"${3:+, $3}}"; }

# expect_bad_field FIELD: a 400 problem naming FIELD.
expect_bad_field() {
  expect_problem 400
  assert_eq "$1" "$(answer_field /field)" "field named by the 400"
}
