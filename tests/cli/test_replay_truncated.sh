#!/usr/bin/env bash
# A replay of a record whose stored output was cut at --max-output says so on stderr (one line,
# after the replayed bytes), unless -q or --quiet-replay; a complete record replays silently.
# idem show names the streams that lost bytes.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture first idem run -k big --max-output 1KiB -- sh -c 'head -c 3000 /dev/zero | tr "\0" x'
expect_rc 0
assert_eq 3000 "$(wc -c <"$T/first.out")" "live output of the first run"
assert_empty "$T/first.err"

capture replay idem run -k big --max-output 1KiB -- sh -c 'head -c 3000 /dev/zero | tr "\0" x'
expect_rc 0
assert_eq 1024 "$(wc -c <"$T/replay.out")" "replayed stdout"
assert_bytes "$T/replay.err" "idem: replayed output of key 'big' is truncated: only its first 1024 bytes were stored (--max-output)\n"

# show says the stored output was cut, on a line of its own, naming the stream that lost bytes.
capture show idem show big
expect_rc 0
grep -qx 'stdout: 1024 bytes' "$T/show.out" || fail "show's stdout line: $(cat "$T/show.out")"
grep -qx 'stderr: 0 bytes' "$T/show.out" || fail "show's stderr line: $(cat "$T/show.out")"
grep -qx 'truncated: only the first 1024 bytes were stored (--max-output); what stdout wrote after them was dropped' \
  "$T/show.out" || fail "show's truncated line: $(cat "$T/show.out")"
capture show_json idem show --json big
expect_rc 0
assert_eq '["stdout"]' "$(jq -c .truncated_streams "$T/show_json.out")" "show --json's truncated_streams"

capture quiet idem run -q -k big --max-output 1KiB -- sh -c 'head -c 3000 /dev/zero | tr "\0" x'
expect_rc 0
assert_eq 1024 "$(wc -c <"$T/quiet.out")" "replayed stdout with -q"
assert_empty "$T/quiet.err"

capture silent idem run --quiet-replay -k big --max-output 1KiB -- sh -c 'head -c 3000 /dev/zero | tr "\0" x'
expect_rc 0
assert_empty "$T/silent.out"
assert_empty "$T/silent.err"

# The stderr notice comes after the stored stderr, so a replay's own stderr stays whole.
capture e1 idem run -k mixed --max-output 10 -- sh -c 'echo 12345678901234 >&2'
capture e2 idem run -k mixed --max-output 10 -- sh -c 'echo 12345678901234 >&2'
expect_rc 0
assert_bytes "$T/e2.err" "1234567890idem: replayed output of key 'mixed' is truncated: only its first 10 bytes were stored (--max-output)\n"
capture show_mixed idem show mixed
grep -qx 'truncated: only the first 10 bytes were stored (--max-output); what stderr wrote after them was dropped' \
  "$T/show_mixed.out" || fail "show's truncated line for stderr: $(cat "$T/show_mixed.out")"
# Both streams over the cap (in whichever order idem reads them, each loses bytes): both named.
capture b1 idem run -k both --max-output 10 -- sh -c 'printf %020d 0; printf %020d 0 >&2'
expect_rc 0
capture show_both idem show both
grep -qx 'truncated: only the first 10 bytes were stored (--max-output); what stdout and stderr wrote after them was dropped' \
  "$T/show_both.out" || fail "show's truncated line for both: $(cat "$T/show_both.out")"
capture show_both_json idem show --json both
assert_eq '["stdout","stderr"]' "$(jq -c .truncated_streams "$T/show_both_json.out")" "both streams in truncated_streams"

# Not truncated: no notice.
capture s1 idem run -k small -- echo hi
capture s2 idem run -k small -- echo hi
expect_rc 0
assert_bytes "$T/s2.out" 'hi\n'
assert_empty "$T/s2.err"
capture show_small idem show --json small
assert_eq '[]' "$(jq -c .truncated_streams "$T/show_small.out")" "no truncated_streams"
