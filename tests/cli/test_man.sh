#!/usr/bin/env bash
# The man pages built from man/*.scd: each renders with man(1) without a single warning, every
# subcommand that `idem --list-commands` lists has its page, and every long flag that `idem --help`
# and `idem SUB --help` print appears, as a whole word, in idem(1) and idem-SUB(1).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

man_dir=$(dirname "$IDEM_BIN")/man
command -v man >/dev/null || skip "man(1) is not installed (scripts/deps.sh installs man-db)"
if [[ ! -d $man_dir ]] || ! compgen -G "$man_dir/*.1" >/dev/null; then
  # man/CMakeLists.txt builds the pages only where scdoc was found at configure time.
  command -v scdoc >/dev/null && fail "no man pages in $man_dir although scdoc is installed (reconfigure the build)"
  skip "scdoc is not installed, so no man pages were built"
fi

export MANWIDTH=80 MANPAGER=cat PAGER=cat
# render PAGE: the page as a reader sees it, as plain text (man strips the formatting when its
# output is no terminal), with words that were broken after a hyphen at a line's end put back
# together ("idem-" + "run(1)").
render() {
  man -l "$1" 2>/dev/null | sed -e ':a' -e 'N' -e '$!ba' -e 's/-\n *\([a-z(]\)/-\1/g'
}

# Every page renders, and renders cleanly.
pages=0
for page in "$man_dir"/*.1; do
  pages=$((pages + 1))
  warnings=$(man --warnings -l "$page" 2>&1 >/dev/null) || fail "man -l $page failed: $warnings"
  assert_eq "" "$warnings" "warnings of man --warnings -l ${page##*/}"
  render "$page" >"$T/page.txt"
  name=${page##*/}
  name=${name%.1}
  grep -q "^NAME" "$T/page.txt" || fail "${page##*/} has no NAME section"
  grep -qE "^ +$name - " "$T/page.txt" || fail "${page##*/}: the NAME line does not start with '$name - '"
done

# long_flags TEXT_FILE: the --flags a help text mentions, one per line, each once.
long_flags() { grep -oE -- '--[a-z][a-z0-9-]*' "$1" | sort -u; }

# check_flags HELP_FILE PAGE: every long flag of HELP_FILE is a whole word in PAGE's text.
check_flags() {
  local help=$1 page=$2 flag n=0
  [[ -f $page ]] || fail "no man page $page"
  render "$page" >"$T/page.txt"
  while IFS= read -r flag; do
    n=$((n + 1))
    grep -qE -- "(^|[^a-z0-9-])$flag([^a-z0-9-]|\$)" "$T/page.txt" ||
      fail "${page##*/} does not mention $flag (from $(head -c 60 "$help" | head -n 1)...)"
  done < <(long_flags "$help")
  ((n > 0)) || fail "no long flag found in the help for ${page##*/}"
}

capture help idem --help
expect_rc 0
check_flags "$T/help.out" "$man_dir/idem.1"

# The subcommands: those of `idem --list-commands` (which test_help.sh checks against idem --help).
capture list idem --list-commands
expect_rc 0
cut -f1 "$T/list.out" >"$T/subcommands"
assert_eq 1 "$(grep -cx run "$T/subcommands")" "run among the subcommands of idem --list-commands"
subs=0
while IFS= read -r sub; do
  subs=$((subs + 1))
  [[ -f $man_dir/idem-$sub.1 ]] || fail "subcommand '$sub' has no man page idem-$sub.1"
  capture "help-$sub" idem "$sub" --help
  expect_rc 0
  # A subcommand's help, not the top-level one.
  grep -q "^Usage: idem $sub" "$T/help-$sub.out" || fail "idem $sub --help printed no 'Usage: idem $sub'"
  check_flags "$T/help-$sub.out" "$man_dir/idem-$sub.1"
  # idem(1) names every subcommand's page.
  grep -qF "idem-$sub(1)" <(render "$man_dir/idem.1") || fail "idem(1) does not refer to idem-$sub(1)"
done <"$T/subcommands"

# One page per subcommand plus idem(1), and nothing else.
assert_eq $((subs + 1)) "$pages" "number of man pages (idem.1 and one per subcommand)"
