#!/usr/bin/env bash
# 32 concurrent duplicates through the proxy (contract §7, §8.1): exactly one reaches the upstream;
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

# A burst of new keys over the connection cap (--max-connections 2: two served, two waiting, and
# max_forwards follows it): every other client gets 503 with Retry-After at once, never a reset,
# and nothing of it reaches the upstream; its retry goes through once the burst is over.
DAEMON=capped
start_serve --upstream "$UURL" --max-connections 2
n=12
for i in $(seq 1 $n); do
  mkfifo "$T/hold$i"
  bg "b$i" curl -sS --max-time 60 -X POST -H "Idempotency-Key: burst-$i" \
    -H "X-Answer-Hold: $T/hold$i" --data-binary "{\"b\":$i}" -D "$T/b$i.headers" \
    -o "$T/b$i.body" -w '%{http_code}' "$URL/burst"
done
answered() {
  local k=0 i
  for i in $(seq 1 $n); do bg_exited "b$i" && k=$((k + 1)); done
  ((k == n - 4))
}
wait_until "all but the four the daemon holds are answered" answered
shed=0 held=()
for i in $(seq 1 $n); do
  if bg_running "b$i"; then
    held+=("$i")
    continue
  fi
  bg_wait "b$i"
  expect_rc 0  # curl's: an answer, not a reset
  assert_eq 503 "$(cat "$T/b$i.out")" "status of burst request $i"
  grep -qi '^Retry-After: 1' "$T/b$i.headers" || fail "503 without Retry-After: $(cat "$T/b$i.headers")"
  shed=$((shed + 1))
done
assert_eq 8 "$shed" "burst requests answered 503"
# The held ones, each released once it reaches the upstream (two wait for a worker first).
for i in "${held[@]}"; do
  bg "go$i" sh -c 'printf "go\n" > "$1"' sh "$T/hold$i"
done
for i in "${held[@]}"; do
  bg_wait "b$i"
  expect_rc 0
  assert_eq 200 "$(cat "$T/b$i.out")" "status of held burst request $i"
done
assert_eq 4 "$(upstream_count /burst)" "burst requests that reached the upstream"
RESP=again post /burst '{"b":0}' 'Idempotency-Key: burst-retry'
RESP=again expect_http 200
get /metrics
grep -qx 'idem_connections_shed_total 8' "$T/resp.body" ||
  fail "/metrics: $(grep shed "$T/resp.body")"
stop_daemon
