# shellcheck shell=bash
# Shared helpers for idem's end-to-end tests. Each test script sources this first. It gives the
# script strict mode, a private temp dir $T (the working directory, with IDEM_DB inside), stdin
# from /dev/null, and a cleanup trap that kills every background process the test started and
# removes $T on success (or skip) or keeps and prints it on failure. A test skips only through
# `skip REASON` (exit 77, CTest's SKIP_RETURN_CODE): any other exit 77, idem's own "not the owner"
# escaping under set -e say, is a failure.
#
# Environment (set by tests/CMakeLists.txt): IDEM_BIN, IDEM_HELPERS (helper binaries);
# IDEM_TEST_BACKEND=postgres runs the script against a fresh schema on the test cluster
# ($IDEM_TEST_PG_URL, see scripts/pg_cluster.sh) through IDEM_STORE, which wins over IDEM_DB.
set -euo pipefail
export LC_ALL=C
: "${IDEM_BIN:?IDEM_BIN must name the idem binary}"
: "${IDEM_HELPERS:?IDEM_HELPERS must name the directory of the test helper binaries}"
unset IDEM_STORE IDEM_KEY IDEM_ATTEMPT

_tests_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # tests/, before the cd below
T=$(mktemp -d "${TMPDIR:-/tmp}/idem-$(basename "$0" .sh).XXXXXX")
export IDEM_DB="$T/idem.db"
# Inherited by every process the test starts: cleanup kills a pid only if it carries this mark,
# so a pid reused by an unrelated process after ours ended is never touched.
export IDEM_TEST_DIR="$T"
cd "$T"
exec </dev/null

declare -A BG=()      # name -> pid of a background process started with bg
_skipped=             # set by skip: the exit 77 that follows is a skip
_pid_files=()         # files whose pid (written by a command under test) cleanup kills

_kill_ours() {
  [[ $1 =~ ^[0-9]+$ ]] || return 0
  grep -qzxF "IDEM_TEST_DIR=$T" "/proc/$1/environ" 2>/dev/null || return 0
  kill -KILL "$1" 2>/dev/null || true
}
_cleanup() {
  local rc=$? pid file
  if ((rc == 77)) && [[ -z $_skipped ]]; then
    echo "$(basename "$0"): exit 77 without skip (idem's 'not the owner'?): a failure" >&2
    rc=1
  fi
  [[ -z ${own_dir:-} ]] || "$_tests_root/../scripts/pg_cluster.sh" stop "$own_dir" || true
  for pid in "${BG[@]}"; do _kill_ours "$pid"; done
  for file in "${_pid_files[@]}"; do
    pid=$(cat "$file" 2>/dev/null) || continue
    _kill_ours "$pid"
  done
  if ((rc == 0 || rc == 77)); then  # 77: skipped (by skip)
    [[ -z ${_pg_schema:-} ]] || _drop_pg_schemas
    rm -rf "$T"
  else
    echo "$(basename "$0"): FAILED (exit $rc); files kept in $T" >&2
  fi
  exit "$rc"
}
trap _cleanup EXIT
# skip REASON...: ends the test as skipped, saying why on stderr. The one way to skip.
skip() {
  echo "SKIP: $*" >&2
  _skipped=1
  exit 77
}
# The test's schema and those fresh_store made for it (named after it).
_drop_pg_schemas() {
  local schemas
  schemas=$(psql -qXAt "$IDEM_TEST_PG_URL" -c "SELECT string_agg(quote_ident(nspname), ', ')
    FROM pg_namespace WHERE nspname = '$_pg_schema' OR starts_with(nspname, '${_pg_schema}_')") ||
    return 0
  [[ -z $schemas ]] || psql -qX "$IDEM_TEST_PG_URL" -c \
    "SET client_min_messages = warning; DROP SCHEMA $schemas CASCADE" || true
}

if [[ ${IDEM_TEST_BACKEND:-sqlite} == postgres ]]; then
  [[ -n ${IDEM_TEST_PG_URL:-} ]] ||
    skip "IDEM_TEST_PG_URL is not set (scripts/test.sh starts a test cluster)"
  _pg_schema=idem_test_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
  psql -qX "$IDEM_TEST_PG_URL" -c "CREATE SCHEMA $_pg_schema" || exit 1
  export IDEM_STORE="$IDEM_TEST_PG_URL?options=-csearch_path%3D$_pg_schema"
fi

# own_pg_cluster: starts a PostgreSQL cluster of the test's own (scripts/pg_cluster.sh), stopped
# by the cleanup whatever happens, and sets own_dir and own_url. PGPASSFILE then holds its
# password and those of the file before; IDEM_TEST_PG_URL stays the test cluster's.
own_pg_cluster() {
  local main_url=$IDEM_TEST_PG_URL main_passfile=$PGPASSFILE exports
  exports=$("$_tests_root/../scripts/pg_cluster.sh" start) || fail "cannot start a cluster"
  eval "$exports"
  own_dir=$IDEM_TEST_PG_DIR own_url=$IDEM_TEST_PG_URL
  cat "$PGPASSFILE" "$main_passfile" >"$T/pgpass.both"
  chmod 0600 "$T/pgpass.both"
  export IDEM_TEST_PG_URL=$main_url PGPASSFILE=$T/pgpass.both
}

fail() {
  local i where=""
  for ((i = 1; i < ${#BASH_SOURCE[@]}; i++)); do
    [[ ${BASH_SOURCE[i]} == "${BASH_SOURCE[0]}" ]] || where+=" ${BASH_SOURCE[i]##*/}:${BASH_LINENO[i - 1]}"
  done
  echo "FAIL:$where: $*" >&2
  exit 1
}

idem() { "$IDEM_BIN" "$@"; }
helper() { printf '%s/%s' "$IDEM_HELPERS" "$1"; }
jsonq() { "$IDEM_HELPERS/jsonq" "$@"; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((10#$t / 1000)); }

# capture NAME CMD...: runs CMD with stdout in $T/NAME.out and stderr in $T/NAME.err; sets rc.
capture() {
  local name=$1
  shift
  _last=$name
  rc=0
  "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
}

# expect_rc WANT: the exit code of the last capture (or bg_wait).
expect_rc() {
  [[ $rc == "$1" ]] && return 0
  fail "exit code of '$_last': want $1, got $rc; its stderr: $(head -c 2000 "$T/$_last.err" 2>/dev/null | cat -v)"
}

assert_eq() {  # assert_eq WANT GOT WHAT
  [[ $1 == "$2" ]] || fail "$3: want '$(printf %s "$1" | cat -v)', got '$(printf %s "$2" | cat -v)'"
}

assert_same() {  # assert_same EXPECTED_FILE ACTUAL_FILE: byte-exact
  cmp -- "$1" "$2" >&2 || fail "$2 differs from $1 (want $(wc -c <"$1") bytes, got $(wc -c <"$2"))"
}

assert_bytes() {  # assert_bytes FILE PRINTF_FORMAT [ARG...]: FILE holds exactly these bytes
  local file=$1
  shift
  local expected=$T/.expected.$BASHPID  # one per process: a script may assert from subshells
  # shellcheck disable=SC2059
  printf "$@" >"$expected"
  cmp -s -- "$expected" "$file" ||
    fail "$file: want '$(cat -v "$expected" | head -c 500)', got '$(cat -v "$file" | head -c 500)'"
}

assert_empty() { [[ ! -s $1 ]] || fail "$1 should be empty, holds: $(head -c 500 "$1" | cat -v)"; }

assert_lines() {  # assert_lines N FILE: FILE has exactly N lines (missing file: 0)
  local n=0
  [[ ! -e $2 ]] || n=$(wc -l <"$2")
  ((n == $1)) || fail "$2: want $1 lines, got $n: $(head -c 500 "$2" 2>/dev/null | cat -v)"
}

# assert_idem_error [NAME]: the capture printed nothing on stdout and exactly one line on stderr,
# starting "idem: ".
assert_idem_error() {
  local name=${1:-$_last}
  assert_empty "$T/$name.out"
  local err=$T/$name.err
  [[ $(wc -l <"$err") == 1 && $(tail -c 1 "$err") == "" && $(head -c 6 "$err") == "idem: " ]] ||
    fail "stderr of '$name' should be one 'idem: ' line, got: '$(cat -v "$err")'"
}

assert_status() {  # assert_status KEY WORD
  local got
  got=$(idem status "$1") || fail "idem status '$1' exited $?"
  assert_eq "$2" "$got" "status of '$1'"
}

# wait_until DESCRIPTION CMD...: polls CMD until it succeeds; fails after $WAIT_SECONDS (20) s.
wait_until() {
  local what=$1
  shift
  local deadline=$((SECONDS + ${WAIT_SECONDS:-20}))
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out waiting until $what"
    sleep 0.02
  done
}

# pid_gone PID: the process no longer exists or is a zombie (reparented processes may stay
# zombies in containers whose init does not reap).
pid_gone() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  [[ ${stat%% *} == Z ]]
}

# track_pid_file FILE: cleanup kills the pid that a command under test writes into FILE.
track_pid_file() { _pid_files+=("$1"); }

# bg NAME CMD...: starts CMD in the background, stdout/stderr in $T/NAME.out/.err.
bg() {
  local name=$1
  shift
  # The pid must be idem's own (tests kill it), not a subshell running the idem function.
  [[ $1 != idem ]] || set -- "$IDEM_BIN" "${@:2}"
  "$@" >"$T/$name.out" 2>"$T/$name.err" &
  BG[$name]=$!
}
bg_pid() { echo "${BG[$1]}"; }
bg_exited() { pid_gone "${BG[$1]}"; }
bg_running() { ! pid_gone "${BG[$1]}"; }
# bg_wait NAME: waits (with the wait_until deadline) for NAME to exit; sets rc.
bg_wait() {
  wait_until "'$1' exits" bg_exited "$1"
  _last=$1
  rc=0
  wait "${BG[$1]}" || rc=$?
  unset "BG[$1]"
}

# release_fifo FIFO: unblocks a command waiting in `read x < FIFO`.
release_fifo() {
  timeout 20 sh -c 'printf "go\n" > "$1"' sh "$1" || fail "nobody read $1"
}

file_has() { [[ -e $1 ]] && grep -qF -- "$2" "$1"; }  # file_has FILE STRING
integrity_ok() {
  local got
  [[ -z ${IDEM_STORE:-} ]] || return 0  # PostgreSQL: the server keeps its own files consistent
  got=$(sqlite3 "${1:-$IDEM_DB}" 'PRAGMA integrity_check') || fail "sqlite3 could not read the store"
  assert_eq ok "$got" "PRAGMA integrity_check"
}
# fresh_store NAME: sets FRESH_STORE to the environment assignment that names a new, empty store
# of the backend under test: IDEM_DB=$T/NAME.db on SQLite, IDEM_STORE= a new schema's URL on
# PostgreSQL (IDEM_STORE wins over IDEM_DB; the schema is dropped with the test's).
fresh_store() {
  if [[ -z ${_pg_schema:-} ]]; then
    FRESH_STORE="IDEM_DB=$T/$1.db"
    return
  fi
  local schema=${_pg_schema}_${1//[^a-z0-9]/_}
  psql -qX "$IDEM_TEST_PG_URL" -c "CREATE SCHEMA $schema" || fail "cannot create schema $schema"
  FRESH_STORE="IDEM_STORE=$IDEM_TEST_PG_URL?options=-csearch_path%3D$schema"
}
status_is() { [[ $(idem status "$1") == "$2" ]]; }  # status_is KEY WORD

# interleave_pair OUT_TEXT ERR_TEXT: appends to the array `pieces` the interleave helper's pieces
# writing OUT_TEXT to stdout, then ERR_TEXT to stderr, and their bytes (the escapes \n, \0 ... as
# both printf and the helper read them) to $T/want.out, $T/want.err and $T/want.combined.
interleave_pair() {
  pieces+=("o:$1" "e:$2")
  # shellcheck disable=SC2059
  printf "$1" | tee -a "$T/want.out" >>"$T/want.combined"
  # shellcheck disable=SC2059
  printf "$2" | tee -a "$T/want.err" >>"$T/want.combined"
}

# await_abandoned KEY: KEY's owner was killed. A record without a lease (SQLite) has its pid
# judged on this host: abandoned at once. A lease (PostgreSQL; $IDEM_LEASE, short in these runs)
# is never overruled by what a host sees: abandoned once it has run out.
await_abandoned() {
  if [[ -n ${_pg_schema:-} ]]; then
    wait_until "'$1' is abandoned once its lease runs out" status_is "$1" abandoned
  else
    assert_status "$1" abandoned
  fi
}
