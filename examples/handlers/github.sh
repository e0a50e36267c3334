#!/bin/sh
# Handler of /hooks/github in examples/serve.json. `idem serve` has checked X-Hub-Signature-256
# and runs this once per delivery (X-GitHub-Delivery), with the payload on stdin and the request's
# headers in IDEM_HEADER_* variables. Its stdout is the answer GitHub sees, and what a redelivery
# is answered with; a non-zero exit answers 500 and the next redelivery runs it again.
#
#   GITHUB_WEBHOOK_SECRET=... STRIPE_WEBHOOK_SECRET=... idem serve --config examples/serve.json
#   (from the repository's root: the commands in serve.json are relative to it)
set -eu
payload=$(cat)

# field NAME: the first "NAME": "text" of the payload. Enough for these few fields; a handler that
# digs deeper would use jq.
field() {
  printf '%s' "$payload" | grep -o "\"$1\" *: *\"[^\"]*\"" | head -n 1 | sed 's/^.*: *"//; s/"$//' |
    tr -d '\\'
}

event=$(printf '%s' "${IDEM_HEADER_X_GITHUB_EVENT:-}" | tr -cd 'a-z_')
repo=$(field full_name)
case $event in
  ping)
    printf '{"ok":true,"event":"ping","zen":"%s"}\n' "$(field zen)"
    ;;
  push)
    ref=$(field ref)
    if [ -z "$ref" ]; then
      echo "github: push $IDEM_KEY has no ref" >&2
      exit 1
    fi
    # Deploy, trigger CI, notify... here: it happens once per delivery.
    echo "github: push to $repo $ref (delivery $IDEM_KEY, attempt $IDEM_ATTEMPT)" >&2
    printf '{"ok":true,"event":"push","delivery":"%s","repository":"%s","ref":"%s"}\n' \
      "$IDEM_KEY" "$repo" "$ref"
    ;;
  *)
    printf '{"ok":true,"event":"%s","ignored":true}\n' "$event"
    ;;
esac
