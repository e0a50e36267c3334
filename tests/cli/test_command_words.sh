#!/usr/bin/env bash
# idem's options end at the command's first word (as with env, timeout, flock): every word after
# it is the command's own, idem's option names and `--` included. Options before it, `--` before
# it, and --db before it (contract §2) work as before; `-k --` is a missing key.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

# `ls -q` shows a tab in a name as '?': the -q after the command is ls's, not idem's --quiet.
mkdir "$T/dir"
: >"$T/dir/"$'a\tb'
capture ls idem run -k a ls -q "$T/dir"
expect_rc 0
assert_bytes "$T/ls.out" 'a?b\n'
capture args idem run -k a2 printf '[%s]' -q -v --quiet-replay
expect_rc 0
assert_bytes "$T/args.out" '[-q][-v][--quiet-replay]'

# `--timeout 1s` after the command is the command's: no timeout applies, nothing is cut.
capture timeout idem run -k b sh -c 'printf "%s|" "$@"' sh --timeout 1s
expect_rc 0
assert_bytes "$T/timeout.out" '%s' '--timeout|1s|'
assert_eq '["sh","-c","printf \"%s|\" \"$@\"","sh","--timeout","1s"]' \
  "$(idem show b --json | jsonq /request/argv)" "argv recorded for b"

# A `--` after the command's first word is the command's too.
capture dashes idem run -k c printf '[%s]' -- x
expect_rc 0
assert_bytes "$T/dashes.out" '[--][x]'

# -k -- is a missing key, not the key '--': 64, one line, nothing ran, nothing recorded.
for sub in run begin; do
  capture "missing-$sub" idem "$sub" -k -- sh -c 'echo ran > "$1"' sh "$T/ran"
  expect_rc 64
  assert_idem_error
  grep -q 'missing KEY' "$T/missing-$sub.err" || fail "no 'missing KEY' in: $(cat "$T/missing-$sub.err")"
done
capture missing-end idem end -k -- --exit 0
expect_rc 64
assert_idem_error
[[ ! -e $T/ran ]] || fail "a command ran for -k --"
assert_eq none "$(idem status -- --)" "status of the key '--'"

# Options before the command still work, with or without `--`.
capture t1 idem run -k d --timeout 200ms sleep 5
expect_rc 124
capture q1 idem run -k e --quiet-replay -- printf once
assert_bytes "$T/q1.out" 'once'
capture q2 idem run -k e --quiet-replay printf once
expect_rc 0
assert_empty "$T/q2.out"

# --db before the command word chooses the store (before or after the subcommand's name); after
# it, it is the command's argument.
if [[ -z ${IDEM_STORE:-} ]]; then
  capture db1 idem run --db "$T/one.db" -k f printf one
  expect_rc 0
  capture db2 idem --db "$T/two.db" run -k g printf two
  expect_rc 0
  assert_eq succeeded "$(idem --db "$T/one.db" status f)" "f in one.db"
  assert_eq succeeded "$(idem --db "$T/two.db" status g)" "g in two.db"
  assert_eq none "$(idem status f)" "f in the default store"
  capture db3 idem run -k h printf '[%s]' --db "$T/three.db"
  expect_rc 0
  assert_bytes "$T/db3.out" "[--db][$T/three.db]"
  [[ ! -e $T/three.db ]] || fail "--db after the command opened a store"
  assert_status h succeeded
fi

# each: the same rule for the handler's words.
printf '{"id":"m1"}\n' >"$T/in.jsonl"
capture each idem each --key-field /id sh -c 'printf "%s|" "$@"' sh -q --jobs 2 <"$T/in.jsonl"
expect_rc 0
assert_bytes "$T/each.out" '%s' '-q|--jobs|2|'
capture each-missing idem each --key-field /id <"$T/in.jsonl"
expect_rc 64

# A word in brackets is the command's as it is (CLI11 would read "[a,b]" as a list).
capture brackets idem run -k i -- printf '<%s>' '[a,b]' '[]'
expect_rc 0
assert_bytes "$T/brackets.out" '<[a,b]><[]>'
