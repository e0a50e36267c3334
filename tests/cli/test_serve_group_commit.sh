#!/usr/bin/env bash
# Many deliveries at once share the daemon's commits (group commit): every one is answered as
# if it were alone, and a daemon killed in the middle of them leaves a sound store in which
# every delivery that was answered 200 is recorded as succeeded (its outcome was committed
# before its answer) and replays as such; none was lost or recorded twice.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

cat >"$T/serve.json" <<EOF2
{"hooks": [{"path": "/hooks/g", "command": ["sh", "-c", "cat; echo \" ran \$IDEM_KEY\""],
            "key": {"header": "X-Key"}, "max_concurrency": 16}]}
EOF2
start_daemon "$T/serve.json"

# sender N: posts deliveries dN-1, dN-2, ... one after the other until the daemon stops
# answering; each answer's status goes to $T/answers/KEY, its body beside it.
mkdir "$T/answers"
sender() {
  local i
  for ((i = 1; i <= 200; i++)); do
    local key=d$1-$i code
    code=$(curl -s --max-time 30 -o "$T/answers/$key.body" -w '%{http_code}' \
      -H "X-Key: $key" --data-binary "body $key" "$URL/hooks/g") || return 0
    printf %s "$code" >"$T/answers/$key"
  done
}
senders=()
for n in $(seq 1 12); do
  sender "$n" &
  senders+=($!)
done
answered() { (($(find "$T/answers" -type f ! -name '*.body' | wc -l) >= 120)); }
wait_until "120 deliveries are answered" answered
kill_daemon
for pid in "${senders[@]}"; do wait "$pid" || true; done

integrity_ok
ok=0
for f in "$T"/answers/*; do
  [[ $f == *.body ]] && continue
  key=${f##*/}
  code=$(<"$f")
  [[ $code == 200 ]] || fail "delivery $key was answered $code"
  assert_eq "body $key ran $key" "$(tr -d '\n' <"$T/answers/$key.body")" "answer to $key"
  assert_status "/hooks/g#$key" succeeded
  ok=$((ok + 1))
done
((ok >= 120)) || fail "only $ok deliveries answered"

# A restarted daemon replays what was answered.
start_daemon "$T/serve.json"
answers=("$T"/answers/d*[0-9])
key=${answers[0]##*/}
post /hooks/g "body $key" "X-Key: $key"
expect_http 200
assert_header Idempotent-Replayed true
assert_body 'body %s ran %s\n' "$key" "$key"
stop_daemon
