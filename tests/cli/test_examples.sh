#!/usr/bin/env bash
# The examples work as documented: examples/cron (crontab + backup-wrapper.sh), examples/queue
# (consume.sh + orders.jsonl), examples/payment/charge.sh and examples/webhook (hooks.yaml +
# deploy.sh, served by `idem serve --hooks`), each with its real work replaced by
# a harmless command through the environment variable it documents, against a store in $T.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
# A killed owner is abandoned once its lease runs out on PostgreSQL (await_abandoned); SQLite
# takes no lease.
export IDEM_LEASE=2s
root=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/.." && pwd)
ex=$root/examples
# The examples call `idem` from PATH; their temp files land in $T.
mkdir "$T/bin"
ln -s "$IDEM_BIN" "$T/bin/idem"
export PATH="$T/bin:$PATH" TMPDIR=$T
for f in cron/crontab cron/backup-wrapper.sh queue/consume.sh queue/orders.jsonl payment/charge.sh; do
  [[ -f $ex/$f ]] || fail "no $ex/$f"
done
for f in cron/backup-wrapper.sh queue/consume.sh payment/charge.sh; do
  [[ -x $ex/$f ]] || fail "$ex/$f is not executable"
  sh -n "$ex/$f" || fail "$ex/$f: syntax error"
done

# children_of PID: the pids whose parent is PID.
children_of() {
  local stat content fields
  for stat in /proc/[0-9]*/stat; do
    content=$(cat "$stat" 2>/dev/null) || continue
    read -r -a fields <<<"${content##*) }"  # state, ppid, ...
    [[ ${fields[1]} == "$1" ]] || continue
    stat=${stat#/proc/}
    echo "${stat%/stat}"
  done
}

# === examples/cron ==============================================================================
wrapper=$ex/cron/backup-wrapper.sh
# The backup stand-in: fails while $DISK_FULL exists, waits on the FIFO $GATE when set, logs the
# day it ran for in $RUNS.
export RUNS=$T/backup-runs DISK_FULL=$T/disk-full
export BACKUP_CMD='[ ! -e "$DISK_FULL" ] || { echo "disk full" >&2; exit 2; }
[ -z "${GATE:-}" ] || { echo $$ > "$GATE.pid"; read x < "$GATE"; }
echo "$BACKUP_DAY" >> "$RUNS"; echo "backed up $BACKUP_DAY (attempt $IDEM_ATTEMPT)"'
export BACKUP_DAY=2026-01-01
# First firing of the day: the backup runs, its output is what cron mails.
capture cron1 "$wrapper"
expect_rc 0
assert_bytes "$T/cron1.out" 'backed up 2026-01-01 (attempt 1)\n'
assert_empty "$T/cron1.err"
# Later firings: replayed silently, same exit code, the backup does not run.
capture cron2 "$wrapper"
expect_rc 0
assert_empty "$T/cron2.out"
assert_empty "$T/cron2.err"
assert_bytes "$RUNS" '2026-01-01\n'
assert_status backup-2026-01-01 succeeded
# The next day runs again.
capture cron3 env BACKUP_DAY=2026-01-02 "$wrapper"
expect_rc 0
assert_bytes "$T/cron3.out" 'backed up 2026-01-02 (attempt 1)\n'
assert_bytes "$RUNS" '2026-01-01\n2026-01-02\n'
# Another BACKUP_CMD the same day: refused with the wrapper's message, nothing runs.
capture cron4 env BACKUP_CMD='echo other >> "$RUNS"' "$wrapper"
expect_rc 65
assert_empty "$T/cron4.out"
assert_bytes "$T/cron4.err" "idem: key 'backup-2026-01-01' was used with a different command or input; nothing ran\n"
assert_bytes "$RUNS" '2026-01-01\n2026-01-02\n'
# A failed backup is not replayed: the next firing tries again (attempt 2) and can succeed.
touch "$DISK_FULL"
capture cron5 env BACKUP_DAY=2026-01-03 "$wrapper"
expect_rc 2
assert_empty "$T/cron5.out"
assert_bytes "$T/cron5.err" 'disk full\n'
capture cron6 env BACKUP_DAY=2026-01-03 "$wrapper"
expect_rc 2
assert_bytes "$T/cron6.err" 'disk full\n'
rm "$DISK_FULL"
capture cron7 env BACKUP_DAY=2026-01-03 "$wrapper"
expect_rc 0
assert_bytes "$T/cron7.out" 'backed up 2026-01-03 (attempt 3)\n'
assert_empty "$T/cron7.err"
# A firing while the backup still runs: 75, silent.
mkfifo "$T/gate-cron"
track_pid_file "$T/gate-cron.pid"
bg cron-slow env BACKUP_DAY=2026-01-04 GATE="$T/gate-cron" "$wrapper"
wait_until "the slow backup runs" test -s "$T/gate-cron.pid"
capture cron8 env BACKUP_DAY=2026-01-04 "$wrapper"
expect_rc 75
assert_empty "$T/cron8.out"
assert_empty "$T/cron8.err"
release_fifo "$T/gate-cron"
bg_wait cron-slow
expect_rc 0
assert_bytes "$T/cron-slow.out" 'backed up 2026-01-04 (attempt 1)\n'
# idem killed mid-backup (as by a crash): abandoned, the wrapper says so until told to retry.
mkfifo "$T/gate-crash"
track_pid_file "$T/gate-crash.pid"
bg cron-crash env BACKUP_DAY=2026-01-05 GATE="$T/gate-crash" "$wrapper"
wait_until "the backup to crash runs" test -s "$T/gate-crash.pid"
idem_pid=$(idem show backup-2026-01-05 --json | jsonq /owner/pid)
kill -KILL "$idem_pid"
bg_wait cron-crash
expect_rc 137
wait_until "the backup dies with idem" pid_gone "$(cat "$T/gate-crash.pid")"
await_abandoned backup-2026-01-05
capture cron9 env BACKUP_DAY=2026-01-05 "$wrapper"
expect_rc 69
assert_empty "$T/cron9.out"
assert_lines 2 "$T/cron9.err"  # idem's own line (-q silences only 75), then the wrapper's
grep -q "^idem: key 'backup-2026-01-05': attempt 1 .* died mid-run" "$T/cron9.err" ||
  fail "no idem line for the abandoned day: $(cat "$T/cron9.err")"
tail -n 1 "$T/cron9.err" >"$T/cron9.tail"
assert_bytes "$T/cron9.tail" "backup-wrapper: the backup of 2026-01-05 was interrupted mid-run (idem or the machine died); its outcome is unknown. Check it, then run 'idem rm backup-2026-01-05' or set BACKUP_RETRY_ABANDONED=1\n"
capture cron10 env BACKUP_DAY=2026-01-05 BACKUP_RETRY_ABANDONED=1 "$wrapper"
expect_rc 0
assert_bytes "$T/cron10.out" 'backed up 2026-01-05 (attempt 2)\n'
assert_bytes "$RUNS" '2026-01-01\n2026-01-02\n2026-01-03\n2026-01-04\n2026-01-05\n'

# The crontab: variable lines and exactly one job, five time fields, the wrapper as its command,
# no '%' (cron would turn it into a newline).
grep -vE '^[[:space:]]*(#|$)' "$ex/cron/crontab" >"$T/cron-lines"
grep -vE '^[A-Z_]+=' "$T/cron-lines" >"$T/cron-jobs" || true
assert_lines 1 "$T/cron-jobs"
read -r c_min c_hour c_dom c_mon c_dow c_cmd <"$T/cron-jobs"
for f in "$c_min" "$c_hour" "$c_dom" "$c_mon" "$c_dow"; do
  [[ $f =~ ^[0-9*/,-]+$ ]] || fail "crontab time field '$f'"
done
assert_eq backup-wrapper.sh "$(basename "$c_cmd")" "command of the crontab line"
[[ $c_cmd != *%* ]] || fail "the crontab command holds a '%'"
# Run the job's command as cron would: a bare environment, the crontab's variables, the day's
# date from the clock. BACKUP_CMD (the crontab names the real backup) is the harmless stand-in.
cron_env=(env -i HOME="$T" LOGNAME=cron SHELL=/bin/sh)
while IFS= read -r assignment; do
  case $assignment in
    PATH=*) cron_env+=("PATH=$T/bin:${assignment#PATH=}") ;;
    BACKUP_CMD=*) cron_env+=('BACKUP_CMD=echo nightly; echo run >> "$HOME/cron-runs"') ;;
    *) cron_env+=("$assignment") ;;
  esac
done < <(grep -E '^[A-Z_]+=' "$T/cron-lines")
# env -i drops IDEM_STORE: on PostgreSQL the crontab names the store and its password file, as
# docs/store-and-postgresql.md's does.
cron_env+=(IDEM_DB="$T/cron.db")
[[ -z ${IDEM_STORE:-} ]] || cron_env+=("IDEM_STORE=$IDEM_STORE" "PGPASSFILE=$PGPASSFILE")
job=${c_cmd/#\/usr\/local\/bin\//$ex/cron/}
day1=$(date +%F)
capture cronjob1 "${cron_env[@]}" sh -c "$job"
expect_rc 0
assert_bytes "$T/cronjob1.out" 'nightly\n'
assert_empty "$T/cronjob1.err"
capture cronjob2 "${cron_env[@]}" sh -c "$job"
day2=$(date +%F)
expect_rc 0
assert_empty "$T/cronjob2.out"
assert_empty "$T/cronjob2.err"
if [[ $day1 == "$day2" ]]; then  # unless midnight passed in between
  assert_bytes "$T/cron-runs" 'run\n'
  assert_eq succeeded "$(IDEM_DB=$T/cron.db idem status "backup-$day1")" "status of today's backup"
fi

# === examples/queue =============================================================================
consume=$ex/queue/consume.sh
orders=$ex/queue/orders.jsonl
# The fulfilment stand-in: logs the order, fails for orders listed in $BROKEN.
export SHIPPED=$T/shipped BROKEN=$T/broken
export FULFIL_CMD='if grep -qx "$ORDER_ID" "$BROKEN" 2>/dev/null; then echo "warehouse down for $ORDER_ID" >&2; exit 1; fi
cat >> "$SHIPPED"'
capture q1 "$consume"
expect_rc 1
assert_empty "$T/q1.out"
assert_bytes "$T/q1.err" "idem: line 4: not JSON\nidem: line 6: no value at '/order_id' (key 'order_id' not found)\nidem each: 6 messages: 3 ran, 0 failed, 1 skipped (already done), 0 refused, 2 malformed\n"
# Lines 1, 2 and 5 shipped once each; line 3 (a redelivery of line 1) skipped.
sed -n '1p;2p;5p' "$orders" | sort >"$T/want-shipped"
sort "$SHIPPED" >"$T/got-shipped"
assert_same "$T/want-shipped" "$T/got-shipped"
# The feed again: every order is done.
capture q2 "$consume" "$orders"
expect_rc 1
assert_empty "$T/q2.out"
assert_bytes "$T/q2.err" "idem: line 4: not JSON\nidem: line 6: no value at '/order_id' (key 'order_id' not found)\nidem each: 6 messages: 0 ran, 0 failed, 4 skipped (already done), 0 refused, 2 malformed\n"
assert_lines 3 "$SHIPPED"
# From stdin, one order failing: reported, and run again (and shipped) next time.
printf '%s\n' '{"order_id":"ord-2001","customer":"ken@example.com","sku":"MUG-RED","qty":1}' \
  '{"order_id":"ord-2002","customer":"dennis@example.com","sku":"TEA-OOLONG","qty":4}' >"$T/feed.jsonl"
echo ord-2002 >"$BROKEN"
capture q3 "$consume" - <"$T/feed.jsonl"
expect_rc 1
assert_empty "$T/q3.out"
assert_bytes "$T/q3.err" "warehouse down for ord-2002\nidem: line 2, key 'ord-2002': handler exited 1\nidem each: 2 messages: 1 ran, 1 failed, 0 skipped (already done), 0 refused, 0 malformed\n"
rm "$BROKEN"
capture q4 "$consume" "$T/feed.jsonl"
expect_rc 0
assert_bytes "$T/q4.err" 'idem each: 2 messages: 1 ran, 0 failed, 1 skipped (already done), 0 refused, 0 malformed\n'
assert_eq 2 "$(idem show ord-2002 --json | jsonq /attempt)" "attempts of ord-2002"
assert_lines 5 "$SHIPPED"
# The same order id with another body is refused, not shipped.
printf '%s\n' '{"order_id":"ord-1001","customer":"ada@example.com","sku":"TEA-EARLGREY","qty":20}' >"$T/changed.jsonl"
capture q5 "$consume" "$T/changed.jsonl"
expect_rc 1
assert_bytes "$T/q5.err" "idem: line 1, key 'ord-1001': the key was used with another message or command\nidem each: 1 message: 0 ran, 0 failed, 0 skipped (already done), 1 refused, 0 malformed\n"
assert_lines 5 "$SHIPPED"
# The default handler (no FULFIL_CMD) prints what it would ship, one line per order.
fresh_store queue-default
capture q6 env -u FULFIL_CMD "$FRESH_STORE" JOBS=2 "$consume"
expect_rc 1
sort "$T/q6.out" >"$T/q6.sorted"
assert_bytes "$T/q6.sorted" '%s\n' \
  'order ord-1001: ship 2 x TEA-EARLGREY to ada@example.com (line 1, attempt 1)' \
  'order ord-1002: ship 1 x MUG-BLUE to alan@example.com (line 2, attempt 1)' \
  'order ord-1004: ship 3 x TEA-GREEN to edsger@example.com (line 5, attempt 1)'
assert_eq "idem each: 6 messages: 3 ran, 0 failed, 1 skipped (already done), 0 refused, 2 malformed" \
  "$(tail -n 1 "$T/q6.err")" "summary with the default handler"

# === examples/payment ===========================================================================
charge=$ex/payment/charge.sh
# The provider stand-in: waits on the FIFO $GATE when set, declines while $DECLINE exists, logs
# each charge in $CHARGES and prints a receipt.
export CHARGES=$T/charges DECLINE=$T/decline
export CHARGE_CMD='[ -z "${GATE:-}" ] || { echo $$ > "$GATE.pid"; read x < "$GATE"; }
[ ! -e "$DECLINE" ] || { echo "card declined" >&2; exit 2; }
echo "$ORDER_ID $AMOUNT_CENTS $CURRENCY $IDEMPOTENCY_KEY" >> "$CHARGES"
printf "{\"id\":\"ch_%s\",\"amount\":%s,\"currency\":\"%s\"}\n" "$ORDER_ID" "$AMOUNT_CENTS" "$CURRENCY"'
unset PAYMENT_API_KEY PAYMENT_API_URL CHARGE_WAIT
capture p1 "$charge" ord-1 2599
expect_rc 0
assert_bytes "$T/p1.out" 'order ord-1: charged 2599 EUR. Receipt:\n{"id":"ch_ord-1","amount":2599,"currency":"EUR"}\n'
assert_empty "$T/p1.err"
capture p2 "$charge" ord-1 2599
expect_rc 0
assert_bytes "$T/p2.out" 'order ord-1: already charged, not charging again. Receipt:\n{"id":"ch_ord-1","amount":2599,"currency":"EUR"}\n'
assert_empty "$T/p2.err"
assert_bytes "$CHARGES" 'ord-1 2599 EUR charge-ord-1\n'
# Declined: reported, recorded as failed, and the next run charges (attempt 2).
touch "$DECLINE"
capture p3 "$charge" ord-2 1000 USD
expect_rc 2
assert_empty "$T/p3.out"
assert_bytes "$T/p3.err" 'charge.sh: charging order ord-2 failed (exit 2); run again to retry:\ncard declined\n'
assert_status charge-ord-2 failed
rm "$DECLINE"
capture p4 "$charge" ord-2 1000 USD
expect_rc 0
assert_bytes "$T/p4.out" 'order ord-2: charged 1000 USD. Receipt:\n{"id":"ch_ord-2","amount":1000,"currency":"USD"}\n'
assert_eq "succeeded 2" "$(idem show charge-ord-2 --json | jsonq /status /attempt | tr '\t' ' ')" "record of ord-2"
# Conflict: the key was used by something else.
idem run -k charge-ord-3 -- true
capture p5 "$charge" ord-3 300
expect_rc 65
assert_empty "$T/p5.out"
# idem's own line first (-q silences only 75), then the script's.
assert_bytes "$T/p5.err" '%s\n' \
  "idem: key 'charge-ord-3' was used by another command or with another fingerprint; nothing to do here" \
  'charge.sh: key charge-ord-3 was used by something other than charge.sh; nothing charged'
# Two runs at once: a short wait gives up (75), a long one waits and gets the first receipt.
mkfifo "$T/gate-pay"
track_pid_file "$T/gate-pay.pid"
bg pay-first env GATE="$T/gate-pay" "$charge" ord-4 4000
wait_until "the first charge of ord-4 is under way" test -s "$T/gate-pay.pid"
bg pay-waiter env CHARGE_WAIT=20s "$charge" ord-4 4000
capture p6 env CHARGE_WAIT=300ms "$charge" ord-4 4000
expect_rc 75
assert_empty "$T/p6.out"
assert_bytes "$T/p6.err" 'charge.sh: order ord-4 is being charged by another run (still after waiting 300ms); nothing charged here, try again later\n'
bg_running pay-waiter || fail "the waiting run did not wait: $(cat -v "$T/pay-waiter.err")"
release_fifo "$T/gate-pay"
bg_wait pay-first
expect_rc 0
assert_bytes "$T/pay-first.out" 'order ord-4: charged 4000 EUR. Receipt:\n{"id":"ch_ord-4","amount":4000,"currency":"EUR"}\n'
bg_wait pay-waiter
expect_rc 0
assert_bytes "$T/pay-waiter.out" 'order ord-4: already charged, not charging again. Receipt:\n{"id":"ch_ord-4","amount":4000,"currency":"EUR"}\n'
assert_empty "$T/pay-waiter.err"
assert_eq 1 "$(grep -c '^ord-4 ' "$CHARGES")" "charges of ord-4"
# The script killed mid-charge: abandoned, explained, charged again only when asked.
mkfifo "$T/gate-kill"
track_pid_file "$T/gate-kill.pid"
bg pay-killed env GATE="$T/gate-kill" "$charge" ord-5 500
wait_until "the charge of ord-5 is under way" test -s "$T/gate-kill.pid"
kill -KILL "$(bg_pid pay-killed)"
bg_wait pay-killed
expect_rc 137
# Its charge command outlives it (begin/end do not kill anything): stop it like the crash would.
kill -KILL "$(cat "$T/gate-kill.pid")"
wait_until "the orphaned charge command is gone" pid_gone "$(cat "$T/gate-kill.pid")"
await_abandoned charge-ord-5
capture p7 "$charge" ord-5 500
expect_rc 69
assert_empty "$T/p7.out"
assert_lines 2 "$T/p7.err"
grep -q "^idem: key 'charge-ord-5': an earlier owner (pid [0-9]*) died mid-run" "$T/p7.err" ||
  fail "no idem line for the abandoned order: $(cat "$T/p7.err")"
tail -n 1 "$T/p7.err" >"$T/p7.tail"
assert_bytes "$T/p7.tail" 'charge.sh: an earlier run for order ord-5 died between claiming it and recording the charge: the customer may or may not have been charged. Look for idempotency key charge-ord-5 at the provider, then run: charge.sh --retry-abandoned ord-5 500 (safe when the provider honours Idempotency-Key)\n'
[[ $(grep -c '^ord-5 ' "$CHARGES") == 0 ]] || fail "ord-5 charged by a refused run"
capture p8 "$charge" --retry-abandoned ord-5 500
expect_rc 0
assert_bytes "$T/p8.out" 'order ord-5: charged 500 EUR. Receipt:\n{"id":"ch_ord-5","amount":500,"currency":"EUR"}\n'
assert_eq "succeeded 2" "$(idem show charge-ord-5 --json | jsonq /status /attempt | tr '\t' ' ')" "record of ord-5"
# Configuration and usage errors: 64 before anything is claimed.
capture p9 env -u CHARGE_CMD "$charge" ord-6 600
expect_rc 64
assert_bytes "$T/p9.err" 'charge.sh: PAYMENT_API_KEY is not set; nothing charged\n'
assert_status charge-ord-6 none
capture p10 "$charge" ord-6
expect_rc 64
assert_bytes "$T/p10.err" 'usage: charge.sh [--retry-abandoned] ORDER_ID AMOUNT_CENTS [CURRENCY]\n'

# The default charge, against a stand-in provider: `idem serve` keyed by the Idempotency-Key
# header (its own store), checking the bearer secret. The secret only travels in the environment.
cat >"$T/provider.sh" <<'EOF'
#!/bin/sh
body=$(cat)
if [ "${IDEM_HEADER_AUTHORIZATION:-}" != "Bearer $PROVIDER_SECRET" ]; then
  echo '{"error":"unauthorized"}'
  exit 1
fi
echo "$IDEM_KEY $body" >> "$PROVIDER_LOG"
if [ -p "$PROVIDER_GATE" ]; then echo $$ > "$PROVIDER_GATE.pid"; read x < "$PROVIDER_GATE"; fi
printf '{"id":"ch_%s","paid":true}\n' "$IDEM_KEY"
EOF
printf '{"hooks": [{"path": "/v1/charges", "command": ["sh", "%s"], "key": {"header": "Idempotency-Key"}}]}\n' \
  "$T/provider.sh" >"$T/provider.json"
export PROVIDER_SECRET=sk_test_example PROVIDER_LOG=$T/provider.log PROVIDER_GATE=$T/gate-provider
track_pid_file "$T/gate-provider.pid"
bg provider idem serve --db "$T/provider.db" --config "$T/provider.json" --listen 127.0.0.1:0 --port-file "$T/provider.port"
provider_up() { [[ -s $T/provider.port ]] || bg_exited provider; }
wait_until "the provider listens" provider_up
[[ -s $T/provider.port ]] || fail "the provider did not start: $(cat -v "$T/provider.err")"
api=(env -u CHARGE_CMD PAYMENT_API_URL="http://127.0.0.1:$(cat "$T/provider.port")/v1/charges")
capture p11 "${api[@]}" PAYMENT_API_KEY=sk_test_example "$charge" ord-7 700
expect_rc 0
assert_bytes "$T/p11.out" 'order ord-7: charged 700 EUR. Receipt:\n{"id":"ch_charge-ord-7","paid":true}\n'
assert_empty "$T/p11.err"
assert_bytes "$PROVIDER_LOG" 'charge-ord-7 amount=700&currency=EUR&order_id=ord-7\n'
capture p12 "${api[@]}" PAYMENT_API_KEY=sk_test_example "$charge" ord-7 700
expect_rc 0
assert_bytes "$T/p12.out" 'order ord-7: already charged, not charging again. Receipt:\n{"id":"ch_charge-ord-7","paid":true}\n'
assert_lines 1 "$PROVIDER_LOG"
# A wrong secret: the provider refuses (500), curl fails (22), nothing recorded as charged.
capture p13 "${api[@]}" PAYMENT_API_KEY=wrong "$charge" ord-8 800
expect_rc 22
assert_eq 'charge.sh: charging order ord-8 failed (exit 22); run again to retry:' "$(head -n 1 "$T/p13.err")" \
  "first line of the failure"
assert_status charge-ord-8 failed
assert_lines 1 "$PROVIDER_LOG"
# Killed after the provider charged, before the script recorded it: the retry gets the provider's
# first charge back (the same Idempotency-Key), not a second one.
mkfifo "$PROVIDER_GATE"
bg pay-crash "${api[@]}" PAYMENT_API_KEY=sk_test_example "$charge" ord-9 900
wait_until "the provider charged ord-9" test -s "$PROVIDER_GATE.pid"
# The whole script dies, curl included (as in a crash of the machine running it).
mapfile -t curl_pids < <(children_of "$(bg_pid pay-crash)")
((${#curl_pids[@]} > 0)) || fail "no child of the charge script (curl) found"
kill -KILL "$(bg_pid pay-crash)" "${curl_pids[@]}"
bg_wait pay-crash
expect_rc 137
release_fifo "$PROVIDER_GATE"
rm "$PROVIDER_GATE"
provider_done() { [[ $(IDEM_DB=$T/provider.db idem status '/v1/charges#charge-ord-9') == succeeded ]]; }
wait_until "the provider recorded ord-9" provider_done
await_abandoned charge-ord-9
capture p14 "${api[@]}" PAYMENT_API_KEY=sk_test_example "$charge" ord-9 900
expect_rc 69
capture p15 "${api[@]}" PAYMENT_API_KEY=sk_test_example "$charge" --retry-abandoned ord-9 900
expect_rc 0
assert_bytes "$T/p15.out" 'order ord-9: charged 900 EUR. Receipt:\n{"id":"ch_charge-ord-9","paid":true}\n'
assert_eq 1 "$(grep -c '^charge-ord-9 ' "$PROVIDER_LOG")" "charges of ord-9 at the provider"
kill -TERM "$(bg_pid provider)"
bg_wait provider
expect_rc 0
integrity_ok

# === examples/webhook ===========================================================================
# The hooks file of the Go webhook with idem's key: a GitHub push deploys once per delivery; a
# redelivery is answered from the store; the secret the template reads never reaches deploy.sh.
[[ -x $ex/webhook/deploy.sh ]] || fail "$ex/webhook/deploy.sh is not executable"
sh -n "$ex/webhook/deploy.sh" || fail "$ex/webhook/deploy.sh: syntax error"
mkdir -p "$T/site/examples"
ln -s "$ex/webhook" "$T/site/examples/webhook"  # its command is relative to the daemon's directory
export GITHUB_SECRET='push secret' DEPLOY_LOG=$T/deploys
# shellcheck disable=SC2016  # expanded by deploy.sh
export DEPLOY_CMD='echo "$COMMIT secret=${GITHUB_SECRET:-withheld}" >>"$DEPLOY_LOG"; echo "checked out $COMMIT"'
cd "$T/site" || fail "no $T/site"
bg hooks idem serve --db "$T/hooks.db" --hooks "$ex/webhook/hooks.yaml" --template \
  --listen 127.0.0.1:0 --port-file "$T/hooks.port"
cd "$T" || fail "no $T"
hooks_up() { [[ -s $T/hooks.port ]] || bg_exited hooks; }
wait_until "the hooks daemon listens" hooks_up
[[ -s $T/hooks.port ]] || fail "idem serve --hooks exited: $(cat "$T/hooks.err")"
push() {  # push NAME DELIVERY SECRET: a signed push of commit 4b1d to main
  local body='{"ref": "refs/heads/main", "head_commit": {"id": "4b1d"}, "pusher": {"name": "ana"},
  "repository": {"full_name": "acme/site"}}' sig
  sig=$(printf %s "$body" | openssl dgst -sha256 -hmac "$3" | sed 's/^.* //')
  curl -sS --max-time 30 -D "$T/$1.headers" -o "$T/$1.body" -w '%{http_code}' \
    -H 'Content-Type: application/json' -H "X-Hub-Signature-256: sha256=$sig" \
    -H "X-GitHub-Delivery: $2" --data-binary "$body" \
    "http://127.0.0.1:$(<"$T/hooks.port")/hooks/github-push" >"$T/$1.status"
}
push h1 delivery-1 "$GITHUB_SECRET"
assert_eq 200 "$(<"$T/h1.status")" "status of the first push"
assert_bytes "$T/h1.body" 'checked out 4b1d\ndeployed acme/site at 4b1d (pushed by ana)\n'
push h2 delivery-1 "$GITHUB_SECRET"
assert_eq 200 "$(<"$T/h2.status")" "status of the redelivery"
assert_same "$T/h1.body" "$T/h2.body"
grep -qi '^Idempotent-Replayed: true' "$T/h2.headers" || fail "the redelivery is no replay: $(cat "$T/h2.headers")"
push h3 delivery-2 "$GITHUB_SECRET"
push h4 delivery-3 'not the secret'
assert_eq 500 "$(<"$T/h4.status")" "status of a push signed with another secret"
assert_bytes "$DEPLOY_LOG" '4b1d secret=withheld\n4b1d secret=withheld\n'
kill -TERM "$(bg_pid hooks)"
bg_wait hooks
expect_rc 0
