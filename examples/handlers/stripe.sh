#!/bin/sh
# Handler of /hooks/stripe in examples/serve.json. `idem serve` has checked Stripe-Signature
# (within 300 s of its timestamp) and runs this once per event id (the body's /id), with the event
# on stdin. Its stdout is the answer Stripe sees, and what a retry of the event is answered with;
# a non-zero exit answers 500 and Stripe's next retry runs it again.
set -eu
payload=$(cat)

# first NAME / last NAME: the first or last "NAME": "text" of the payload. Stripe writes the
# event's own id first and its type last, around data.object. A handler that digs deeper would
# use jq.
strings() {
  printf '%s' "$payload" | grep -o "\"$1\" *: *\"[^\"]*\"" | sed 's/^.*: *"//; s/"$//' | tr -d '\\'
}
first() { strings "$1" | head -n 1; }
last() { strings "$1" | tail -n 1; }

id=$(first id)
type=$(last type)
if [ -z "$id" ] || [ -z "$type" ]; then
  echo "stripe: not an event (no id or type)" >&2
  exit 1
fi
case $type in
  checkout.session.completed | payment_intent.succeeded) action=fulfil ;;
  charge.refunded) action=refund ;;
  customer.subscription.deleted) action=cancel ;;
  *) action=ignore ;;
esac
# Fulfil the order, record the refund... here: it happens once per event.
echo "stripe: $id $type -> $action (attempt $IDEM_ATTEMPT)" >&2
printf '{"received":true,"event":"%s","type":"%s","action":"%s"}\n' "$id" "$type" "$action"
