#!/bin/sh
# Charge an order exactly once, even when this script runs twice at the same time, runs again
# after a failure, or is killed half-way. The pattern of `idem begin` / `idem end`:
# claim the key, do the side effect, record the outcome.
#
#   ./charge.sh [--retry-abandoned] ORDER_ID AMOUNT_CENTS [CURRENCY]
#
# Exit: 0 charged now, or already charged earlier (the receipt is printed either way);
#       the charge's own code when it failed (nothing is recorded as charged: run again);
#       65 the key belongs to something else, 69 an earlier run died mid-charge, 75 another run is
#       charging this order: each explained on stderr; 64 usage.
#
# Environment:
#   PAYMENT_API_KEY  the payment provider's secret key, required by the default charge. Read from
#                    the environment only: it never appears on a command line (ps, idem show).
#   PAYMENT_API_URL  the provider's charge endpoint (default https://api.payments.example/v1/charges)
#   CHARGE_CMD       replaces the call to the provider: a shell command with ORDER_ID,
#                    AMOUNT_CENTS, CURRENCY and IDEMPOTENCY_KEY in its environment, printing the
#                    receipt on stdout
#   CHARGE_WAIT      how long to wait for another run charging the same order (default 30s)
#   IDEM_DB          idem's store (default: ~/.local/state/idem/idem.db)
set -u

retry=
if [ "${1:-}" = --retry-abandoned ]; then
  retry=--retry-abandoned
  shift
fi
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: charge.sh [--retry-abandoned] ORDER_ID AMOUNT_CENTS [CURRENCY]" >&2
  exit 64
fi
ORDER_ID=$1 AMOUNT_CENTS=$2 CURRENCY=${3:-EUR}
IDEMPOTENCY_KEY=charge-$ORDER_ID
export ORDER_ID AMOUNT_CENTS CURRENCY IDEMPOTENCY_KEY
key=$IDEMPOTENCY_KEY
wait=${CHARGE_WAIT:-30s}
# Check the configuration before claiming: a script that stops between begin and end leaves an
# abandoned claim that a human must resolve.
if [ -z "${CHARGE_CMD:-}" ] && [ -z "${PAYMENT_API_KEY:-}" ]; then
  echo "charge.sh: PAYMENT_API_KEY is not set; nothing charged" >&2
  exit 64
fi

work=$(mktemp -d) || exit 74
trap 'rm -rf "$work"' EXIT

# charge: the side effect; the receipt on stdout.
charge() {
  if [ -n "${CHARGE_CMD:-}" ]; then
    sh -c "$CHARGE_CMD"
    return
  fi
  # The secret reaches curl on its stdin (-H @-), not on its command line. The provider gets the
  # same idempotency key: should this script die after the provider charged, a later
  # --retry-abandoned run gets the first charge back from the provider instead of a second one.
  printf 'Authorization: Bearer %s\nIdempotency-Key: %s\n' "$PAYMENT_API_KEY" "$key" |
    curl -fsS --max-time 30 -H @- -d "amount=$AMOUNT_CENTS" -d "currency=$CURRENCY" \
      -d "order_id=$ORDER_ID" "${PAYMENT_API_URL:-https://api.payments.example/v1/charges}"
}

# 1. Claim the order. `idem begin` must be called by this shell itself (not from a $(...) or a
#    pipeline): the claim belongs to the calling process, so that idem sees if this script dies.
#    --print: if the order was charged already, its stored receipt comes out on stdout. -q keeps
#    idem quiet about 75 alone: for 65 and 69 its own line comes before this script's.
rc=0
idem begin -q -k "$key" --ttl 30d --wait "$wait" --print $retry >"$work/receipt" || rc=$?
case $rc in
  0) ;;  # ours: charge below
  1)
    echo "order $ORDER_ID: already charged, not charging again. Receipt:"
    cat "$work/receipt"
    exit 0
    ;;
  65)
    echo "charge.sh: key $key was used by something other than charge.sh; nothing charged" >&2
    exit 65
    ;;
  69)
    echo "charge.sh: an earlier run for order $ORDER_ID died between claiming it and recording" \
      "the charge: the customer may or may not have been charged. Look for idempotency key $key" \
      "at the provider, then run: charge.sh --retry-abandoned $ORDER_ID $AMOUNT_CENTS" \
      "(safe when the provider honours Idempotency-Key)" >&2
    exit 69
    ;;
  75)
    echo "charge.sh: order $ORDER_ID is being charged by another run (still after waiting" \
      "$wait); nothing charged here, try again later" >&2
    exit 75
    ;;
  *)
    echo "charge.sh: idem begin failed (exit $rc); nothing charged" >&2
    exit "$rc"
    ;;
esac

# 2. The order is ours: charge once and record the outcome.
if charge >"$work/receipt" 2>"$work/errors"; then
  if ! idem end -k "$key" --stdout-file "$work/receipt"; then
    echo "charge.sh: order $ORDER_ID WAS charged but the charge could not be recorded" >&2
    cat "$work/receipt" >&2
    exit 74
  fi
  echo "order $ORDER_ID: charged $AMOUNT_CENTS $CURRENCY. Receipt:"
  cat "$work/receipt"
else
  rc=$?
  # A failure is recorded as such: the next run of this script tries again.
  idem end -k "$key" --exit "$rc" --stdout-file "$work/receipt" --stderr-file "$work/errors" ||
    echo "charge.sh: the failure could not be recorded either" >&2
  echo "charge.sh: charging order $ORDER_ID failed (exit $rc); run again to retry:" >&2
  cat "$work/errors" >&2
  exit "$rc"
fi
