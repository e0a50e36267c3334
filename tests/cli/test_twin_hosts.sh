#!/usr/bin/env bash
# contract §2 (owner): a host is known by its machine id and boot id, and a pid only within its pid
# namespace. Simulated on one machine with namespaces (`unshare`): a twin host of the same host
# name and boot id (another /etc/machine-id, its own pids), a cloned machine of the same host name
# (another machine id and boot id, the same initial pid namespace number every host has), and a
# second container on this kernel (same machine id and boot id, its own pids). None of them may
# judge a live owner gone: `idem status` says running, a retry is refused (75) and runs nothing,
# and the owner's outcome is recorded. An owner that really died is abandoned where its pid can
# be judged (same machine, boot and namespace; on PostgreSQL once its lease runs out) and nowhere
# else before its lease ends. Without /etc/machine-id the host name stands in. Needs root (or the
# capability to make namespaces): skipped otherwise (lib.sh's skip).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

[[ -s /etc/machine-id ]] || skip "no /etc/machine-id to simulate other machines with"
if ! err=$(unshare --pid --fork --mount-proc --mount --propagation private -- \
  sh -c 'mount --bind /dev/null /etc/machine-id && [ "$$" = 1 ]' 2>&1); then
  skip "cannot make pid and mount namespaces (needs root or CAP_SYS_ADMIN): $err"
fi
pg() { [[ -n ${IDEM_STORE:-} ]]; }

new_id() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$T/$1"; }
new_id other-machine
cat /proc/sys/kernel/random/uuid >"$T/other-boot"
: >"$T/no-machine"

# as WHAT CMD...: runs CMD as seen from WHAT, always with this machine's host name:
#   twin       another machine id, the same boot id, its own pid namespace
#   clone      another machine id and boot id, this pid namespace
#   container  this machine id and boot id, its own pid namespace
#   rebooted   this machine id, another boot id (this machine after a reboot)
#   no-id      no machine id (an empty /etc/machine-id), all else this machine's
#   here       this machine itself
# Without a pid namespace of its own CMD keeps the caller's pid (unshare and sh exec), so
# `bg NAME as_argv`'s job pid is idem's own.
# shellcheck disable=SC2016
as_argv() {  # as_argv WHAT: sets _as to the command line that runs a command as WHAT
  local pid=() mid="" boot=""
  case $1 in
    twin) mid=$T/other-machine pid=(--pid --fork --mount-proc) ;;
    clone) mid=$T/other-machine boot=$T/other-boot ;;
    container) pid=(--pid --fork --mount-proc) ;;
    rebooted) boot=$T/other-boot ;;
    no-id) mid=$T/no-machine ;;
    here) ;;
    *) fail "no such view '$1'" ;;
  esac
  _as=(unshare "${pid[@]}" --mount --propagation private -- sh -c '
    if [ -n "$1" ]; then mount --bind "$1" /etc/machine-id || exit 71; fi
    if [ -n "$2" ]; then mount --bind "$2" /proc/sys/kernel/random/boot_id || exit 71; fi
    shift 2
    exec "$@"' sh "$mid" "$boot")
}
as() {
  local _as
  as_argv "$1"
  shift
  [[ $1 != idem ]] || set -- "$IDEM_BIN" "${@:2}"
  "${_as[@]}" "$@"
}
status_as() { as "$1" idem status "$2"; }
status_as_is() { [[ $(status_as "$1" "$2") == "$3" ]]; }

mkfifo "$T/hold"
# cmd_for NAME: the command, which logs its attempt and, for attempt 1, blocks on $T/hold.
cmd_for() {
  # shellcheck disable=SC2016
  cmd=(sh -c 'echo "attempt $IDEM_ATTEMPT" >> "$1.log"; echo $$ > "$1.pid.$IDEM_ATTEMPT"
    [ "$IDEM_ATTEMPT" = 1 ] && read x < "$2"; echo "done $IDEM_ATTEMPT"' sh "$T/$1" "$T/hold")
  track_pid_file "$T/$1.pid.1"
}

# 1. A live owner on this machine: no lookalike judges it gone, whatever it sees of its pid.
cmd_for live
bg owner idem run -k live -- "${cmd[@]}"
wait_until "attempt 1 starts" test -s "$T/live.pid.1"
assert_eq "$(cat /etc/machine-id)" "$(idem show live --json | jsonq /owner/machine_id)" "owner machine id"
assert_eq "$(stat -L -c %i /proc/self/ns/pid)" "$(idem show live --json | jsonq /owner/pid_ns)" \
  "owner pid namespace"
assert_eq "$(cat /proc/sys/kernel/random/boot_id)" "$(idem show live --json | jsonq /owner/boot_id)" \
  "owner boot id"
for view in twin clone container no-id here; do
  assert_eq running "$(status_as "$view" live)" "status of a live owner's key seen from $view"
  capture "retry-$view" as "$view" idem run -k live --retry-abandoned -- "${cmd[@]}"
  expect_rc 75
  assert_idem_error
done
capture ls-twin as twin idem ls --status running
expect_rc 0
file_has "$T/ls-twin.out" live || fail "ls on the twin does not list 'live' as running: $(cat "$T/ls-twin.out")"
capture rm-twin as twin idem rm live
expect_rc 75
assert_bytes "$T/live.log" 'attempt 1\n'
release_fifo "$T/hold"
bg_wait owner
expect_rc 0
assert_bytes "$T/owner.out" 'done 1\n'
assert_status live succeeded

# 2. An owner that died (kill -9). Its pid is judged only here, with this machine id, boot and
# pid namespace: from the twin and the container it stays running (they cannot see it) until a
# lease, where there is one (PostgreSQL), runs out; a reboot of this machine ends it too.
cmd_for dead
bg owner idem run -k dead --lease 2s -- "${cmd[@]}"
wait_until "attempt 1 starts" test -s "$T/dead.pid.1"
kill -KILL "$(bg_pid owner)"
bg_wait owner
expect_rc 137
wait_until "attempt 1's command ends" pid_gone "$(cat "$T/dead.pid.1")"
if pg; then
  # An unexpired lease is never overruled by what a host sees, even on the owner's own.
  lease_end=$(date -d "$(idem show dead --json | jsonq /lease_expires_at)" +%s%3N)
  for view in here rebooted twin clone container; do
    status=$(status_as "$view" dead)
    [[ $status == running || $(now_ms) -ge $lease_end ]] ||
      fail "status of 'dead' from $view within its lease: $status"
  done
  wait_until "the lease of 'dead' runs out (seen from the twin)" status_as_is twin dead abandoned
  assert_eq abandoned "$(status_as container dead)" "status of 'dead' from the container"
else
  assert_eq abandoned "$(status_as here dead)" "status of 'dead' on its own machine"
  assert_eq abandoned "$(status_as rebooted dead)" "status of 'dead' after a reboot"
  for view in twin clone container; do
    assert_eq running "$(status_as "$view" dead)" "status of 'dead' seen from $view (no lease)"
    capture "dead-$view" as "$view" idem run -k dead --retry-abandoned -- "${cmd[@]}"
    expect_rc 75
  done
fi
capture retry-dead idem run -k dead --retry-abandoned -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/retry-dead.out" 'done 2\n'
assert_bytes "$T/dead.log" 'attempt 1\nattempt 2\n'

# 3. Without /etc/machine-id (many containers) the host name stands in for it: a live owner
# stays running everywhere, and one that died is abandoned on its own host as before.
as_argv no-id
cmd_for noid
bg owner "${_as[@]}" "$IDEM_BIN" run -k noid -- "${cmd[@]}"
wait_until "attempt 1 starts" test -s "$T/noid.pid.1"
assert_eq null "$(idem show noid --json | jsonq /owner/machine_id)" "machine id of an owner without one"
for view in no-id here twin container; do
  assert_eq running "$(status_as "$view" noid)" "status of 'noid' seen from $view"
done
release_fifo "$T/hold"
bg_wait owner
expect_rc 0
assert_status noid succeeded
if ! pg; then
  cmd_for noid2
  bg owner "${_as[@]}" "$IDEM_BIN" run -k noid2 -- "${cmd[@]}"
  wait_until "attempt 1 starts" test -s "$T/noid2.pid.1"
  kill -KILL "$(bg_pid owner)"
  bg_wait owner
  wait_until "attempt 1's command ends" pid_gone "$(cat "$T/noid2.pid.1")"
  assert_eq abandoned "$(status_as no-id noid2)" "status of 'noid2' on its host, without machine id"
  assert_eq abandoned "$(status_as here noid2)" "status of 'noid2' on its host, with machine id"
  assert_eq running "$(status_as container noid2)" "status of 'noid2' from another pid namespace"
fi
