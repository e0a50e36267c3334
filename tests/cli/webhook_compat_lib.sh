# shellcheck shell=bash
# Helpers of test_serve_webhook_compat.sh (source after lib.sh and serve_lib.sh): start Debian's
# Go `webhook` and `idem serve --hooks` on the same hooks file, send every scenario of
# webhook/scenarios.txt to a server, and keep each answer and each handler run in $T/SERVER/.
command -v webhook >/dev/null || fail "webhook is missing (scripts/deps.sh installs it)"
command -v python3 >/dev/null || fail "python3 is missing (scripts/deps.sh installs it)"
COMPAT=${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/webhook
ECHO=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/helpers" && pwd)/hook_echo.sh
[[ -x $ECHO ]] || fail "$ECHO is not executable"
mkdir -p "$T/work"
cp "$ECHO" "$T/work/echo.sh"  # for the hooks with a relative execute-command

# hooks_file SRC DEST: SRC (under webhook/) with the handler's path and the work directory
# filled in. Both servers read DEST as it is.
hooks_file() {
  sed -e "s|@ECHO@|$ECHO|g" -e "s|@DIR@|$T/work|g" "$COMPAT/$1" >"$T/$2"
}

# free_port: a TCP port nothing listens on at the moment (webhook cannot bind port 0 and say
# which port it got); start_webhook retries when another process takes it first.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

_webhook_up_or_gone() {  # _webhook_up_or_gone NAME PORT
  [[ $(curl -s --max-time 5 "http://127.0.0.1:$2/" 2>/dev/null) == OK ]] || bg_exited "$1"
}

# Variables (NAME=VALUE) that the next servers get in their environment, and nothing else.
SERVER_ENV=()

# start_webhook NAME HOOKS [ARG...]: the Go webhook as bg process NAME, its handler runs in
# $T/NAME.runs; sets URL. Ready once it answers GET / with "OK".
start_webhook() {
  local name=$1 hooks=$2 port try
  shift 2
  mkdir -p "$T/$name.runs" "$T/$name"
  for ((try = 0; try < 10; try++)); do
    port=$(free_port)
    bg "$name" env ECHO_DIR="$T/$name.runs" "${SERVER_ENV[@]}" webhook -hooks "$hooks" -ip 127.0.0.1 -port "$port" -verbose "$@"
    wait_until "webhook '$name' answers" _webhook_up_or_gone "$name" "$port"
    if bg_running "$name"; then
      URL=http://127.0.0.1:$port
      return
    fi
    bg_wait "$name"
  done
  fail "webhook '$name' did not start; its stderr: $(tail -c 2000 "$T/$name.err")"
}

_idem_up_or_gone() { [[ -s $2 ]] || bg_exited "$1"; }  # _idem_up_or_gone NAME PORT_FILE

# start_idem NAME HOOKS [ARG...]: `idem serve --hooks HOOKS` as bg process NAME; sets URL.
start_idem() {
  local name=$1 hooks=$2 port_file=$T/$1.port
  shift 2
  mkdir -p "$T/$name.runs" "$T/$name"
  rm -f -- "$port_file"
  bg "$name" env ECHO_DIR="$T/$name.runs" "${SERVER_ENV[@]}" "$IDEM_BIN" serve --db "$T/$name.db" \
    --hooks "$hooks" \
    --listen 127.0.0.1:0 \
    --port-file "$port_file" "$@"
  wait_until "idem '$name' writes its port file" _idem_up_or_gone "$name" "$port_file"
  [[ -s $port_file ]] ||
    fail "idem '$name' exited before listening; its stderr: $(head -c 2000 "$T/$name.err" | cat -v)"
  URL=http://127.0.0.1:$(<"$port_file")
}

stop_server() {  # stop_server NAME: SIGTERM, waits for the exit
  kill -TERM "$(bg_pid "$1")"
  bg_wait "$1"
}

# trim VAR...: strips the spaces around the value of each variable VAR (no subshell: the table
# has a few hundred fields).
trim() {
  local -n _v
  for _v in "$@"; do
    _v=${_v#"${_v%%[! ]*}"}
    _v=${_v%"${_v##*[! ]}"}
  done
}

# _expand HEADER BODYFILE: HEADER with its {…} placeholders computed over BODYFILE.
_expand() {
  local h=$1 body=$2 kind secret mac
  while [[ $h =~ \{(sha1|sha256|sha512|scalr):([^}]*)\} ]]; do
    kind=${BASH_REMATCH[1]} secret=${BASH_REMATCH[2]}
    case $kind in
      scalr) mac=$(cat "$body" - <<<"$SCALR_DATE" | head -c -1 |
                   openssl dgst -sha1 -hmac "$secret" -binary | to_hex) ;;
      *) mac=$(openssl dgst "-$kind" -hmac "$secret" -binary <"$body" | to_hex) ;;
    esac
    h=${h/"${BASH_REMATCH[0]}"/$mac}
  done
  printf '%s' "${h//\{date\}/$SCALR_DATE}"
}

# The headers an answer is compared by (the rest are transport: Date, Content-Length ...).
COMPARED_HEADERS='^(content-type|location|x-handled-by|x-served-by|access-control-allow-origin|idempotent-replayed):'

# send SERVER NAME METHOD PATH TYPE HEADERS BODY: one request to $URL, PATH sent as written (no
# dot segments removed); the answer lands in $T/SERVER/NAME.{status,headers,body} (addresses with
# their port normalised).
send() {
  local server=$1 name=$2 method=$3 path=$4 type=$5 headers=$6 body=$7
  local out=$T/$server/$name args=(-H 'Content-Type:' -H 'Expect:') h code=0
  case $body in
    -) : >"$out.sent" ;;
    @*) cp "$COMPAT/payloads/${body#@}" "$out.sent" ;;
    *) printf '%b' "$body" >"$out.sent" ;;
  esac
  [[ $type == - ]] || args=(-H "Content-Type: $type" -H 'Expect:')
  if [[ $headers != - ]]; then
    while [[ -n $headers ]]; do
      h=${headers%% ;; *}
      [[ $headers == *" ;; "* ]] && headers=${headers#* ;; } || headers=
      trim h
      [[ $h != *\{* ]] || h=$(_expand "$h" "$out.sent")
      args+=(-H "$h")
    done
  fi
  curl -sS --max-time 30 --path-as-is -A compat-test -X "$method" "${args[@]}" --data-binary "@$out.sent" \
    -D "$out.rawheaders" -o "$out.rawbody" -w '%{http_code}' "$URL$path" >"$out.status" \
    2>"$out.curlerr" || code=$?
  ((code == 0)) || fail "$server: curl $method $path failed ($code): $(cat "$out.curlerr")"
  sed -E 's/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g' "$out.rawbody" >"$out.body"
  tr -d '\r' <"$out.rawheaders" | grep -iE "$COMPARED_HEADERS" | sed 's/^[^:]*/\L&/' |
    LC_ALL=C sort >"$out.headers" || true
}

_runs_in() {  # _runs_in DIR: how many finished runs DIR holds
  local runs=("$1"/run.*)
  [[ -e ${runs[0]} ]] || runs=()
  echo "${#runs[@]}"
}
_runs_done() { (($(_runs_in "$1") >= $2)); }

# collect SERVER NAME RUNS: waits for RUNS handler runs of the last request and moves their
# records to $T/SERVER/NAME.runs. More runs than RUNS fail a webhook; for idem, what ran is kept
# for compare_with to show (after 5 s for a run that does not come).
collect() {
  local dir=$T/$1.runs out=$T/$1/$2.runs got deadline
  if [[ $1 == webhook* ]]; then
    wait_until "$1: $3 run(s) of $2" _runs_done "$dir" "$3"
  else
    deadline=$((SECONDS + 5))
    until _runs_done "$dir" "$3" || ((SECONDS >= deadline)); do sleep 0.02; done
  fi
  got=$(_runs_in "$dir")
  [[ $1 != webhook* ]] || ((got == $3)) || fail "$1: scenario $2 ran the handler $got times, want $3"
  : >"$out"
  if ((got > 0)); then
    sed -E 's/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g' "$dir"/run.* >>"$out"
    rm -f "$dir"/run.*
  fi
  # The files of pass-file-to-command are removed once the command exited.
  if [[ -e $dir/files ]]; then
    local file
    while IFS= read -r file; do
      wait_until "$1: $2 removes $file" test ! -e "$file"
    done <"$dir/files"
    rm -f "$dir/files"
  fi
}

# run_scenarios SERVER [TABLE]: every scenario of TABLE (default scenarios.txt) against $URL;
# checks webhook's own answers (status and expected/NAME) when SERVER is a webhook (or
# CHECK_STATUS is set: for idem's own scenarios).
run_scenarios() {
  local server=$1 table=${2:-scenarios.txt} name mp method path type headers body status runs
  while IFS='|' read -r name mp type headers body status runs; do
    trim name mp type headers body status runs
    [[ -n $name && $name != \#* ]] || continue
    method=${mp%% *} path=${mp#* }
    TZ=UTC printf -v SCALR_DATE '%(%a %d %b %Y %H:%M:%S UTC)T' -1
    # A deliberate difference in the runs (webhook/idem/NAME.runs): idem runs it once or never.
    if [[ $server != webhook* && -e $COMPAT/idem/$name.runs ]]; then
      runs=0
      [[ ! -s $COMPAT/idem/$name.runs ]] || runs=1
    fi
    send "$server" "$name" "$method" "$path" "$type" "$headers" "$body"
    collect "$server" "$name" "$runs"
    if [[ $server == webhook* || -n ${CHECK_STATUS:-} ]]; then
      assert_eq "$status" "$(<"$T/$server/$name.status")" "webhook's status for $name"
      [[ ! -e $COMPAT/expected/$name ]] || assert_same "$COMPAT/expected/$name" "$T/$server/$name.body"
    fi
  done <"$COMPAT/$table"
}

# compare_with SERVER REFERENCE: SERVER answered every scenario REFERENCE did, as REFERENCE did
# (status, body, compared headers, handler runs), except where webhook/idem/NAME.WHAT holds what
# idem answers instead: a deliberate difference, explained in webhook/idem/README. Lists every
# difference, then fails if there was one.
compare_with() {
  local f what want differences=0
  for f in "$T/$2"/*.status; do
    f=${f%.status}
    f=${f##*/}
    for what in status body headers runs; do
      want=$T/$2/$f.$what
      [[ ! -e $COMPAT/idem/$f.$what ]] || want=$COMPAT/idem/$f.$what
      cmp -s "$want" "$T/$1/$f.$what" && continue
      differences=$((differences + 1))
      echo "DIFFERENCE: $f: the $what of $1 differs from ${want#"$T/"}:" >&2
      diff "$want" "$T/$1/$f.$what" | head -20 | cat -v >&2 || true
    done
  done
  ((differences == 0)) || fail "$1: $differences difference(s) from $2 (DIFFERENCE lines above)"
}
