#!/bin/sh
# Fulfil each order of a JSON Lines feed exactly once, however often the feed is consumed again
# and however many times an order is redelivered in it.
#
#   ./consume.sh [FILE]      FILE: JSON Lines, one order per line (default: orders.jsonl next to
#                            this script; - reads stdin, e.g. `queue-dump | ./consume.sh -`)
#
# `idem each` keys each line by its /order_id and runs the handler (this script again, with
# --handle-one) once per new order, with the order's line on its stdin, up to $JOBS at once:
# - an order already done by this or an earlier run is skipped; a redelivered copy that is still
#   being handled waits for it, then is skipped (one order never runs twice at the same time);
# - a line that is not JSON or has no usable order_id is reported with its line number
#   ("idem: line 4: not JSON") and the others go on;
# - a failed order runs again on the next run;
# - the same order_id with a *different* line is refused ("the key was used with another message
#   or command"): a redelivery must be byte-identical. So is an order handled by another handler
#   command line (e.g. this script at another path).
# It ends with a summary on stderr and exits 0 if every order ran or was already done, else 1.
# orders.jsonl has a redelivered order (line 3) and two bad lines (4 and 6): its exit is 1.
#
# Environment:
#   FULFIL_CMD  the work for one order: a shell command with the order's JSON on stdin and
#               ORDER_ID in its environment (default: print what would be shipped)
#   JOBS        orders handled at once (default 4)
#   IDEM_DB     idem's store (default: ~/.local/state/idem/idem.db)
# Credentials the work needs (e.g. the warehouse API token) come from the environment too.
set -eu

if [ "${1:-}" = --handle-one ]; then
  # One order, on stdin. idem each sets IDEM_KEY (the order id), IDEM_LINE and IDEM_ATTEMPT.
  order=$(cat)
  ORDER_ID=$IDEM_KEY
  export ORDER_ID
  if [ -n "${FULFIL_CMD:-}" ]; then
    printf '%s\n' "$order" | sh -c "$FULFIL_CMD"
  else
    # field NAME: the value of "NAME" in the order (a real handler would use jq).
    field() { printf '%s' "$order" | sed -n "s/.*\"$1\" *: *\"\{0,1\}\([^\",}]*\).*/\1/p"; }
    echo "order $ORDER_ID: ship $(field qty) x $(field sku) to $(field customer)" \
      "(line $IDEM_LINE, attempt $IDEM_ATTEMPT)"
  fi
  exit
fi

here=$(cd "$(dirname "$0")" && pwd)
file=${1:-$here/orders.jsonl}
[ "$file" = - ] || exec <"$file"
exec idem each --key-field /order_id --jobs "${JOBS:-4}" -- "$here/consume.sh" --handle-one
