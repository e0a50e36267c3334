#!/bin/sh
# A client of idem's ledger API (`idem serve --ledger`) in shell: curl and jq. Runs a command at
# most once per key, as `idem run` does, but through the daemon: claim, heartbeat while the
# command runs, finish with its exit code and stdout. A duplicate prints the stored stdout.
#
#   idem serve --ledger &
#   IDEM_URL=http://127.0.0.1:8787 sh examples/ledger_client.sh order-42 ./charge.sh 42
#
# Environment: IDEM_URL (default http://127.0.0.1:8787), IDEM_TOKEN_FILE (the store's path +
# .token; default: that of the store idem uses, $IDEM_DB or the XDG path), IDEM_LEASE (default 30s; a heartbeat goes every third of it, in whole seconds).
# Exit: the command's code; 0 for a key that already succeeded; 75 running elsewhere or the lease
# was lost; 65 the key was used for something else; 69 an earlier attempt was abandoned.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 KEY COMMAND [ARG...]" >&2; exit 64; }
key=$1
shift
url=${IDEM_URL:-http://127.0.0.1:8787}
lease=${IDEM_LEASE:-30s}
db=${IDEM_DB:-${XDG_STATE_HOME:-$HOME/.local/state}/idem/idem.db}
token=$(cat "${IDEM_TOKEN_FILE:-$db.token}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# call PATH JSON: POSTs JSON; the answer's body goes to $work/answer, its status to stdout.
call() {
  curl -sS -o "$work/answer" -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' --data-binary "$2" "$url$1"
}

status=$(call /v1/claim "$(jq -nc --arg k "$key" --arg l "$lease" '{key: $k, lease: $l}')")
case $status in
  201) ;;
  200) jq -r '.record.stdout_b64' "$work/answer" | base64 -d; exit 0 ;;
  409) jq -r '.detail' "$work/answer" >&2
       if jq -e '.title | endswith("abandoned")' "$work/answer" >/dev/null; then exit 69; fi
       exit 75 ;;
  422) jq -r '.detail' "$work/answer" >&2; exit 65 ;;
  *) echo "claim: HTTP $status: $(cat "$work/answer")" >&2; exit 74 ;;
esac
attempt_token=$(jq -r '.attempt_token' "$work/answer")
hold=$(jq -nc --arg k "$key" --arg t "$attempt_token" '{key: $k, attempt_token: $t}')

"$@" >"$work/stdout" &
child=$!
every=$(( $(jq -r '.lease_ms' "$work/answer") / 3000 ))
[ "$every" -ge 1 ] || every=1
(
  # Renews the lease until the command ends; a 409 means another attempt has the key: stop it.
  while kill -0 "$child" 2>/dev/null; do
    sleep "$every"
    kill -0 "$child" 2>/dev/null || break
    beat=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
      --data-binary "$hold" "$url/v1/heartbeat" || echo 000)
    if [ "$beat" = 409 ]; then echo "heartbeat refused: lease lost" >&2; kill "$child"; break; fi
  done
) &
keeper=$!
code=0
wait "$child" || code=$?
kill "$keeper" 2>/dev/null || true
cat "$work/stdout"

outcome=succeeded
[ "$code" -eq 0 ] || outcome=failed
jq -nc --arg k "$key" --arg t "$attempt_token" --arg s "$outcome" --argjson c "$code" \
  --arg out "$(base64 -w0 <"$work/stdout")" \
  '{key: $k, attempt_token: $t, status: $s, exit_code: $c, stdout_b64: $out}' >"$work/finish"
status=$(call /v1/finish "@$work/finish")
[ "$status" = 200 ] || { echo "finish: HTTP $status: $(cat "$work/answer")" >&2; exit 75; }
exit "$code"
