#!/usr/bin/env bash
# How the daemon starts handlers: through the spawn helper (idem-spawn, beside the binary) and,
# when there is none, by fork. Either way the handler leads its own process group, which the
# store has recorded before the handler runs; it gets default signals and an empty mask; an exec
# failure is answered 500 "could not start: <errno message>" and recorded as failed.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"

[[ -x $(dirname "$IDEM_BIN")/idem-spawn ]] || fail "no idem-spawn beside $IDEM_BIN"
# The same binary alone in a directory: no helper to be found, so the daemon forks.
mkdir "$T/alone"
cp "$IDEM_BIN" "$T/alone/idem"

cat >"$T/handler.sh" <<'EOF2'
#!/bin/sh
# What the store holds for this delivery while it runs, and what the handler is.
stored=$("$IDEM_BIN" show "/hooks/s#$IDEM_KEY" --json | "$IDEM_HELPERS/jsonq" /process_group)
echo "pid $$"
echo "pgid $(ps -o pgid= -p $$ | tr -d ' ')"
echo "stored $stored"
grep -E '^Sig(Blk|Ign):' /proc/self/status
EOF2
printf '#!/bin/sh\necho should not run\n' >"$T/plain.sh"
chmod +x "$T/handler.sh"
cat >"$T/serve.json" <<EOF2
{"hooks": [
  {"path": "/hooks/s", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}},
  {"path": "/hooks/missing", "command": ["$T/no/such/handler"], "key": {"header": "X-Key"}},
  {"path": "/hooks/plain", "command": ["$T/plain.sh"], "key": {"header": "X-Key"}},
  {"path": "/hooks/onpath", "command": ["idem-no-such-handler-on-path"], "key": {"header": "X-Key"}}
]}
EOF2

line_of() { sed -n "s/^$1[:[:space:]]*//p" "$T/resp.body"; }

for way in helper fork; do
  bin=$IDEM_BIN
  [[ $way == helper ]] || bin=$T/alone/idem
  DAEMON=$way IDEM_BIN=$bin start_daemon "$T/serve.json"

  post /hooks/s 'body' "X-Key: $way"
  expect_http 200
  pid=$(line_of pid)
  [[ $pid =~ ^[0-9]+$ ]] || fail "$way: no pid in $(cat "$T/resp.body")"
  assert_eq "$pid" "$(line_of pgid)" "$way: the handler leads its own group"
  assert_eq "$pid" "$(line_of stored)" "$way: the group the store held while the handler ran"
  assert_eq 0000000000000000 "$(line_of SigBlk)" "$way: the handler's blocked signals"
  assert_eq 0000000000000000 "$(line_of SigIgn)" "$way: the handler's ignored signals"

  for hook in missing onpath; do
    post /hooks/$hook 'body' "X-Key: $way"
    expect_problem 500
    grep -qF 'could not start: No such file or directory' "$T/resp.body" ||
      fail "$way, $hook: $(cat "$T/resp.body")"
    assert_status "/hooks/$hook#$way" failed
  done
  chmod 644 "$T/plain.sh"
  post /hooks/plain 'body' "X-Key: $way"
  expect_problem 500
  grep -qF 'could not start: Permission denied' "$T/resp.body" || fail "$way, plain: $(cat "$T/resp.body")"
  assert_status "/hooks/plain#$way" failed
  # A failed start is a failure: the redelivery runs it, once it can start.
  chmod 755 "$T/plain.sh"
  post /hooks/plain 'body' "X-Key: $way"
  expect_http 200
  assert_body 'should not run\n'
  stop_daemon "$way"
done
