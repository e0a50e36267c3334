#!/usr/bin/env bash
# SPEC §10 over HTTP: GET /ui/attempts/{name}/output on the page's listener. A client that cuts
# its connection 10 times while the command runs and comes back with Last-Event-ID each time gets
# every byte of both streams exactly once (0 gaps, 0 repeated bytes), equal to what the store
# keeps, and the `end` event with the exit code; the stream asks for the page's credential (401),
# refuses a bad Last-Event-ID (400) and a record that does not exist (404), resumes from an offset
# inside a chunk, and serves at most 8 streams at once (503 with Retry-After).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ui_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"
use_node_packages

failing_hook_config
ui_start "$T/serve.json"

# A command in 14 parts, each behind a gate: a line on stdout, a line on stderr, then a burst.
gates=()
for ((i = 1; i <= 13; i++)); do
  mkfifo "$T/gate$i"
  gates+=("$T/gate$i")
done
bg run idem run -k ev -- sh -c \
  'n=0; for g in "" "$@"; do
     [ -z "$g" ] || read x < "$g"; n=$((n + 1))
     echo "out $n"; echo "err $n" >&2; seq 1 $((n * 300)) | sed "s/^/burst $n /"
   done; exit 7' sh "${gates[@]}"
wait_until "ev runs" status_is ev running
url="$UI/ui/attempts/ev/output"

# The credential, a bad id, an unknown record.
assert_eq 401 "$(curl -sS -o /dev/null -w '%{http_code}' "$url")" "no credential"
assert_eq 400 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $UI_TOKEN" \
  -H 'Last-Event-ID: x1' "$url")" "a Last-Event-ID that is no offset"
assert_eq 404 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $UI_TOKEN" \
  "$UI/ui/attempts/no-such-key/output")" "no record"

assert_eq 400 "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $UI_TOKEN" \
  "$url?attempt=x")" "an attempt that is no number"
# Another attempt than the key's: the stream ends at once as `replaced`.
curl -sS -H "Authorization: Bearer $UI_TOKEN" "$url?attempt=2" >"$T/other.txt"
grep -q '"outcome":"replaced"' "$T/other.txt" || fail "attempt 2 of ev: $(cat "$T/other.txt")"

# Eight streams at once (held open by the running command), then a ninth: 503.
for i in 1 2 3 4 5 6 7 8; do
  bg "held$i" curl -sSN -H "Authorization: Bearer $UI_TOKEN" "$url"
done
for i in 1 2 3 4 5 6 7 8; do wait_until "stream $i is open" file_has "$T/held$i.out" 'event: stdout'; done
capture ninth curl -sS -D "$T/ninth.head" -o /dev/null -w '%{http_code}' \
  -H "Authorization: Bearer $UI_TOKEN" "$url"
assert_eq 503 "$(cat "$T/ninth.out")" "a ninth stream"
grep -qi '^Retry-After: 1' "$T/ninth.head" || fail "the 503 has no Retry-After: $(cat "$T/ninth.head")"
for i in 1 2 3 4 5 6 7 8; do kill "$(bg_pid "held$i")"; done
for i in 1 2 3 4 5 6 7 8; do bg_wait "held$i"; done

# Ten cuts while it runs, each followed by the next gate: no gap, no repeated byte.
capture client node "$node_dir/sse_client.js" "$url?attempt=1" "$UI_TOKEN" 10 "$T/got.out" "$T/got.err" \
  "${gates[@]}"
expect_rc 0
bg_wait run
expect_rc 7
summary=$(cat "$T/client.out")
echo "client: $summary"
assert_eq 10 "$(jsonq /reconnects <<<"$summary")" "reconnects"
assert_eq 0 "$(jsonq /gaps <<<"$summary")" "gaps"
assert_eq 0 "$(jsonq /repeats <<<"$summary")" "repeated bytes"
assert_eq 7 "$(jsonq /end/exit_code <<<"$summary")" "the end event's exit code"
assert_eq failed "$(jsonq /end/outcome <<<"$summary")" "the end event's outcome"
idem show ev --stdout >"$T/stored.out"
idem show ev --stderr >"$T/stored.err"
assert_same "$T/stored.out" "$T/got.out"
assert_same "$T/stored.err" "$T/got.err"
total=$(($(stat -c %s "$T/stored.out") + $(stat -c %s "$T/stored.err")))
assert_eq "$total" "$(jsonq /bytes <<<"$summary")" "the last id is the output's size"

# From an offset inside a chunk, once it has ended: the rest, from that byte on.
curl -sS -H "Authorization: Bearer $UI_TOKEN" -H 'Last-Event-ID: 3' "$url" >"$T/resume.txt"
first=$(grep -m1 '^data: ' "$T/resume.txt" | cut -c7- | base64 -d | head -c 2)
assert_eq " 1" "$first" "the first bytes after offset 3 ('out 1' from its 4th byte)"
file_has "$T/resume.txt" 'event: end' || fail "no end event after the resume"
stop_daemon
