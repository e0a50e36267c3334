#!/usr/bin/env bash
# A record's detail page (`idem serve --ui`) reads only the bytes it shows: a 64 MiB output must
# not raise the daemon's peak memory by more than 16 MiB on its detail page or its downloads, nor
# by more than 48 MiB on eight views at once; the download (/ui/output) answers exactly the stored bytes of
# either stream. And a long history: the newest attempts a page, the older ones counted.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ui_lib.sh"

failing_hook_config
big=$((64 * 1024 * 1024))
# stdout: 64 MiB of every byte value; stderr: a line, 1 MiB, a line, interleaved with stdout.
gen=$(helper genbytes)
idem run -k big --max-output 100MiB -- sh -c \
  "echo head-of-stdout; echo head-of-stderr >&2; '$gen' $big 1; '$gen' 1048576 2 >&2; echo tail >&2" \
  >"$T/run.out" 2>"$T/run.err"
idem show big --stdout >"$T/stdout.bin"
idem show big --stderr >"$T/stderr.bin"
assert_eq $((big + 15)) "$(stat -c %s "$T/stdout.bin")" "stored stdout"

slack=1
if [[ ${IDEM_SANITIZE:-} == address || ${IDEM_SANITIZE:-} == 1 || -n ${ASAN_OPTIONS:-} ]]; then
  # AddressSanitizer's redzones and shadow widen every allocation, and its quarantine keeps freed
  # memory (256 MiB by default: every window of a download): a small quarantine keeps the peak
  # about what the code holds.
  slack=4
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"
fi
ui_start "$T/serve.json"
pid=$(bg_pid "$DAEMON")
key_q=$(printf '%s' big | jq -sRr @uri)
# Warm up on a small record, eight at once (the workers' threads, their store connections), then
# take the peak as the baseline: what a view of the big record adds is then its own.
idem run -k small -- echo small >/dev/null
assert_eq 200 "$(ui_fetch /ui "$T/list.html")" "the list"
views() {  # views KEY: eight views of KEY's detail at once, each page kept as $T/viewN.html
  local i
  for i in 1 2 3 4 5 6 7 8; do bg "view$i" ui_fetch "/ui/record?key=$1" "$T/view$i.html"; done
  for i in 1 2 3 4 5 6 7 8; do
    bg_wait "view$i"
    expect_rc 0
  done
}
views small
base=$(rss_kib "$pid" VmHWM)
# Under AddressSanitizer every allocation carries redzones and freed memory waits in a
# quarantine: the bounds are four times as wide there (before the fix a view took over 128 MiB).

assert_eq 200 "$(ui_fetch "/ui/record?key=$key_q" "$T/detail.html")" "the detail"
file_has "$T/detail.html" 'head-of-stdout' || fail "the detail shows no stdout"
file_has "$T/detail.html" 'head-of-stderr' || fail "the detail shows no stderr"
file_has "$T/detail.html" "$((big + 15 - 65536)) more bytes not shown" ||
  fail "the detail does not say how much stdout it leaves out"
file_has "$T/detail.html" "/ui/output?key=big&amp;stream=stdout" || fail "no download link"
(( $(stat -c %s "$T/detail.html") < 1024 * 1024 )) || fail "the detail page is $(stat -c %s "$T/detail.html") bytes"
one=$(rss_kib "$pid" VmHWM)
echo "peak RSS: $base KiB at rest, +$((one - base)) KiB for one detail view" >&2
(( one - base < 16 * 1024 * slack )) || fail "one detail view raised the daemon's peak RSS by $(( (one - base) / 1024 )) MiB"

# Eight at once.
views "$key_q"
for i in 1 2 3 4 5 6 7 8; do
  # The same page but for the CSRF token of each one's session.
  cmp -s <(sed 's/name="csrf" value="[0-9a-f]*"//g' "$T/view$i.html") \
    <(sed 's/name="csrf" value="[0-9a-f]*"//g' "$T/detail.html") || fail "view $i differs from the first"
done
eight=$(rss_kib "$pid" VmHWM)
echo "peak RSS: +$((eight - base)) KiB for eight views at once" >&2
# Each view at once holds its page (a few hundred KiB), pieces of the output and its pooled store
# connection's page cache (2 MiB at most): a few MiB each, where reading the output whole would
# take more than 128 MiB each.
(( eight - base < 48 * 1024 * slack )) || fail "eight detail views raised the daemon's peak RSS by $(( (eight - base) / 1024 )) MiB"

# The downloads: exactly the stored bytes, streamed.
for s in stdout stderr; do
  assert_eq 200 "$(ui_fetch "/ui/output?key=$key_q&stream=$s" "$T/got.$s")" "the $s download"
  assert_eq "$(sha256sum <"$T/$s.bin")" "$(sha256sum <"$T/got.$s")" "sha256 of the $s download"
done
down=$(rss_kib "$pid" VmHWM)
echo "peak RSS: +$((down - eight)) KiB for both downloads" >&2
(( down - eight < 16 * 1024 * slack )) || fail "the downloads raised the daemon's peak RSS by $(( (down - eight) / 1024 )) MiB"
assert_eq 400 "$(ui_fetch "/ui/output?key=$key_q&stream=both" "$T/bad.html")" "a bad stream"
assert_eq 404 "$(ui_fetch "/ui/output?key=nothing&stream=stdout" "$T/none.html")" "no record"
stop_daemon
rm -f "$T/stdout.bin" "$T/stderr.bin" "$T"/got.* "$T"/view*.html
idem rm big >/dev/null

# --- A long history: kept to --keep-attempts, a page at a time -------------------------------------
keep=60
for i in $(seq 1 $((keep + 5))); do
  IDEM_KEEP_ATTEMPTS=$keep idem run -k flaky -- false 2>/dev/null || true
done
ui_start "$T/serve.json" --keep-attempts "$keep"
assert_eq 200 "$(ui_fetch "/ui/record?key=flaky" "$T/flaky.html")" "the detail of a long history"
rows=$(grep -o '<tr><td>[0-9]*</td><td>run</td>' "$T/flaky.html" | wc -l)
assert_eq 50 "$rows" "attempts on the first page"
file_has "$T/flaky.html" '15 earlier attempts, 5 of them no longer kept' ||
  fail "the detail does not count the older attempts: $(grep -o 'earlier-attempts">[^<]*' "$T/flaky.html")"
file_has "$T/flaky.html" 'attempts_before=16' || fail "no link to the older attempts"
assert_eq 200 "$(ui_fetch "/ui/record?key=flaky&attempts_before=16" "$T/older.html")" "older attempts"
rows=$(grep -o '<tr><td>[0-9]*</td><td>run</td>' "$T/older.html" | wc -l)
assert_eq 10 "$rows" "attempts on the older page"
! file_has "$T/older.html" 'id="older-attempts"' || fail "a link past the oldest kept attempt"
# The attempts come below the request and the output.
req_at=$(grep -bo '<h2>Request</h2>' "$T/flaky.html" | cut -d: -f1)
att_at=$(grep -bo '<h2>Attempts</h2>' "$T/flaky.html" | cut -d: -f1)
(( req_at < att_at )) || fail "the attempts come before the request"
stop_daemon
