#!/usr/bin/env bash
# Handler of /slack/commands in examples/slack.json (a slash command such as /deploy). Slack posts
# the command form-encoded; `idem serve` has checked X-Slack-Signature and runs this once per
# trigger_id (the hook's "key": {"form": "trigger_id"}), with the raw form on stdin. The answer is
# the message Slack shows the user.
#
#   SLACK_SIGNING_SECRET=... idem serve --config examples/slack.json
set -euo pipefail
form=$(cat)

# field NAME: the form field NAME, decoded ('+' is a space, %XX a byte).
field() {
  local pair value pairs
  IFS='&' read -ra pairs <<<"$form"
  for pair in "${pairs[@]}"; do
    [[ $pair == "$1="* ]] || continue
    value=${pair#*=}
    value=${value//+/ }
    printf '%b' "${value//%/\\x}"
    return 0
  done
}
# json TEXT: TEXT as the inside of a JSON string.
json() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\000-\037'; }

command=$(field command)
text=$(field text)
# Start the work here: it happens once per trigger_id.
echo "slack: $command $text by $(field user_name) (trigger $IDEM_KEY)" >&2
printf '{"response_type":"ephemeral","text":"%s %s: on it"}\n' "$(json "$command")" "$(json "$text")"
