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

# ui_fetch PATH FILE: GETs the page's PATH into FILE as a browser that has opened the page
# would; prints the HTTP status. The one place these tests reach the page (its listener and
# credentials).
ui_fetch() {
  curl -sS --max-time 120 -o "$2" -w '%{http_code}' "$URL$1"
}

# rss_kib PID KIND: the process's VmRSS or VmHWM (its peak) in KiB, from /proc.
rss_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
