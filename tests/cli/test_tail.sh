#!/usr/bin/env bash
# SPEC §10, following a running attempt (`idem tail`): a follower sees each byte while the
# command runs, stdout on stdout and stderr on stderr, and ends with the attempt's exit code; one
# that comes late, or after the end, gets every byte from the first; `idem tail` without -f of a
# running key prints what is there and exits 75; a follower of an attempt whose owner was killed
# ends with 69's message, and gc takes away what that attempt published. Then eight followers
# joining a 1 GiB run at random points (on PostgreSQL, one on a second simulated host) each get
# bytes whose SHA-256 is the stored output's, and the run's peak RSS stays within 32 MiB. And
# `idem run --pty` makes Python's buffered print live.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
if [[ -n ${_pg_schema:-} ]]; then
  source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/hosts_lib.sh"
  host_new far
fi

live_rows() {  # what the store holds of live output, any attempt: rows, or SQLite's files
  if [[ -n ${_pg_schema:-} ]]; then
    psql -qAtX "$IDEM_STORE" -c 'SELECT count(*) FROM idem_live_output'
  else
    find "$IDEM_DB.live" -type f 2>/dev/null | wc -l
  fi
}

# A follower sees the bytes as they are written, in order, and the exit code at the end.
mkfifo "$T/go1" "$T/go2" "$T/go3"
bg run idem run -k f1 -- sh -c \
  'printf "one\n"; printf "err-one\n" >&2; read x < "$1"; printf "two\n"; read x < "$2"
   printf "three\n" >&2; exit 3' sh "$T/go1" "$T/go2"
shows() {  # shows KEY TEXT: what `idem tail KEY` prints of it so far holds TEXT
  "$IDEM_BIN" tail "$1" >"$T/peek" 2>/dev/null || true
  file_has "$T/peek" "$2"
}
shows_err() {  # shows_err KEY TEXT: what `idem tail KEY` prints of it on stderr holds TEXT
  "$IDEM_BIN" tail "$1" >/dev/null 2>"$T/peek-err" || true
  file_has "$T/peek-err" "$2"
}
# stdout's and stderr's first lines may reach the store in two segments, 20 ms apart.
wait_until "the first line is live" shows f1 one
wait_until "the first stderr line is live" shows_err f1 err-one
capture running idem tail f1
expect_rc 75
assert_bytes "$T/running.out" 'one\n'
file_has "$T/running.err" "err-one" || fail "tail of a running key shows no stderr"
file_has "$T/running.err" "idem: key 'f1' is still running (attempt 1)" ||
  fail "tail of a running key does not say it runs: $(cat "$T/running.err")"
bg follow idem tail -f f1
wait_until "the follower printed the first line" file_has "$T/follow.out" one
release_fifo "$T/go1"
wait_until "the follower printed the second line while the command runs" file_has "$T/follow.out" two
bg_running run || fail "the command ended before its second gate"
release_fifo "$T/go2"
bg_wait follow
expect_rc 3
bg_wait run
expect_rc 3
assert_bytes "$T/follow.out" 'one\ntwo\n'
assert_bytes "$T/follow.err" 'err-one\nthree\n'
idem show f1 --stdout >"$T/stored.out"
assert_same "$T/stored.out" "$T/follow.out"
assert_eq 0 "$(live_rows)" "live rows once the attempt ended"

# `idem each`'s handlers are followed the same way, by their records' keys.
mkfifo "$T/each-gate"
bg each sh -c 'printf "%s\n" "{\"id\":\"m1\"}" | "$1" each --key-field /id -- sh -c \
  "echo handling; read x < \"\$1\"; echo handled" sh "$2"' sh "$IDEM_BIN" "$T/each-gate"
wait_until "each's handler is live" shows m1 handling
bg follow_each idem tail -f m1
wait_until "the follower of each's handler printed its line" file_has "$T/follow_each.out" handling
release_fifo "$T/each-gate"
bg_wait follow_each
expect_rc 0
assert_bytes "$T/follow_each.out" 'handling\nhandled\n'
bg_wait each
expect_rc 0

# --pty: a program that buffers its output when piped (Python's print) shows it live through
# the terminal; the stored output is what the terminal received.
mkfifo "$T/py-gate"
bg py idem run -k py --pty -- python3 -c \
  'import sys; print("hello from python"); open(sys.argv[1]).read(); print("bye")' "$T/py-gate"
wait_until "python's line is live through the terminal" shows py "hello from python"
bg_running py || fail "python ended before its gate"
release_fifo "$T/py-gate"
bg_wait py
expect_rc 0
idem show py --stdout >"$T/py.stored"
assert_bytes "$T/py.stored" 'hello from python\r\nbye\r\n'
assert_same "$T/py.stored" "$T/py.out"

# A follower of a key that is not running prints the stored output and exits with its code.
capture ended idem tail -f f1
expect_rc 3
assert_bytes "$T/ended.out" 'one\ntwo\n'
assert_bytes "$T/ended.err" 'err-one\nthree\n'
capture ended_once idem tail f1
expect_rc 3
assert_same "$T/ended.out" "$T/ended_once.out"
capture none idem tail -f no-such-key
expect_rc 1
assert_idem_error
capture bad idem tail -f ''
expect_rc 64

# The owner killed mid-run: the follower ends with 69's message; gc drops what it published.
# (A short lease: on PostgreSQL the owner counts as gone once it runs out.)
bg victim env IDEM_LEASE=2s "$IDEM_BIN" run -k f2 -- sh -c 'echo started; read x < "$1"' sh "$T/go3"
wait_until "f2 started" shows f2 started
bg follow2 idem tail -f f2
wait_until "the follower of f2 printed its line" file_has "$T/follow2.out" started
kill -KILL "$(bg_pid victim)"
WAIT_SECONDS=60 bg_wait follow2
expect_rc 69
file_has "$T/follow2.err" "died mid-run and its outcome is unknown" ||
  fail "the follower of a killed attempt says: $(cat "$T/follow2.err")"
assert_bytes "$T/follow2.out" 'started\n'
[[ $(live_rows) -gt 0 ]] || fail "the killed attempt published nothing"
capture gc idem gc
expect_rc 0
file_has "$T/gc.out" "dropped the live output left by 1 attempt" ||
  fail "gc says: $(cat "$T/gc.out")"
assert_eq 0 "$(live_rows)" "live rows after gc"

# SQLite: a live output folder planted beside the store (a link to another folder, or one others
# can write) is neither written, read nor cleaned: the run is unaffected, a follower is told.
if [[ -z ${_pg_schema:-} ]]; then
  mkdir "$T/victim"
  printf 'keep me\n' >"$T/victim/0123456789abcdef0123456789abcdef.1"
  mv "$IDEM_DB.live" "$T/old.live" 2>/dev/null || true
  ln -s "$T/victim" "$IDEM_DB.live"
  capture planted idem run -k planted -- echo through
  expect_rc 0
  assert_bytes "$T/planted.out" 'through\n'
  capture planted_gc idem gc
  expect_rc 74
  assert_bytes "$T/victim/0123456789abcdef0123456789abcdef.1" 'keep me\n'
  file_has "$T/planted_gc.err" "is not a folder (no link) of this user's" ||
    fail "gc on a planted folder says: $(cat "$T/planted_gc.err")"
  rm "$IDEM_DB.live"
  mkdir -m 0777 "$IDEM_DB.live"
  chmod 0777 "$IDEM_DB.live"
  capture open_folder idem run -k planted2 -- echo through
  expect_rc 0
  [[ -z $(ls -A "$IDEM_DB.live") ]] || fail "a file was written in a folder others can write"
  rmdir "$IDEM_DB.live"
fi

# Eight followers join a 1 GiB run at random points: before one of the eight 2 MiB parts that
# fill its 16 MiB capture, each behind a gate; then the rest of the GiB, and a last gate where
# the run's peak RSS is read, once every byte has been written.
gen=$(helper genbytes)
parts=8
gates=()
for ((i = 1; i <= parts; i++)); do
  mkfifo "$T/part$i"
  gates+=("$T/part$i")
done
mkfifo "$T/end"
bg big idem run -k big -- sh -c \
  'gen=$1; end=$2; shift 2; n=0
   for g in "$@"; do read x < "$g"; n=$((n + 1)); "$gen" 2097152 $n; done
   "$gen" 1056964608 9; read x < "$end" || true' sh "$gen" "$T/end" "${gates[@]}"
wait_until "the 1 GiB run is claimed" status_is big running
joins=()
for ((f = 1; f <= 8; f++)); do joins+=($((RANDOM % parts + 1))); done
for ((i = 1; i <= parts; i++)); do
  for ((f = 1; f <= 8; f++)); do
    ((joins[f - 1] == i)) || continue
    if [[ -n ${_pg_schema:-} && $f == 8 ]]; then
      bg_on_host far "follower$f" idem tail -f big  # another host, through the server alone
    else
      bg "follower$f" idem tail -f big
    fi
  done
  release_fifo "$T/part$i"
done
# Opening the last gate for writing waits until the command reads it: every byte is written.
exec 3>"$T/end"
peak=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$(bg_pid big)/status")
exec 3>&-
WAIT_SECONDS=120 bg_wait big
expect_rc 0
capture stored idem tail big
expect_rc 0
file_has "$T/stored.err" "is truncated: only its first 16777216 bytes were stored" ||
  fail "the stored output of the 1 GiB run is not the 16 MiB cap: $(cat "$T/stored.err")"
want=$(sha256sum <"$T/stored.out")
for ((f = 1; f <= 8; f++)); do
  WAIT_SECONDS=120 bg_wait "follower$f"
  expect_rc 0
  assert_eq "$want" "$(sha256sum <"$T/follower$f.out")" \
    "SHA-256 of follower $f (joined before part ${joins[f - 1]})"
done
# Peak memory of the run: its capture (16 MiB) and what it streams, nothing per follower.
# (A sanitizer's shadow memory and quarantine are its own: the bound holds for the plain build.)
limit=$((32 * 1024))
if [[ -z ${IDEM_SANITIZE:-} && -z ${ASAN_OPTIONS:-} && -z ${TSAN_OPTIONS:-} ]]; then
  ((peak <= limit)) || fail "peak RSS of the 1 GiB run: ${peak} KiB, over ${limit} KiB"
fi
echo "1 GiB run with 8 followers (joined before parts ${joins[*]}): peak RSS ${peak} KiB"
