#!/usr/bin/env bash
# Records written by `idem serve` are addressable by every command (a 255-byte key under its
# hook's path, PATH#KEY, is longer than a key: ls, show, status and rm all take it), and an answer
# cut at the store's 16 MiB output cap says so with Idem-Output-Truncated, first and replayed.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

cat >"$T/handler.sh" <<'EOF2'
#!/bin/sh
case $IDEM_HEADER_X_MODE in
  big) head -c 17000000 /dev/zero | tr '\0' 'a' ;;
  cap) head -c 16777216 /dev/zero | tr '\0' 'b' ;;
  *) printf 'ok\n' ;;
esac
EOF2
chmod +x "$T/handler.sh"
long_path=/hooks/$(printf 'p%.0s' {1..248})  # 255 bytes, the longest a config accepts
cat >"$T/serve.json" <<EOF2
{"hooks": [
  {"path": "/hooks/x", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}},
  {"path": "$long_path", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}}
]}
EOF2
start_daemon "$T/serve.json"

# --- 255-byte keys: PATH#KEY names that every command takes -----------------------------------
key=$(printf 'k%.0s' {1..253})é  # 253 + 2 bytes: the longest key
assert_eq 255 "$(printf %s "$key" | wc -c)" "bytes of the key"
for path in /hooks/x "$long_path"; do
  name="$path#$key"
  post "$path" 'body' "X-Key: $key"
  expect_http 200
  # ls prints the name; each command takes what ls prints.
  idem ls --json | jsonq /key >"$T/keys"
  grep -qxF -- "$name" "$T/keys" || fail "idem ls does not list $name"
  listed=$(grep -xF -- "$name" "$T/keys")
  capture status idem status "$listed"
  expect_rc 0
  assert_eq succeeded "$(cat "$T/status.out")" "status of the ${#name}-byte name"
  capture show idem show "$listed"
  expect_rc 0
  grep -qxF -- "key: $name" "$T/show.out" || fail "idem show does not print the name: $(head -c 600 "$T/show.out")"
  capture show idem show "$listed" --stdout
  expect_rc 0
  assert_bytes "$T/show.out" 'ok\n'
  capture show idem show "$listed" --request
  expect_rc 0
  assert_eq "$key" "$(jsonq /headers/X-Key <"$T/show.out")" "stored X-Key"
  # The stored answer a duplicate gets: its status and headers (its body is the stdout).
  capture show idem show "$listed" --json
  expect_rc 0
  assert_eq '200	[["Content-Type","text/plain; charset=utf-8"]]' \
    "$(jsonq /response/status /response/headers <"$T/show.out")" "show --json response"
  capture rm idem rm "$listed"
  expect_rc 0
  assert_status "$listed" none
  # Gone, so it runs again.
  post "$path" 'body' "X-Key: $key"
  expect_http 200
  assert_no_header Idempotent-Replayed
done
# Past the limits, still a usage error naming the problem.
capture toolong idem status "/hooks/x#${key}k"
expect_rc 64
assert_idem_error
file_has "$T/toolong.err" 'is 256 bytes; the limit is 255' || fail "message: $(cat "$T/toolong.err")"
capture toolong idem show "${long_path}p#$key"
expect_rc 64
assert_idem_error

# --- output over the cap: the answer says it was cut ------------------------------------------
post /hooks/x 'big' 'X-Key: big' 'X-Mode: big'
expect_http 200
assert_header Idem-Output-Truncated true
assert_no_header Idempotent-Replayed
assert_eq 16777216 "$(wc -c <"$T/resp.body")" "bytes of the cut answer"
post /hooks/x 'big' 'X-Key: big' 'X-Mode: big'
expect_http 200
assert_header Idempotent-Replayed true
assert_header Idem-Output-Truncated true
assert_eq 16777216 "$(wc -c <"$T/resp.body")" "bytes of the replayed cut answer"
# Exactly at the cap is whole: no such header.
post /hooks/x 'cap' 'X-Key: cap' 'X-Mode: cap'
expect_http 200
assert_no_header Idem-Output-Truncated
assert_eq 16777216 "$(wc -c <"$T/resp.body")" "bytes of the answer at the cap"
post /hooks/x 'cap' 'X-Key: cap' 'X-Mode: cap'
assert_header Idempotent-Replayed true
assert_no_header Idem-Output-Truncated
post /hooks/x 'small' 'X-Key: small'
assert_no_header Idem-Output-Truncated
stop_daemon
integrity_ok
