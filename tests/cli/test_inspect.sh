#!/usr/bin/env bash
# ls, show, status, rm: listing and filtering, one record in full, one-word status, deletion.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture a idem run -k k-a -- sh -c 'echo x >> "$1"; printf "out-a\n"; printf "err-a" >&2' sh "$T/count-a"
expect_rc 0
capture b idem run -k k-b -- sh -c 'echo out-b; exit 3'
expect_rc 3
capture c idem run -k k-c -- true
expect_rc 0
capture d idem run -k other-d -- true
expect_rc 0

# Human table: header, newest first.
capture ls idem ls
expect_rc 0
read -r -a header <"$T/ls.out"
assert_eq "KEY STATUS EXIT ATTEMPT STARTED DURATION EXPIRES" "${header[*]}" "ls header"
awk 'NR > 1 { print $1, $2, $3, $4 }' "$T/ls.out" >"$T/ls.rows"
assert_bytes "$T/ls.rows" 'other-d succeeded 0 1\nk-c succeeded 0 1\nk-b failed 3 1\nk-a succeeded 0 1\n'

# JSON Lines: every documented field, ISO-8601 UTC times.
capture lsj idem ls --json
expect_rc 0
assert_lines 4 "$T/lsj.out"
jsonq /key <"$T/lsj.out" >"$T/lsj.keys"
assert_bytes "$T/lsj.keys" 'other-d\nk-c\nk-b\nk-a\n'
fields="attempt duration_ms exit_code expires_at fingerprint finished_at key kind output_bytes owner signal started_at status timed_out truncated"
jsonq --keys <"$T/lsj.out" | while read -r -a keys; do
  for f in $fields; do
    [[ " ${keys[*]} " == *" $f "* ]] || fail "ls --json lacks field $f: ${keys[*]}"
  done
done
iso='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$'
jsonq /key /status /exit_code /signal /timed_out /attempt /kind /truncated <"$T/lsj.out" | grep k-b >"$T/b.fields"
assert_bytes "$T/b.fields" 'k-b\tfailed\t3\tnull\tfalse\t1\trun\tfalse\n'
IFS=$'\t' read -r started finished expires duration fp host pid < <(
  jsonq /started_at /finished_at /expires_at /duration_ms /fingerprint /owner/host /owner/pid <"$T/lsj.out" | tail -n 1)
[[ $started =~ $iso && $finished =~ $iso && $expires =~ $iso ]] ||
  fail "times are not ISO-8601 UTC: $started / $finished / $expires"
[[ $started < $expires && ! $finished < $started ]] || fail "times out of order: $started $finished $expires"
[[ $duration =~ ^[0-9]+$ ]] || fail "duration_ms is not an integer: $duration"
[[ $fp =~ ^[0-9a-f]{64}$ ]] || fail "fingerprint is not 64 hex digits: $fp"
assert_eq "$(uname -n)" "$host" "owner host"
[[ $pid =~ ^[0-9]+$ ]] || fail "owner pid is not a number: $pid"

# Filters.
idem ls --json --status failed | jsonq /key >"$T/f1"
assert_bytes "$T/f1" 'k-b\n'
idem ls --json --status failed --status succeeded | jsonq /key >"$T/f2"
assert_bytes "$T/f2" 'other-d\nk-c\nk-b\nk-a\n'
idem ls --json --prefix k- | jsonq /key >"$T/f3"
assert_bytes "$T/f3" 'k-c\nk-b\nk-a\n'
idem ls --json --limit 2 | jsonq /key >"$T/f4"
assert_bytes "$T/f4" 'other-d\nk-c\n'
idem ls --json --prefix k- --status succeeded --limit 1 | jsonq /key >"$T/f5"
assert_bytes "$T/f5" 'k-c\n'
idem ls --json --prefix nothing- >"$T/f6"
assert_empty "$T/f6"

# show: human and JSON.
capture show idem show k-a
expect_rc 0
grep -qx 'key: k-a' "$T/show.out" || fail "show lacks 'key: k-a': $(cat "$T/show.out")"
grep -qx 'status: succeeded' "$T/show.out" || fail "show lacks 'status: succeeded': $(cat "$T/show.out")"
capture showj idem show k-a --json
expect_rc 0
assert_eq "k-a	succeeded	0" "$(jsonq /key /status /exit_code <"$T/showj.out")" "show --json key/status/exit_code"
jsonq /stdout_b64 <"$T/showj.out" | base64 -d >"$T/a.stdout"
assert_bytes "$T/a.stdout" 'out-a\n'
jsonq /stderr_b64 <"$T/showj.out" | base64 -d >"$T/a.stderr"
assert_bytes "$T/a.stderr" 'err-a'
assert_eq '["sh","-c","echo x >> \"$1\"; printf \"out-a\\n\"; printf \"err-a\" >&2","sh","'"$T"'/count-a"]' \
  "$(jsonq /request/argv <"$T/showj.out")" "request argv in show --json"
assert_eq "$T" "$(jsonq /request/cwd <"$T/showj.out")" "request cwd in show --json"
# A run holds no lease (its owner's pid tells), and the attempt token is never shown.
grep -q '"lease_expires_at":null' "$T/showj.out" || fail "show --json lacks a null lease_expires_at"
if grep -qi token "$T/showj.out"; then fail "show --json shows the attempt token"; fi
# A command's outcome answers no HTTP request: no stored response.
assert_eq null "$(jsonq /response <"$T/showj.out")" "show --json response of a run"
capture req idem show k-a --request
expect_rc 0
assert_eq "$(jsonq /request/argv <"$T/showj.out")" "$(jsonq /argv <"$T/req.out")" "show --request argv"
capture missing idem show nope
expect_rc 1
assert_idem_error

# status words.
assert_status nope none
assert_status k-a succeeded
assert_status k-b failed
capture st-missing idem status nope
expect_rc 0

# rm: the next attempt runs again.
capture rm1 idem rm k-a
expect_rc 0
assert_status k-a none
capture a2 idem run -k k-a -- sh -c 'echo x >> "$1"; printf "out-a\n"; printf "err-a" >&2' sh "$T/count-a"
expect_rc 0
assert_lines 2 "$T/count-a"
capture rm2 idem rm nope
expect_rc 1
capture rm3 idem rm k-c nope
expect_rc 1
assert_status k-c none
capture rm4 idem rm k-b other-d
expect_rc 0
assert_status k-b none
assert_status other-d none

# A running record: listed as running; rm needs --force.
mkfifo "$T/gate"
bg hold idem run -k k-run -- sh -c 'read x < "$1"' sh "$T/gate"
wait_until "k-run is claimed" status_is k-run running
idem ls --json --status running | jsonq /key /status /exit_code /finished_at >"$T/running"
assert_bytes "$T/running" 'k-run\trunning\tnull\tnull\n'
capture rm5 idem rm k-run
expect_rc 75
assert_idem_error
assert_status k-run running
capture rm6 idem rm k-run --force
expect_rc 0
assert_status k-run none
release_fifo "$T/gate"
bg_wait hold
