#!/bin/sh
# Handler of /slack/events in examples/slack.json (Slack's Events API). `idem serve` has checked
# X-Slack-Signature and runs this once per event_id, with the JSON payload on stdin. Slack retries
# an event it got no 200 for within 3 s; the retry is answered from the store.
#
# When the endpoint is set up, Slack sends a url_verification, which has no event_id: the hook's
# "no_key": "run" runs it anyway, without dedupe (IDEM_KEY is empty), so it can answer the
# challenge.
#
#   SLACK_SIGNING_SECRET=... idem serve --config examples/slack.json
#   (from the repository's root: the commands in slack.json are relative to it)
set -eu
payload=$(cat)

# field NAME: the first "NAME": "text" of the payload. Enough here; a real handler would use jq.
field() {
  printf '%s' "$payload" | grep -o "\"$1\" *: *\"[^\"]*\"" | head -n 1 | sed 's/^.*: *"//; s/"$//'
}

if printf '%s' "$payload" | grep -q '"type" *: *"url_verification"'; then
  printf '{"challenge":"%s"}\n' "$(field challenge)"
  exit 0
fi
if [ -z "$IDEM_KEY" ]; then
  echo "slack: an event without event_id" >&2
  exit 1
fi
# React to the event here: it happens once per event_id.
echo "slack: event $IDEM_KEY (attempt $IDEM_ATTEMPT)" >&2
printf '{"ok":true,"event_id":"%s"}\n' "$IDEM_KEY"
