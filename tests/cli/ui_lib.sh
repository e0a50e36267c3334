# shellcheck shell=bash
# Helpers of the delivery-log page's tests (test_ui_http.sh, test_ui_browser.sh). Source after
# lib.sh and serve_lib.sh.

# failing_hook_config: writes $T/serve.json, one hook /hooks/x keyed by X-Key whose handler
# ($T/handler.sh) prints "ran KEY" and fails with exit 3 ("handler failed" on stderr) until the
# file $T/ok exists.
failing_hook_config() {
  cat >"$T/handler.sh" <<'EOF2'
#!/bin/sh
echo "ran $IDEM_HEADER_X_KEY"
[ -e "$(dirname "$0")/ok" ] && exit 0
echo "handler failed" >&2
exit 3
EOF2
  chmod +x "$T/handler.sh"
  cat >"$T/serve.json" <<EOF2
{"hooks": [{"path": "/hooks/x", "command": ["$T/handler.sh"], "key": {"header": "X-Key"}}]}
EOF2
}

# The page's own listener, as the daemon of the last ui_start printed it: UI its base URL
# (http://127.0.0.1:PORT), UI_LOGIN the one-time login link, UI_TOKEN the token file's token.
UI=
UI_LOGIN=
UI_TOKEN=

# ui_start CONFIG [ARG...]: start_daemon CONFIG --ui ARG..., then sets UI, UI_LOGIN and UI_TOKEN
# from the daemon's log and the token file beside the store.
ui_start() {
  local config=$1
  shift
  start_daemon "$config" --ui "$@"
  ui_found
}

# ui_found: UI, UI_LOGIN and UI_TOKEN of the daemon $DAEMON (started with --ui by other means).
ui_found() {
  local log=$T/$DAEMON.err
  UI=$(grep -o '"ui":"[^"]*"' "$log" | tail -n 1 | sed 's/^"ui":"//; s#/ui/"$##')
  UI_LOGIN=$(grep '"event":"ui_login"' "$log" | tail -n 1 | grep -o '"url":"[^"]*"' |
    sed 's/^"url":"//; s/"$//')
  [[ $UI == http*://* && $UI_LOGIN == "$UI/ui/login?token="* ]] ||
    fail "no page address or login link in $log: $(grep -F '"ui' "$log" | head -c 1000)"
  UI_TOKEN=$(<"$IDEM_DB.ui-token")
}

# ui_get PATH: get PATH from the page's listener with the UI token as a bearer token (as a
# script would); the answer as get's.
ui_get() {
  local URL=$UI
  local CURL_EXTRA=("${CURL_EXTRA[@]}" -H "Authorization: Bearer $UI_TOKEN")
  get "$1"
}

# ui_fetch PATH FILE: GETs the page's PATH into FILE as a browser that has opened the page
# would; prints the HTTP status. The one place these tests reach the page (its listener and
# credentials).
ui_fetch() {
  curl -sS --max-time 120 -H "Authorization: Bearer $UI_TOKEN" -o "$2" -w '%{http_code}' "$UI$1"
}

# rss_kib PID KIND: the process's VmRSS or VmHWM (its peak) in KiB, from /proc.
rss_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
