#!/usr/bin/env bash
# The official Stripe Node SDK (npm's `stripe`, tests/node) as a client of `idem serve --upstream`
# in front of a fake Stripe API (tests/node/fake_stripe.js): a real client library that sets
# Idempotency-Key by itself and retries by itself (contract §7).
#   (a) an explicit idempotencyKey sent twice: one upstream call, the same object, the second
#       answer replayed;
#   (b) the SDK's own key survives its retry after an upstream 500: the key is released, the
#       retry creates the object once, the key replays; after a connection the upstream drops
#       with the request, the outcome is unknown: the retry gets a 409 that stops the SDK, and
#       the upstream ran the request once;
#   (c) the key with other parameters: a 422 that the SDK raises as an error (the error member);
#   (d) a 409 while the first request is outstanding, retried by the SDK until the stored answer;
#   (e) an upstream slower than the proxy's timeout: 504, then 409s to every retry, one
#       execution; its late answer is stored and replayed to the next call with the key.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"
use_node_packages

# wait_port NAME FILE: waits until bg process NAME has written its port into FILE; prints it.
wait_port() {
  _port_or_gone() { [[ -s $2 ]] || bg_exited "$1"; }
  wait_until "'$1' writes its port file" _port_or_gone "$1" "$2"
  [[ -s $2 ]] || fail "'$1' exited before listening; its stderr: $(head -c 2000 "$T/$1.err" | cat -v)"
  local port
  port=$(<"$2")
  [[ $port =~ ^[1-9][0-9]*$ ]] || fail "port file of '$1' holds '$port'"
  echo "$port"
}

bg fake node "$node_dir/fake_stripe.js" "$T/fake.port" "$T/fake.log"
FAKE=http://127.0.0.1:$(wait_port fake "$T/fake.port")
bg "$DAEMON" idem serve --upstream "$FAKE" --listen 127.0.0.1:0 --port-file "$T/$DAEMON.port"
PORT=$(wait_port "$DAEMON" "$T/$DAEMON.port")
URL=http://127.0.0.1:$PORT  # serve_lib.sh's get and stop_daemon use it

# sdk NAME ARG...: one SDK call through the proxy (stripe_client.js; its JSON line in
# $T/NAME.out); sets rc. bg_sdk NAME ARG...: the same in the background.
sdk() { capture "$1" node "$node_dir/stripe_client.js" "$PORT" "${@:2}"; }
bg_sdk() { bg "$1" node "$node_dir/stripe_client.js" "$PORT" "${@:2}"; }
out() { jsonq "$2" <"$T/$1.out"; }  # out NAME POINTER: a member of the SDK call's JSON line
fault() { curl -sS --fail -X POST "$FAKE/__fake/fault?next=$1" || fail "fake: cannot queue fault $1"; }
upstream_calls() { log_count "$T/fake.log" "key=$1 "; }  # upstream_calls KEY
created() { log_count "$T/fake.log" "key=$1 created "; }  # created KEY: creations under KEY
metric() {  # metric OUTCOME: the proxy's counter for OUTCOME (0 when absent)
  RESP=metrics get /metrics
  local n
  n=$(grep -F "idem_proxy_requests_total{outcome=\"$1\"} " "$T/metrics.body" | cut -d' ' -f2)
  echo "${n:-0}"
}
metric_at_least() { (($(metric "$1") >= $2)); }  # metric_at_least OUTCOME N
stored() { idem ls --keys | grep -c -- "#$1\$" || true; }  # stored KEY: records of proxy key KEY

# --- (a) an explicit key twice: one creation, the second answer is its replay ------------------
sdk a1 create-customer Ann --key order-1 --email ann@example.com
expect_rc 0
assert_eq true "$(out a1 /ok)" "first create succeeds"
assert_eq customer "$(out a1 /object/object)" "a Stripe customer object"
id=$(out a1 /object/id)
[[ $id == cus_* ]] || fail "customer id '$id'"
assert_eq null "$(out a1 /replayed)" "the first answer is not a replay"
sdk a2 create-customer Ann --key order-1 --email ann@example.com
expect_rc 0
assert_eq "$(out a1 /object)" "$(out a2 /object)" "the second create gets the same object"
assert_eq true "$(out a2 /replayed)" "Idempotent-Replayed in the SDK's lastResponse"
assert_eq order-1 "$(out a2 /idempotencyKey)" "the key the SDK reads back"
assert_eq 1 "$(upstream_calls order-1)" "upstream calls for order-1"
assert_eq 1 "$(metric replayed)" "replays counted in /metrics"

# --- (b) the SDK's own key survives its retries ---------------------------------------------
sdk_retry_case() {  # sdk_retry_case NAME FAULT OUTCOME: one fault, then the SDK's retry succeeds
  local name=$1
  fault "$2"
  sdk "$name" create-customer "$name" --retries 3
  expect_rc 0
  local key
  key=$(out "$name" /attempts/0)
  [[ $key == stripe-node-retry-* ]] || fail "$name: the SDK's generated key: '$key'"
  assert_eq "$key" "$(out "$name" /attempts/1)" "$name: the retry carries the same key"
  assert_eq "<missing>" "$(out "$name" /attempts/2)" "$name: one retry"
  assert_eq 2 "$(upstream_calls "$key")" "$name: upstream calls (the $2 and the retry)"
  assert_eq 1 "$(log_count "$T/fake.log" "key=$key $3")" "$name: the failed call upstream"
  assert_eq 1 "$(created "$key")" "$name: creations upstream"
  assert_eq 1 "$(stored "$key")" "$name: records of the key"
  idem ls --keys --status succeeded | grep -- "#$key\$" >/dev/null ||
    fail "$name: the record of $key is not succeeded: $(idem ls)"
  # The same call again with that key: the stored creation, not a second one.
  sdk "$name-again" create-customer "$name" --key "$key"
  expect_rc 0
  assert_eq "$(out "$name" /object)" "$(out "$name-again" /object)" "$name: the key replays the object"
  assert_eq true "$(out "$name-again" /replayed)" "$name: the second call is a replay"
  assert_eq 1 "$(created "$key")" "$name: still one creation upstream"
}
sdk_retry_case bob 500 500
assert_eq 1 "$(metric released)" "upstream 5xx answers released, in /metrics"
# A connection dropped with the request: 502, then the retry's 409 (Stripe-Should-Retry: false).
fault drop
sdk cid create-customer cid --retries 3
expect_rc 2
key=$(out cid /attempts/0)
[[ $key == stripe-node-retry-* ]] || fail "cid: the SDK's generated key: '$key'"
assert_eq "$key" "$(out cid /attempts/1)" "cid: the retry carries the same key"
assert_eq "<missing>" "$(out cid /attempts/2)" "cid: no retry after the 409"
assert_eq 409 "$(out cid /statusCode)" "cid: the status the SDK raises"
assert_eq idempotency_error "$(out cid /rawType)" "cid: the error member's type"
assert_eq 1 "$(upstream_calls "$key")" "cid: upstream calls (the dropped one)"
assert_eq 1 "$(metric outcome_unknown)" "cut-off exchanges, in /metrics"
assert_eq 1 "$(metric refused_unknown)" "409s for an unknown outcome, in /metrics"

# --- (c) the key with other parameters: an error the SDK raises ------------------------------
sdk c1 create-customer Dee --key order-3
expect_rc 0
sdk c2 create-customer Eve --key order-3 --retries 3
expect_rc 2
assert_eq false "$(out c2 /ok)" "the SDK raises instead of returning a customer"
# The SDK gives its StripeIdempotencyError class to idempotency errors with Stripe's own status
# (400); a 422 with the error member is its generic StripeAPIError, raised all the same.
assert_eq StripeAPIError "$(out c2 /type)" "the SDK's error class"
assert_eq idempotency_error "$(out c2 /rawType)" "the error member's type"
assert_eq 422 "$(out c2 /statusCode)" "status"
assert_eq "<missing>" "$(out c2 /attempts/1)" "a 422 is not retried"
assert_eq 1 "$(upstream_calls order-3)" "upstream calls for order-3"
assert_eq 1 "$(metric conflict)" "conflicts counted in /metrics"

# --- (d) a 409 while the first request is outstanding, retried by the SDK --------------------
fault hold
bg_sdk d1 create-customer Fay --key order-4
wait_until "the fake holds the first call" file_has "$T/fake.log" "key=order-4 held"
bg_sdk d2 create-customer Fay --key order-4 --retries 5
wait_until "the proxy answers 409 to the second client" metric_at_least in_flight 1
curl -sS --fail -X POST "$FAKE/__fake/release" || fail "fake: cannot release"
bg_wait d1
expect_rc 0
bg_wait d2
expect_rc 0
id=$(out d1 /object/id)
assert_eq "$id" "$(out d2 /object/id)" "both clients get the one customer"
assert_eq 1 "$(log_count "$T/fake.log" "released created $id")" "the held call created it"
assert_eq true "$(out d2 /replayed)" "the second client's last answer is the replay"
assert_eq order-4 "$(out d2 /attempts/1)" "the SDK retried with the same key"
assert_eq 1 "$(upstream_calls order-4)" "upstream calls for order-4"
assert_eq 1 "$(stored order-4)" "records of order-4"
stop_daemon

# --- (e) an upstream slower than the proxy's timeout -----------------------------------------
echo "{\"proxy\": {\"upstream\": \"$FAKE\", \"timeout\": \"1s\"}}" >"$T/slow.json"
rm -f "$T/$DAEMON.port"
bg "$DAEMON" idem serve --config "$T/slow.json" --listen 127.0.0.1:0 --port-file "$T/$DAEMON.port"
PORT=$(wait_port "$DAEMON" "$T/$DAEMON.port")
URL=http://127.0.0.1:$PORT
fault hold
sdk e1 create-customer Gus --key order-5 --retries 2
expect_rc 2
assert_eq 409 "$(out e1 /statusCode)" "the SDK gives up on a 409 while the request is outstanding"
assert_eq order-5 "$(out e1 /attempts/2)" "the SDK retried twice with the key"
assert_eq 1 "$(upstream_calls order-5)" "upstream calls for order-5 while it is held"
assert_eq 1 "$(metric upstream_timeout)" "504s, in /metrics"
curl -sS --fail -X POST "$FAKE/__fake/release" || fail "fake: cannot release"
late_stored() { idem ls --keys --status succeeded | grep -q -- "#order-5\$"; }
wait_until "the late answer is stored" late_stored
sdk e2 create-customer Gus --key order-5
expect_rc 0
assert_eq true "$(out e2 /replayed)" "the next call gets the late answer, replayed"
id=$(out e2 /object/id)
assert_eq 1 "$(log_count "$T/fake.log" "released created $id")" "the held call created it"
assert_eq 1 "$(upstream_calls order-5)" "upstream calls for order-5"
stop_daemon
