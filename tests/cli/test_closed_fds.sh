#!/usr/bin/env bash
# idem started with stdin, stdout or stderr closed (cron's `>&-`, a daemon started without them):
# the command runs once, its outcome is stored as succeeded with both streams apart, nothing of
# its output is taken for a signal, and no key is left abandoned. Each of 0, 1 and 2 alone and
# together, for run; `each` and `serve` too.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

# Several writes on each stream, stderr first: each byte of it read back as a "signal" was
# forwarded to the command's group (E = 69, newline = SIGUSR1).
cmd=(sh -c 'echo ERR >&2; echo OUT; echo ERR2 >&2; echo OUT2')

# redirections CLOSED: the shell redirections closing each fd named in CLOSED (e.g. "02"); an
# open stdout or stderr goes to $T/live.out or $T/live.err.
redirections() {
  local r=""
  [[ $1 == *0* ]] && r+=" <&-"
  if [[ $1 == *1* ]]; then r+=" >&-"; else r+=" >\"\$T/live.out\""; fi
  if [[ $1 == *2* ]]; then r+=" 2>&-"; else r+=" 2>\"\$T/live.err\""; fi
  printf '%s' "$r"
}

for closed in 0 1 2 01 02 12 012; do
  # Several rounds: the stray bytes raced the command's exit.
  for round in 1 2 3; do
    key=closed-$closed-$round
    rm -f "$T/live.out" "$T/live.err"
    rc=0
    eval "\"\$IDEM_BIN\" run -k \"\$key\" -- \"\${cmd[@]}\" $(redirections "$closed")" || rc=$?
    assert_eq 0 "$rc" "exit code of run with fd $closed closed (round $round)"
    assert_status "$key" succeeded
    idem show "$key" --stdout >"$T/stored.out"
    idem show "$key" --stderr >"$T/stored.err"
    assert_bytes "$T/stored.out" 'OUT\nOUT2\n'
    assert_bytes "$T/stored.err" 'ERR\nERR2\n'
    [[ $closed == *1* ]] || assert_bytes "$T/live.out" 'OUT\nOUT2\n'
    [[ $closed == *2* ]] || assert_bytes "$T/live.err" 'ERR\nERR2\n'
  done
  # The replay with the same fds closed: the stored code, nothing run again.
  rc=0
  eval "\"\$IDEM_BIN\" run -k \"\$key\" -- false $(redirections "$closed")" || rc=$?
  assert_eq 65 "$rc" "a conflicting command with fd $closed closed"
  rc=0
  eval "\"\$IDEM_BIN\" run -k \"\$key\" -- \"\${cmd[@]}\" $(redirections "$closed")" || rc=$?
  assert_eq 0 "$rc" "exit code of the replay with fd $closed closed"
  [[ $closed == *1* ]] || assert_bytes "$T/live.out" 'OUT\nOUT2\n'
done
idem ls --json >"$T/ls.json"
if grep -q abandoned "$T/ls.json"; then fail "a key was left abandoned: $(cat "$T/ls.json")"; fi

# --- each: the handlers' output, written once each ends, never reaches the self-pipe ------------
printf '{"id":"m%s"}\n' 1 2 3 4 5 6 >"$T/messages.jsonl"
rc=0
"$IDEM_BIN" each --key-field /id -- "${cmd[@]}" <"$T/messages.jsonl" >&- 2>&- || rc=$?
assert_eq 0 "$rc" "exit code of each with stdout and stderr closed"
for i in 1 2 3 4 5 6; do
  assert_status "m$i" succeeded
  idem show "m$i" --stderr >"$T/m.err"
  assert_bytes "$T/m.err" 'ERR\nERR2\n'
done

# --- serve: starts, logs nowhere, runs a hook once and replays it --------------------------------
cat >"$T/hooks.json" <<EOF
[{"id": "echo", "execute-command": "$T/hook.sh", "include-command-output-in-response": true}]
EOF
printf '#!/bin/sh\necho ERR >&2\necho hook-ran\n' >"$T/hook.sh"
chmod +x "$T/hook.sh"
port_file=$T/serve.port
"$IDEM_BIN" serve --listen 127.0.0.1:0 --port-file "$port_file" --hooks "$T/hooks.json" \
  <&- >&- 2>&- &
BG[serve]=$!
_serve_up_or_gone() { [[ -s $port_file ]] || bg_exited serve; }
wait_until "serve writes its port file" _serve_up_or_gone
[[ -s $port_file ]] || fail "serve with fds 0-2 closed exited before listening"
URL=http://127.0.0.1:$(<"$port_file")
get /healthz
assert_eq 200 "$(<"$T/resp.status")" "healthz of serve with fds 0-2 closed"
for round in 1 2; do
  post /hooks/echo '{}'
  assert_eq 200 "$(<"$T/resp.status")" "hook answer (round $round)"
  assert_bytes "$T/resp.body" 'ERR\nhook-ran\n'  # webhook's combined output
done
kill -TERM "$(bg_pid serve)"
bg_wait serve
expect_rc 0
