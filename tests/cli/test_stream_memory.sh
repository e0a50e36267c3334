#!/usr/bin/env bash
# A capture at its cap is held once while its outcome is stored, replayed or shown: the output
# is written into the store and read back by incremental blob I/O, never copied whole, so the
# peak memory of a stream through the cap, of its replay and of `end --stdout-file` is the cap's
# plus what idem takes anyway (memory is the measure: time varies too much on shared machines).
tests_dir=${IDEM_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
source "$tests_dir/cli/lib.sh"
[[ -x /usr/bin/time ]] || skip "needs GNU time"
# AddressSanitizer keeps freed memory in quarantine: peaks mean nothing there.
! grep -qa 'libasan' "$IDEM_BIN" || skip "an ASan build"

# rss_kib CMD...: peak RSS (KiB) of CMD, its stdout discarded.
rss_kib() { /usr/bin/time -f %M -o "$T/rss" "$@" >/dev/null && cat "$T/rss"; }
cap_kib=$((8 * 1024))
base=$(rss_kib "$IDEM_BIN" run -q -k base -- true)
# Up to half the cap again for the allocator, SQLite's page cache and the pipe's reads; a second
# copy of the capture (the store building the row, a decoded copy) would pass it.
limit=$((base + cap_kib * 3 / 2))
check() {  # check WHAT KIB
  echo "$1: peak RSS $2 KiB (idem run -- true: $base KiB, limit $limit KiB)"
  (($2 < limit)) || fail "$1 peaks at $2 KiB, more than $limit KiB"
}

stream=$(rss_kib "$IDEM_BIN" run -q -k stream --max-output 8MiB -- head -c 64M /dev/zero)
check "a 64 MiB stream through an 8 MiB cap" "$stream"
assert_eq "true 8388608" "$(idem show stream --json | jsonq /truncated /output_bytes | tr '\t' ' ')" \
  "stored head"
check "its replay" "$(rss_kib "$IDEM_BIN" run -q -k stream --max-output 8MiB -- head -c 64M /dev/zero)"
check "idem show --stdout" "$(rss_kib "$IDEM_BIN" show --stdout stream)"
idem show --stdout stream | cmp -s - <(head -c 8M /dev/zero) || fail "the stored head is not 8 MiB of zeros"

# Both streams, interleaved, at the cap.
mixed() { for _ in 1 2 3 4 5 6 7 8; do head -c 1M /dev/zero; echo warn >&2; done; }
export -f mixed
check "8 MiB of stdout between stderr lines" \
  "$(rss_kib "$IDEM_BIN" run -q -k mixed --max-output 8MiB -- bash -c mixed 2>/dev/null)"

# end --stdout-file stores its file by the same path.
head -c 8M /dev/urandom >"$T/file"
capture b idem begin -k file --owner-pid $$
expect_rc 0
check "idem end --stdout-file of 8 MiB" "$(rss_kib "$IDEM_BIN" end -k file --owner-pid $$ --stdout-file "$T/file")"
idem show --stdout file >"$T/file.out"
assert_same "$T/file" "$T/file.out"
integrity_ok
