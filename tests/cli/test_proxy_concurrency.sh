#!/usr/bin/env bash
# 32 concurrent duplicates through the proxy (SPEC §7, §8.1): exactly one reaches the upstream;
# while it is in flight the others get 409 with Retry-After; once it is stored every retry gets
# its bytes with Idempotent-Replayed.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"

start_upstream up
start_serve --upstream "$UURL" --max-connections 64
mkfifo "$T/hold"
# All 32 at once; the upstream holds the one that reaches it until the test lets it answer.
for i in $(seq 1 32); do
  bg "c$i" curl -sS --max-time 60 -X POST -H 'Idempotency-Key: pay-1' -H "X-Answer-Hold: $T/hold" \
    -H 'X-Answer-Status: 201' --data-binary '{"amount":1}' -D "$T/c$i.headers" -o "$T/c$i.body" \
    -w '%{http_code}' "$URL/payments"
done
finished() {
  local n=0 i
  for i in $(seq 1 32); do bg_exited "c$i" && n=$((n + 1)); done
  ((n == 31))
}
wait_until "31 of the 32 duplicates are answered" finished
release_fifo "$T/hold"
created=0 busy=0
for i in $(seq 1 32); do
  bg_wait "c$i"
  expect_rc 0
  case $(cat "$T/c$i.out") in
    201) created=$((created + 1)); first=$i ;;
    409)
      busy=$((busy + 1))
      grep -qi '^Retry-After: 1' "$T/c$i.headers" || fail "409 without Retry-After: $(cat "$T/c$i.headers")"
      grep -q '"idempotency_error"' "$T/c$i.body" || fail "409 body: $(cat "$T/c$i.body")"
      ;;
    *) fail "duplicate $i got $(cat "$T/c$i.out"): $(cat "$T/c$i.body")" ;;
  esac
done
assert_eq 1 "$created" "duplicates answered 201"
assert_eq 31 "$busy" "duplicates answered 409"
assert_eq 1 "$(upstream_count /payments)" "calls that reached the upstream"

# Retries after the answer is stored, 32 at once: all replays of the same bytes.
for i in $(seq 1 32); do
  bg "r$i" curl -sS --max-time 60 -X POST -H 'Idempotency-Key: pay-1' --data-binary '{"amount":1}' \
    -D "$T/r$i.headers" -o "$T/r$i.body" -w '%{http_code}' "$URL/payments"
done
for i in $(seq 1 32); do
  bg_wait "r$i"
  expect_rc 0
  assert_eq 201 "$(cat "$T/r$i.out")" "status of retry $i"
  grep -qi '^Idempotent-Replayed: true' "$T/r$i.headers" || fail "retry $i is no replay"
  assert_same "$T/c$first.body" "$T/r$i.body"
done
assert_eq 1 "$(upstream_count /payments)" "calls after the retries"
stop_daemon
