#!/usr/bin/env bash
# How the daemon starts handlers (a child created with clone(CLONE_VM), which execs the handler
# itself): the handler leads its own process group, which the store has recorded before the
# handler runs; it gets default signals and an empty mask, whatever idem ignores; an exec failure
# is answered 500 "could not start: <errno message>" and recorded as failed; a file without '#!'
# runs under /bin/sh. No second program is exec'd on the way.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

cat >"$T/handler.sh" <<'EOF2'
#!/bin/sh
# What the store holds for this delivery while it runs, and what the handler is.
stored=$("$IDEM_BIN" show "/hooks/s#$IDEM_KEY" --json | "$IDEM_HELPERS/jsonq" /process_group)
echo "pid $$"
echo "pgid $(ps -o pgid= -p $$ | tr -d ' ')"
echo "ppid $(ps -o ppid= -p $$ | tr -d ' ')"
echo "stored $stored"
grep -E '^Sig(Blk|Ign):' /proc/self/status
EOF2
printf '#!/bin/sh\necho should not run\n' >"$T/plain.sh"
printf 'echo sh ran it\n' >"$T/noshebang"
chmod +x "$T/handler.sh" "$T/noshebang"
cat >"$T/serve.json" <<EOF2
{"hooks": [
  {"path": "/hooks/s", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}},
  {"path": "/hooks/missing", "command": ["$T/no/such/handler"], "key": {"header": "X-Key"}},
  {"path": "/hooks/plain", "command": ["$T/plain.sh"], "key": {"header": "X-Key"}},
  {"path": "/hooks/noshebang", "command": ["$T/noshebang"], "key": {"header": "X-Key"}},
  {"path": "/hooks/onpath", "command": ["idem-no-such-handler-on-path"], "key": {"header": "X-Key"}}
]}
EOF2

line_of() { sed -n "s/^$1[:[:space:]]*//p" "$T/resp.body"; }

start_daemon "$T/serve.json"
daemon=$(bg_pid daemon)

post /hooks/s 'body' "X-Key: a"
expect_http 200
pid=$(line_of pid)
[[ $pid =~ ^[0-9]+$ ]] || fail "no pid in $(cat "$T/resp.body")"
assert_eq "$pid" "$(line_of pgid)" "the handler leads its own group"
assert_eq "$pid" "$(line_of stored)" "the group the store held while the handler ran"
assert_eq "$daemon" "$(line_of ppid)" "the handler's parent: the daemon"
assert_eq 0000000000000000 "$(line_of SigBlk)" "the handler's blocked signals"
assert_eq 0000000000000000 "$(line_of SigIgn)" "the handler's ignored signals"

for hook in missing onpath; do
  post /hooks/$hook 'body' "X-Key: a"
  expect_problem 500
  grep -qF 'could not start: No such file or directory' "$T/resp.body" ||
    fail "$hook: $(cat "$T/resp.body")"
  assert_status "/hooks/$hook#a" failed
done
chmod 644 "$T/plain.sh"
post /hooks/plain 'body' "X-Key: a"
expect_problem 500
grep -qF 'could not start: Permission denied' "$T/resp.body" || fail "plain: $(cat "$T/resp.body")"
assert_status "/hooks/plain#a" failed
# A failed start is a failure: the redelivery runs it, once it can start.
chmod 755 "$T/plain.sh"
post /hooks/plain 'body' "X-Key: a"
expect_http 200
assert_body 'should not run\n'
# A file without '#!' runs under /bin/sh, as execvpe runs it.
post /hooks/noshebang 'body' "X-Key: a"
expect_http 200
assert_body 'sh ran it\n'
stop_daemon
