#!/usr/bin/env bash
# A record's detail page and its download against the size of its output, and a key's history
# against its attempts (issue 33, points 8 and 9):
#   - a record whose stdout is MB MiB (with a line of stderr after it), stored by `idem run`;
#     `idem serve --ui` on its store; the daemon's peak RSS (VmHWM) at rest, then after one view
#     of /ui/record, after VIEWS views at once, after a download of /ui/output (stdout), and
#     each one's time;
#   - a key with ATTEMPTS history rows (put in with the sqlite3 CLI, as a store from before the
#     bound would hold them): the time of the claim that trims them to the newest 100, then
#     `idem show`'s time and peak RSS, and the size of the detail page.
# Usage: bench/ui_detail.sh [IDEM_BIN]   (env: MB=100 VIEWS=8 ATTEMPTS=100000)
set -euo pipefail
idem_bin=$(realpath "${1:-$(dirname "$0")/../build/idem}")
genbytes=$(dirname "$idem_bin")/tests/genbytes
mb=${MB:-100}
views=${VIEWS:-8}
attempts=${ATTEMPTS:-100000}
command -v curl >/dev/null || { echo "curl is missing (scripts/deps.sh installs it)" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 is missing (scripts/deps.sh installs it)" >&2; exit 1; }
[[ -x $genbytes ]] || { echo "no $genbytes: build the tests (scripts/test.sh)" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-ui-detail.XXXXXX")
pid=
cleanup() {
  [[ -z $pid ]] || kill "$pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
export IDEM_DB=$dir/idem.db
now_ms() { local t=${EPOCHREALTIME/./}; echo $((10#$t / 1000)); }
hwm_mib() { awk '$1 == "VmHWM:" { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
rss_mib() { awk '$1 == "VmRSS:" { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

"$idem_bin" run -k big --max-output 900MiB -- sh -c \
  "'$genbytes' $((mb * 1024 * 1024)) 1; echo done >&2" >/dev/null 2>&1
"$idem_bin" run -k small -- echo small >/dev/null

"$idem_bin" serve --ui --ledger --listen 127.0.0.1:0 --port-file port 2>serve.log &
pid=$!
for _ in $(seq 200); do [[ -s port ]] && break; sleep 0.05; done
[[ -s port ]] || { echo "idem serve did not start: $(cat serve.log)" >&2; exit 1; }
url=http://127.0.0.1:$(<port)
fetch() { curl -sS -o "$2" -w '%{http_code}' "$url$1" >/dev/null; }
at_once() {  # at_once N PATH: N fetches of PATH at once
  local i f=()
  for i in $(seq "$1"); do fetch "$2" "view$i.html" & f+=($!); done
  for i in "${f[@]}"; do wait "$i"; done
}
# Warm: the workers' threads and store connections, on a small record.
at_once "$views" "/ui/record?key=small"
printf 'idem %s, output %d MiB\n' "$("$idem_bin" --version | head -1)" "$mb"
printf '%-36s %10s %12s\n' "" "time (ms)" "peak RSS MiB"
printf '%-36s %10s %12s\n' "daemon at rest (warm)" "-" "$(hwm_mib "$pid")"
t=$(now_ms); fetch "/ui/record?key=big" one.html; t=$(( $(now_ms) - t ))
printf '%-36s %10d %12s\n' "one detail view" "$t" "$(hwm_mib "$pid")"
t=$(now_ms); at_once "$views" "/ui/record?key=big"; t=$(( $(now_ms) - t ))
printf '%-36s %10d %12s\n' "$views detail views at once" "$t" "$(hwm_mib "$pid")"
t=$(now_ms); fetch "/ui/output?key=big&stream=stdout" stdout.bin; t=$(( $(now_ms) - t ))
printf '%-36s %10d %12s\n' "download of stdout ($(( $(stat -c %s stdout.bin) / 1048576 )) MiB)" "$t" "$(hwm_mib "$pid")"
printf '%-36s %10s %12s\n' "RSS now" "-" "$(rss_mib "$pid")"
printf 'detail page: %d bytes\n' "$(stat -c %s one.html)"

# A history from before the bound: ATTEMPTS rows of one key.
"$idem_bin" run -k many -- false >/dev/null 2>&1 || true
sqlite3 "$IDEM_DB" >/dev/null <<SQL
PRAGMA busy_timeout = 5000;
WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < $attempts)
INSERT INTO attempts (key, number, started_by, owner_host, owner_pid, started_at, ended_at,
                      outcome, reason, exit_code)
SELECT 'many', i, 'run', 'bench', 1, 1700000000000 + i, 1700000000001 + i, 'failed', 'exit', 1
FROM n;
UPDATE records SET attempt = $attempts WHERE key = 'many';
SQL
/usr/bin/time -f '%e %M' -o show.time "$idem_bin" show many >/dev/null
printf '%-36s %10.0f %12.1f\n' "idem show, $attempts attempts" \
  "$(awk '{ print $1 * 1000 }' show.time)" "$(awk '{ print $2 / 1024 }' show.time)"
t=$(now_ms); fetch "/ui/record?key=many" many.html; t=$(( $(now_ms) - t ))
printf '%-36s %10d %12s  (%d bytes)\n' "detail page, $attempts attempts" "$t" "$(hwm_mib "$pid")" "$(stat -c %s many.html)"
t=$(now_ms); "$idem_bin" run -k many -- false >/dev/null 2>&1 || true; t=$(( $(now_ms) - t ))
printf '%-36s %10d %12s\n' "the claim that trims them to 100" "$t" "-"
/usr/bin/time -f '%e %M' -o show.time "$idem_bin" show many >/dev/null
printf '%-36s %10.0f %12.1f\n' "idem show, then" \
  "$(awk '{ print $1 * 1000 }' show.time)" "$(awk '{ print $2 / 1024 }' show.time)"
printf 'history rows kept: %s\n' "$(sqlite3 "$IDEM_DB" "SELECT count(*) FROM attempts WHERE key = 'many'")"
