#!/usr/bin/env bash
# contract §8.6 on the test cluster ($IDEM_TEST_PG_URL), with hosts simulated by namespaces (see
# hosts_lib.sh): one key claimed by 32 processes on each of three hosts at once runs once, the
# others refused (75) or, with --wait, replaying the same bytes and exit code; the record names
# the simulated host (its name and boot id) as owner.
export IDEM_TEST_BACKEND=postgres  # lib.sh: a fresh schema of its own, skipped without a cluster
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/hosts_lib.sh"

sql() { psql -qAtX "$IDEM_STORE" -c "$1"; }
HOSTS=(host-a host-b host-c)
for h in "${HOSTS[@]}"; do host_new "$h"; done
N=32  # processes per host
mkfifo "$T/gate" "$T/hold"

# The barrier: every process blocks opening $T/gate for reading (a fifo without a writer, the
# kernel's wait_for_partner) before it execs idem; opening and closing it for writing lets them
# all go at once.
at_gate() { [[ $(cat "/proc/$1/wchan" 2>/dev/null) == wait_for_partner ]]; }
all_at_gate() {
  local job
  for job in "${jobs[@]}"; do at_gate "$(bg_pid "$job")" || return 1; done
}
open_gate() {
  WAIT_SECONDS=60 wait_until "all ${#jobs[@]} processes wait at the gate" all_at_gate
  exec 3>"$T/gate"
  exec 3>&-
}
# start_all PREFIX COUNT CMD...: COUNT processes on each host, waiting at the gate to exec CMD.
start_all() {
  local prefix=$1 count=$2 h i
  shift 2
  [[ $1 != idem ]] || set -- "$IDEM_BIN" "${@:2}"
  jobs=()
  for h in "${HOSTS[@]}"; do
    for ((i = 0; i < count; i++)); do
      bg_on_host "$h" "$prefix-$h-$i" sh -c 'read x < "$1"; shift; exec "$@"' sh "$T/gate" "$@"
      jobs+=("$prefix-$h-$i")
    done
  done
  open_gate
}
exited_count() {  # exited_count WANT: at least WANT of the jobs have exited
  local job n=0
  for job in "${jobs[@]}"; do
    if bg_exited "$job"; then n=$((n + 1)); fi
  done
  ((n >= $1))
}

# The owner idem records is the simulated host: its name and boot id, not the machine's.
# owner_is KEY HOST
owner_is() {
  assert_eq "$2" "$(idem show "$1" --json | jsonq /owner/host)" "owner host of '$1'"
  assert_eq "$(host_boot_id "$2")" "$(sql "SELECT owner_boot_id FROM idem_records WHERE key = '$1'")" \
    "owner boot id of '$1'"
}

# 1. Three hosts x 32 processes, no --wait: the command (which prints its host) runs once and
# holds the key until the 95 others have been refused with 75.
cmd=(sh -c 'echo "$(hostname) $$" >> "$1"; read x < "$2"; echo "ran on $(hostname)"' sh "$T/once.count" "$T/hold")
start_all once "$N" idem run -k once -- "${cmd[@]}"
wait_until "the command starts" test -s "$T/once.count"
wait_until "$((3 * N - 1)) attempts are refused" exited_count $((3 * N - 1))
winner_host=$(cut -d' ' -f1 "$T/once.count")
[[ " ${HOSTS[*]} " == *" $winner_host "* ]] || fail "the command ran on '$winner_host', not a simulated host"
assert_status once running
owner_is once "$winner_host"
release_fifo "$T/hold"
ran=0 refused=0
for job in "${jobs[@]}"; do
  bg_wait "$job"
  case $rc in
    0) ran=$((ran + 1)) winner=$job ;;
    75) refused=$((refused + 1))
        assert_idem_error "$job" ;;
    *) fail "$job exited $rc: $(cat -v "$T/$job.err")" ;;
  esac
done
assert_eq "1 $((3 * N - 1))" "$ran $refused" "attempts that ran / were refused with 75"
assert_lines 1 "$T/once.count"
[[ $winner == once-$winner_host-* ]] || fail "$winner ran, but the command says it ran on $winner_host"
assert_bytes "$T/$winner.out" 'ran on %s\n' "$winner_host"
assert_status once succeeded
owner_is once "$winner_host"

# 2. The same with --wait: the 95 others wait for the outcome and replay its bytes and exit code.
cmd=(sh -c 'echo "$(hostname) $$" >> "$1"; read x < "$2"; echo "ran on $(hostname)"; echo "pid $$" >&2; exit 3'
  sh "$T/wait.count" "$T/hold")
start_all wait "$N" idem run -k waited --wait 120s --replay-failures -- "${cmd[@]}"
wait_until "the command starts" test -s "$T/wait.count"
release_fifo "$T/hold"
first=${jobs[0]}
for job in "${jobs[@]}"; do
  WAIT_SECONDS=120 bg_wait "$job"
  expect_rc 3
  assert_same "$T/$first.out" "$T/$job.out"
  assert_same "$T/$first.err" "$T/$job.err"
done
assert_lines 1 "$T/wait.count"
winner_host=$(cut -d' ' -f1 "$T/wait.count")
assert_bytes "$T/$first.out" 'ran on %s\n' "$winner_host"
assert_bytes "$T/$first.err" 'pid %s\n' "$(cut -d' ' -f2 "$T/wait.count")"
assert_status waited failed
owner_is waited "$winner_host"

# 3. The deployment example of docs/store-and-postgresql.md, as written: its crontab's
# environment lines and its job line (the command as cron hands it to sh: `\%` made `%`), fired
# on the three hosts at once, then once more on each. Only the server, the password file and the
# backup are this test's.
root=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/.." && pwd)
guide=$root/docs/store-and-postgresql.md
crontab=$(awk '/^# crontab -e on each of the three hosts/ { on = 1; next }
  on && /^```/ { exit }
  on { print }' "$guide")
[[ -n $crontab ]] || fail "$guide has no three-host crontab"
envs=() job=""
while IFS= read -r line; do
  [[ -n $line && $line != \#* ]] || continue
  case $line in
    IDEM_STORE=*) envs+=("IDEM_STORE=$IDEM_STORE") ;;
    PGPASSFILE=*) envs+=("PGPASSFILE=$PGPASSFILE") ;;
    PATH=*) envs+=("PATH=$T/bin:${line#PATH=}") ;;
    [A-Z]*=*) envs+=("$line") ;;
    *) [[ -z $job ]] || fail "the guide's crontab has two jobs"
       read -r minute hour dom month dow job <<<"$line"
       assert_eq "0 3 * * *" "$minute $hour $dom $month $dow" "the job's schedule" ;;
  esac
done <<<"$crontab"
assert_eq 3 "${#envs[@]}" "environment lines of the guide's crontab (IDEM_STORE, PGPASSFILE, PATH)"
[[ ${job//\\%/} != *%* ]] || fail "an unescaped % in the guide's cron line (cron makes it a newline): $job"
job=${job//\\%/%}
[[ $job == *" /usr/local/bin/backup.sh" ]] || fail "the guide's cron job is not the backup: $job"
job=${job/\/usr\/local\/bin\/backup.sh/$T/backup.sh}
mkdir "$T/bin"
ln -s "$IDEM_BIN" "$T/bin/idem"
printf '#!/bin/sh\nhostname >> "%s/backups"\necho "backed up on $(hostname)"\n' "$T" >"$T/backup.sh"
chmod +x "$T/backup.sh"
# What cron gives a job: a bare environment, the crontab's lines and /bin/sh -c.
fire=(env -i "HOME=$T" "LOGNAME=$(id -un)" SHELL=/bin/sh "IDEM_TEST_DIR=$T" "${envs[@]}" /bin/sh -c "$job")
start_all cron 1 "${fire[@]}"
mailed=0
for job_name in "${jobs[@]}"; do
  bg_wait "$job_name"
  if [[ -s $T/$job_name.out ]]; then
    expect_rc 0
    mailed=$((mailed + 1))
    assert_bytes "$T/$job_name.out" 'backed up on %s\n' "$(cat "$T/backups")"
  else
    [[ $rc == 0 || $rc == 75 ]] || fail "$job_name exited $rc: $(cat -v "$T/$job_name.err")"
  fi
  assert_empty "$T/$job_name.err"
done
assert_eq 1 "$mailed" "firings that printed something (what cron mails)"
assert_lines 1 "$T/backups"
for h in "${HOSTS[@]}"; do
  capture "again-$h" on_host "$h" "${fire[@]}"
  expect_rc 0
  assert_empty "$T/again-$h.out"
  assert_empty "$T/again-$h.err"
done
assert_lines 1 "$T/backups"
assert_status "backup-$(date +%F)" succeeded
