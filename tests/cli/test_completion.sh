#!/usr/bin/env bash
# The shell completions in completions/: bash's completion function, called as bash calls it
# (COMP_WORDS, COMP_CWORD, COMP_LINE, COMP_POINT) in a fresh bash with and without the helpers of
# the bash-completion package, offers exactly the expected subcommands, flags and values, and the
# keys of the store (two records made here with idem run), honouring --db. The zsh and fish files
# must parse (and fish's must complete keys) where those shells are installed.
tests_dir=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}" && pwd)
completions=$tests_dir/../completions
source "$tests_dir/cli/lib.sh"

export IDEM_COMPLETION=$completions/idem.bash
[[ -f $IDEM_COMPLETION ]] || fail "no $IDEM_COMPLETION"
# The completion calls `idem` as typed on the line: make that the binary under test.
mkdir "$T/bin"
ln -s "$IDEM_BIN" "$T/bin/idem"
export PATH="$T/bin:$PATH"

cat >"$T/complete.sh" <<'EOF'
# complete.sh HELPERS LINE WORD...: completes LINE, the cursor at its end, whose words (split as
# bash splits them, COMP_WORDBREAKS included) are WORD...; prints COMPREPLY, one per line, sorted.
helpers=$1 line=$2
shift 2
[[ $helpers == 1 ]] && source /usr/share/bash-completion/bash_completion
source "$IDEM_COMPLETION"
spec=$(complete -p idem) || { echo "no completion registered for idem" >&2; exit 3; }
[[ $spec == *" -F "* ]] || { echo "not a completion function: $spec" >&2; exit 3; }
fn=${spec#* -F }
fn=${fn%% *}
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE=$line
COMP_POINT=${#line}
COMP_TYPE=9
COMP_KEY=9
COMPREPLY=()
"$fn" idem "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort
EOF

# offers WANT LINE WORD...: completing LINE offers exactly WANT (newline-separated, sorted), in
# every mode: without helpers, and with bash-completion's when the package is installed.
modes=(0)
if [[ -f /usr/share/bash-completion/bash_completion ]]; then
  modes+=(1)
else
  echo "note: bash-completion is not installed; testing without its helpers only" >&2
fi
offers() {
  local want=$1 line=$2 mode got
  shift 2
  for mode in "${modes[@]}"; do
    got=$(bash --norc --noprofile "$T/complete.sh" "$mode" "$line" "$@") ||
      fail "completing '$line' (helpers: $mode) failed"
    assert_eq "$want" "$got" "completions of '$line<TAB>' (bash-completion helpers: $mode)"
  done
}
nl=$'\n'

# Subcommands and flags.
offers "rm${nl}run" "idem r" idem r
offers "--timeout" "idem run --ti" idem run --ti
offers "--dry-run" "idem gc --dr" idem gc --dr
offers "--stderr${nl}--stdout" "idem show --std" idem show --std
offers "--db${nl}--help${nl}--store${nl}--version" "idem --" idem --
offers "failed" "idem ls --status f" idem ls --status f
offers "--key-field${nl}--kill-after" "idem each --k" idem each --k
offers "--max-output" "idem each --m" idem each --m
offers "--owner-pid" "idem end --o" idem end --o
offers "--fingerprint" "idem begin --f" idem begin --f
offers "--follow" "idem tail --f" idem tail --f
offers "--every" "idem expect --ev" idem expect --ev
offers "--max-runtime" "idem expect --ma" idem expect --ma
offers "--db${nl}--help${nl}--json${nl}--store" "idem check --" idem check --
# Zone names, from the zoneinfo folder (tzdata); a test folder stands in for it.
mkdir -p "$T/zoneinfo/Europe" "$T/zoneinfo/posix/Europe"
touch "$T/zoneinfo/Europe/Paris" "$T/zoneinfo/Europe/Prague" "$T/zoneinfo/posix/Europe/Paris" "$T/zoneinfo/zone.tab"
TZDIR="$T/zoneinfo" offers "Europe/Paris${nl}Europe/Prague" "idem expect x --tz Europe/P" idem expect x --tz Europe/P
TZDIR="$T/zoneinfo" offers "" "idem expect x --tz zo" idem expect x --tz zo

# The subcommands are asked of the binary: exactly those of `idem --list-commands`.
offers "$(idem --list-commands | cut -f1 | LC_ALL=C sort)" "idem " idem ""
# So a subcommand the completion files do not name (one more row of the table) is offered, with
# the long flags its --help lists.
mkdir "$T/fake"
cat >"$T/fake/idem" <<EOF
#!/bin/sh
case "\$*" in
  --list-commands) "$IDEM_BIN" --list-commands; printf 'frob\tFrobnicate a record\n' ;;
  "frob --help") printf 'Frobnicate a record\nOptions:\n  --wobble N  How much\n' ;;
  *) exec "$IDEM_BIN" "\$@" ;;
esac
EOF
chmod +x "$T/fake/idem"
offers "frob" "$T/fake/idem fr" "$T/fake/idem" fr
offers "--db${nl}--help${nl}--store${nl}--wobble" "$T/fake/idem frob --" "$T/fake/idem" frob --

# Keys from the store: none yet.
offers "" "idem show " idem show ""

capture run1 idem run -k first-key -- true
expect_rc 0
capture run2 idem run -k "second key" -- true
expect_rc 0
offers "first-key${nl}second\\ key" "idem show " idem show ""
offers "first-key" "idem show f" idem show f
offers "second\\ key" "idem status s" idem status s
offers "first-key" "idem tail -f f" idem tail -f f
offers "" "idem tail first-key " idem tail first-key ""
offers "" "idem status first-key " idem status first-key ""
offers "first-key${nl}second\\ key" "idem rm first-key " idem rm first-key ""
offers "first-key" "idem run -k f" idem run -k f
# The patterns of the store's expectations, for `idem expect` (--rm, or a new definition).
offers "" "idem expect --rm " idem expect --rm ""
capture expect idem expect 'nightly-*' --every 1d
expect_rc 0
offers "nightly-\\*" "idem expect --rm " idem expect --rm ""
offers "" "idem expect --every 1d nightly-\\* " idem expect --every 1d "nightly-\\*" ""
offers "second\\ key" "idem begin --key s" idem begin --key s
offers "first-key" "idem end --exit 0 -k fi" idem end --exit 0 -k "fi"
offers "first-key" "idem end --key=f" idem end --key = f
offers "--" "idem run -k first-key " idem run -k first-key ""
# idem's options end at the command's first word: after it, none of idem's flags is offered.
offers "" "idem run -k first-key ./job --ti" idem run -k first-key ./job --ti
offers "" "idem each --key-field /id ./job --jo" idem each --key-field /id ./job --jo

# --db on the command line, before or after the subcommand, chooses the store the keys come from.
capture other idem --db "$T/other.db" run -k other-key -- true
expect_rc 0
offers "other-key" "idem --db $T/other.db show " idem --db "$T/other.db" show ""
offers "other-key" "idem show --db $T/other.db " idem show --db "$T/other.db" ""
offers "" "idem --db $T/missing/none.db show " idem --db "$T/missing/none.db" show ""

# A derived key holds a ':', which splits the word for bash: only the part after it is replaced.
capture derived idem run -- true
expect_rc 0
derived=$(idem ls --prefix cmd: --keys)
[[ $derived == cmd:* ]] || fail "no derived key: '$derived'"
offers "${derived#cmd:}" "idem show cmd:" idem show cmd :

# zsh and fish: the files parse; fish completes subcommands and keys.
if command -v zsh >/dev/null; then
  zsh -n "$completions/_idem" || fail "zsh -n $completions/_idem"
else
  echo "note: zsh is not installed; _idem not checked" >&2
fi
if command -v fish >/dev/null; then
  fish -n "$completions/idem.fish" || fail "fish -n $completions/idem.fish"
  mkdir -p "$T/home"
  # fish_complete LINE: what fish offers for LINE, without descriptions, sorted.
  # shellcheck disable=SC2016 # $argv is fish's
  fish_complete() {
    env HOME="$T/home" XDG_CONFIG_HOME="$T/home/.config" XDG_DATA_HOME="$T/home/.local/share" \
      fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$completions/idem.fish" "$1" |
      cut -f1 | LC_ALL=C sort
  }
  assert_eq "rm${nl}run" "$(fish_complete "idem r")" "fish: completions of 'idem r'"
  assert_eq "$(idem --list-commands | cut -f1 | LC_ALL=C sort)" "$(fish_complete "idem ")" \
    "fish: completions of 'idem '"
  assert_eq "--timeout" "$(fish_complete "idem run --ti")" "fish: completions of 'idem run --ti'"
  assert_eq "--every" "$(fish_complete "idem expect --ev")" "fish: completions of 'idem expect --ev'"
  assert_eq "nightly-*" "$(fish_complete "idem expect --rm ")" "fish: completions of 'idem expect --rm '"
  assert_eq "Europe/Paris${nl}Europe/Prague" "$(TZDIR="$T/zoneinfo" fish_complete "idem expect x --tz Europe/P")" \
    "fish: completions of 'idem expect x --tz Europe/P'"
  assert_eq "$derived${nl}first-key${nl}second key" "$(fish_complete "idem show ")" \
    "fish: completions of 'idem show '"
  assert_eq "first-key" "$(fish_complete "idem tail -f f")" "fish: completions of 'idem tail -f f'"
  assert_eq "other-key" "$(fish_complete "idem --db $T/other.db show ")" \
    "fish: completions of 'idem --db OTHER show '"
else
  echo "note: fish is not installed; idem.fish not checked" >&2
fi
