#!/usr/bin/env bash
# --max-output above what the store can keep (issue 8): refused when the options are read, exit
# 64 with the limit in the message, before anything runs or is claimed.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

for cap in 1G 4G 901MiB 1000000000; do
  capture big idem run -k "k-$cap" --max-output "$cap" -- sh -c 'echo ran >>"$1"' sh "$T/ran"
  expect_rc 64
  assert_idem_error
  assert_bytes "$T/big.err" \
    'idem: --max-output %s is more than the store can keep: at most 900MiB (943718400 bytes)\n' "$cap"
  assert_status "k-$cap" none
done
[[ ! -e $T/ran ]] || fail "a refused cap ran the command"

# The largest cap accepted is one the store keeps.
capture max idem run -k max --max-output 900MiB -- printf 'ok'
expect_rc 0
assert_bytes "$T/max.out" 'ok'
assert_status max succeeded
