#!/usr/bin/env bash
# The delivery-log page in a real browser (tests/node/ui_browser.js: chromium headless through
# puppeteer-core) against `idem serve --ui` with a failing hook: the login (asked, by the one-time
# link, which works once), list, filter, live update, detail, a running delivery's output as it
# comes, re-run, a form forged by a page of
# the hooks' origin refused, remove; the queue and schedules views. The screenshots are kept in $IDEM_ARTIFACTS/ui (default:
# build/artifacts/ui beside this build, or the test's folder), printed at the end.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/ui_lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/proxy_lib.sh"
chromium=${IDEM_CHROMIUM:-/usr/bin/chromium}
[[ -x $chromium ]] || fail "$chromium is missing (scripts/deps.sh installs chromium)"
use_node_packages

artifacts=${IDEM_ARTIFACTS:-$(dirname "$IDEM_BIN")/artifacts}/ui
mkdir -p "$artifacts"
artifacts=$(cd "$artifacts" && pwd)

failing_hook_config
# Beside it, a serial hook whose first delivery holds its group: the queue view shows its line.
mkfifo "$T/q-hold"
cat >"$T/q.sh" <<'EOF2'
#!/bin/sh
[ "$IDEM_HEADER_X_KEY" = held ] && read x < "$(dirname "$0")/q-hold"
echo "ran $IDEM_HEADER_X_KEY"
EOF2
chmod +x "$T/q.sh"
# And a hook whose handler writes a line, then one more at each of two gates the browser opens:
# the detail of its running delivery shows them as they come.
mkfifo "$T/live-1" "$T/live-2"
cat >"$T/live.sh" <<'EOF2'
#!/bin/sh
d=$(dirname "$0")
echo "live line 1"
read x < "$d/live-1"
echo "live line 2 <b>not bold</b>"
echo "live warning" >&2
read x < "$d/live-2"
echo "live line 3"
EOF2
chmod +x "$T/live.sh"
cat >"$T/serve.json" <<EOF2
{"hooks": [{"path": "/hooks/x", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}},
           {"path": "/hooks/q", "command": ["$T/q.sh"], "key": {"header": "X-Key"}, "serial": {}},
           {"path": "/hooks/live", "command": ["$T/live.sh"], "key": {"header": "X-Key"}}]}
EOF2
# Two expectations (contract §11) for the schedules view: one whose due times pass with no run
# (its pattern markup, shown as text), one with a run.
idem expect '<b>sched</b>-' --every 1s --grace 1s
idem expect nightly- --cron '30 2 * * *' --tz Europe/Paris --max-runtime 2h
idem run -k nightly-1 -- true >/dev/null
missed_found() { idem check >"$T/check.out" || true; file_has "$T/check.out" "missed <b>sched</b>-"; }
WAIT_SECONDS=30 wait_until "a missed due time is found" missed_found
ui_start "$T/serve.json"
RESP=held bg held post /hooks/q 'held' 'X-Key: held'
wait_until "the serial hook's first delivery runs" status_is '/hooks/q#held' running
for key in '<i>q1</i>' q2; do
  post /hooks/q "$key" "X-Key: $key"
  expect_http 202
done
RESP=live bg live post /hooks/live 'l' 'X-Key: l1'
wait_until "the live hook's delivery runs" status_is '/hooks/live#l1' running
post /hooks/x '<b>body-1</b>' 'X-Key: k1'
expect_http 500
touch "$T/ok"
post /hooks/x 'body-2' 'X-Key: k2'
expect_http 200
rm "$T/ok"
post /hooks/x 'body-3' 'X-Key: k3'
expect_http 500

capture browser timeout -k 5 120 node "$node_dir/ui_browser.js" "$URL" "$UI_LOGIN" "$artifacts" "$T/ok"
cat "$T/browser.out"
expect_rc 0
bg_wait live
assert_status '/hooks/live#l1' succeeded
assert_status '/hooks/x#k4' failed
[[ -z $(idem ls --json | grep -F '"/hooks/x#k1"') ]] || fail "k1 is still stored"
release_fifo "$T/q-hold"
bg_wait held
wait_until "the serial hook's line drains" status_is '/hooks/q#q2' succeeded
for shot in login list filtered detail rerun forged removed queues schedules long-key live-1 live-2 live-end; do
  [[ -s $artifacts/$shot.png ]] || fail "no screenshot $shot.png in $artifacts"
done
echo "screenshots: $artifacts"
stop_daemon
