#!/bin/sh
# The command of the webhook compatibility scenarios (tests/cli/test_serve_webhook_compat.sh):
# prints what it was given, one item a line, so that two servers' runs can be compared byte for
# byte: each argument (numbered, so that empty ones show), the HOOK_* and EV_* variables sorted
# (a variable naming an existing file is shown as that file's contents instead of its path, which
# differs between servers), and the working directory relative to $IDEM_TEST_DIR. The same text
# goes to a new file in $ECHO_DIR (when set), for hooks whose answer does not carry the output.
# Arguments of the form exit=N make it exit N; stderr=TEXT prints TEXT on stderr between the
# arguments and the variables (to see whether stdout and stderr keep their order).
set -u
n=0
code=0
out=""  # not printed yet
rec=""  # the whole record
nl='
'
say() {
  out="$out$1$nl"
  rec="$rec$1$nl"
}
for a in "$@"; do
  n=$((n + 1))
  say "arg $n: $a"
  case $a in
    exit=*) code=${a#exit=} ;;
    stderr=*)
      printf '%s' "$out"
      out=""
      printf '%s\n' "${a#stderr=}" >&2
      rec="${rec}stderr: ${a#stderr=}$nl"
      ;;
  esac
done
# From the environment this process started with: sh drops names such as HOOK_a.b from its own.
# A value holding a newline shows its first line only.
vars=$(tr '\0' '\n' <"/proc/$$/environ" | grep -E '^(HOOK|EV)_' | LC_ALL=C sort)
while IFS= read -r line; do
  [ -n "$line" ] || continue
  v=${line%%=*}
  value=${line#*=}
  if [ "${value#/}" != "$value" ] && [ -f "$value" ]; then
    say "file $v: $(cat "$value")"
    [ -z "${ECHO_DIR:-}" ] || printf '%s\n' "$value" >>"$ECHO_DIR/files"
  else
    say "env $v=$value"
  fi
done <<EOF
$vars
EOF
case $PWD in
  "${IDEM_TEST_DIR:-/nonexistent}"*) say "cwd: T${PWD#"$IDEM_TEST_DIR"}" ;;
  *) say "cwd: $PWD" ;;
esac
printf '%s' "$out"
if [ -n "${ECHO_DIR:-}" ]; then
  # Written whole, then renamed: the test counts finished runs by these files.
  printf '%s' "$rec" >"$ECHO_DIR/.run.$$"
  mv "$ECHO_DIR/.run.$$" "$ECHO_DIR/run.$$"
fi
exit "$code"
