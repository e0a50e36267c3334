#!/usr/bin/env bash
# Every subcommand's --help: exit 0, a one-line purpose first, every option with its value's
# default where it has one, and at least one example. The subcommands are those of the hidden
# `idem --list-commands` (the table in src/cli/command_table.cpp), which `idem --help` lists too, in
# the same order and with the same purposes.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture top idem --help
expect_rc 0
capture list idem --list-commands
expect_rc 0
subs=$(cut -f1 "$T/list.out")
grep -qx run <<<"$subs" || fail "no run among idem --list-commands: $(cat "$T/list.out")"
listed=$(awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}' "$T/top.out")
assert_eq "$subs" "$listed" "subcommands of idem --help"
while IFS=$'\t' read -r sub purpose; do
  [[ -n $purpose ]] || fail "idem --list-commands gives $sub no purpose"
  grep -F -- "$purpose" "$T/top.out" | grep -qE "^  $sub +" || fail "idem --help does not list '$sub  $purpose'"
done <"$T/list.out"
! grep -q -- --list-commands "$T/top.out" || fail "idem --help shows the hidden --list-commands"
grep -q '^Example' "$T/top.out" || fail "idem --help has no example"
for sub in $subs; do
  capture "help-$sub" idem "$sub" --help
  expect_rc 0
  purpose=$(head -n 1 "$T/help-$sub.out")
  [[ -n $purpose && $purpose != Usage* ]] || fail "idem $sub --help does not start with its purpose"
  grep -q '^Example' "$T/help-$sub.out" || fail "idem $sub --help has no example"
done
# Options that take a value and have a default show it.
for pair in "run --ttl 24h" "run --kill-after 10s" "run --max-output 16MiB" "each --ttl 24h" \
  "each --jobs 1" "begin --ttl 24h" "end --exit 0" "serve --listen 127.0.0.1:8787" \
  "serve --grace 30s" "serve --request-timeout 10s" "serve --max-connections 64"; do
  read -r sub flag default <<<"$pair"
  grep -E -- "^ +(-[a-z],)?$flag [^a-z]*.*=$default( |\$)" "$T/help-$sub.out" >/dev/null ||
    fail "idem $sub --help does not show $flag's default $default"
done
