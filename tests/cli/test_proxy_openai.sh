#!/usr/bin/env bash
# The official OpenAI Node SDK (npm's `openai`, tests/node) as a client of `idem serve`'s proxy:
# a call gives it an Idempotency-Key header, which it repeats on the retries it makes by itself
# (twice by default, of 408, 409, 429, 5xx and dropped connections), so every retry of a request
# that reached the upstream must be answered without a second execution (contract §7). The upstream
# counts its executions.
#   (a) an upstream slower than the proxy's timeout: 504, then 409s, one execution; the late
#       answer is stored and the key replays it;
#   (b) an upstream that dies with the request: 502, then a 409 that stops the SDK, one
#       execution;
#   (c) an upstream that answers 429 once: not stored, the SDK's retry goes through and is
#       stored.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"
use_node_packages

start_upstream up
echo "{\"proxy\": {\"upstream\": \"$UURL\", \"timeout\": \"1s\", \"late_answer\": \"60s\"}}" \
  >"$T/proxy.json"
start_serve --config "$T/proxy.json"

# sdk NAME CASE ARG...: one SDK call under /CASE/v1 (its JSON line in $T/NAME.out); sets rc.
sdk() { capture "$1" node "$node_dir/openai_client.js" "$URL/$2/v1" "${@:3}"; }
out() { jsonq "$2" <"$T/$1.out"; }  # out NAME POINTER: a member of the call's JSON line
executions() { upstream_count "/$1/v1/chat/completions"; }  # executions CASE

# --- (a) slower than the timeout -------------------------------------------------------------
mkfifo "$T/hold"
sdk a1 slow --header "X-Answer-Hold: $T/hold"
expect_rc 2
key=$(out a1 /attempts/0)
[[ $key == openai-* ]] || fail "the call's key: '$key'"
assert_eq "$key" "$(out a1 /attempts/2)" "the SDK's last retry carries the same key"
assert_eq "<missing>" "$(out a1 /attempts/3)" "three attempts (maxRetries 2)"
assert_eq 409 "$(out a1 /status)" "the status the SDK raises once its retries are spent"
assert_eq idempotency_error "$(out a1 /errorType)" "the error member's type"
assert_eq 1 "$(executions slow)" "executions while the upstream holds"
release_fifo "$T/hold"
# The SDK sends its API key as Authorization: the record's scope is its hash.
late_stored() { idem ls --keys --status succeeded | grep -q -- "#$key\$"; }
wait_until "the late answer is stored" late_stored
sdk a2 slow --key "$key"
expect_rc 0
assert_eq true "$(out a2 /replayed)" "the key replays the late answer"
assert_eq 1 "$(out a2 /body/n)" "the answer of the one execution"
assert_eq 1 "$(executions slow)" "executions of the slow request"

# --- (b) dies with the request ---------------------------------------------------------------
sdk b1 dying --header 'X-Answer-Drop: 1'
expect_rc 2
key=$(out b1 /attempts/0)
assert_eq "$key" "$(out b1 /attempts/1)" "the retry carries the same key"
assert_eq "<missing>" "$(out b1 /attempts/2)" "no retry after the 409 (X-Should-Retry: false)"
assert_eq 409 "$(out b1 /status)" "the status the SDK raises"
file_has "$T/b1.out" "idem rm" || fail "the error does not say how to clear the key: $(cat "$T/b1.out")"
assert_eq 1 "$(executions dying)" "executions of the dying request"

# --- (c) a 429 once --------------------------------------------------------------------------
sdk c1 limited --header 'X-Answer-First: 429'
expect_rc 0
key=$(out c1 /attempts/0)
assert_eq "$key" "$(out c1 /attempts/1)" "the retry carries the same key"
assert_eq null "$(out c1 /replayed)" "the retry was forwarded, not replayed"
assert_eq 2 "$(executions limited)" "calls upstream: the 429 and the one that ran"
sdk c2 limited --key "$key"
expect_rc 0
assert_eq true "$(out c2 /replayed)" "the key replays the stored answer"
assert_eq "$(out c1 /body)" "$(out c2 /body)" "the same answer"
assert_eq 2 "$(executions limited)" "calls upstream after the replay"
stop_daemon
