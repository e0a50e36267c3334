# shellcheck shell=bash
# Simulated hosts for end-to-end tests: a command run "on host NAME" has a UTS namespace with
# host name NAME and a mount namespace in which /proc/sys/kernel/random/boot_id and (where the
# machine has one) /etc/machine-id read NAME's own boot id and machine id (files of $T
# bind-mounted over them), which is all idem knows of a host (gethostname and those files, see
# src/proc/liveness.cpp). Pids and the network stay shared, so the test can signal and watch every
# process and reach the test cluster on loopback. Needs root (or the capability to make
# namespaces): without it the test is skipped (lib.sh's skip). Source after lib.sh.
#
#   host_new NAME              creates host NAME with a fresh random boot id and machine id
#   host_boot_id NAME          prints it
#   on_host NAME CMD...        runs CMD on NAME (in the foreground; usable with capture)
#   bg_on_host NAME JOB CMD... as lib.sh's bg, CMD on NAME; bg_pid JOB is CMD's own pid
#
# `idem` as CMD means $IDEM_BIN. Each CMD gets namespaces of its own (they vanish with it); two
# commands on one host share its name, machine id and boot id, which is what makes them one host
# to idem.

_hosts_dir=$T/hosts
mkdir -p "$_hosts_dir"

# Names the host, hides the real boot id and becomes CMD (exec: the pid stays the caller's).
# shellcheck disable=SC2016
_host_enter='hostname "$1" && mount --bind "$2" /proc/sys/kernel/random/boot_id || exit 71
if [ -e /etc/machine-id ]; then mount --bind "$3" /etc/machine-id || exit 71; fi
shift 3
exec "$@"'

_host_argv() {  # _host_argv NAME: sets _argv to the command line that enters host NAME
  [[ -f $_hosts_dir/$1.boot_id ]] || fail "no host '$1' (host_new first)"
  _argv=(unshare --uts --mount --propagation private -- sh -c "$_host_enter" sh "$1"
    "$_hosts_dir/$1.boot_id" "$_hosts_dir/$1.machine_id")
}

host_new() {
  cat /proc/sys/kernel/random/uuid >"$_hosts_dir/$1.boot_id"
  od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$_hosts_dir/$1.machine_id"
}
host_boot_id() { cat "$_hosts_dir/$1.boot_id"; }

on_host() {
  local _argv
  _host_argv "$1"
  shift
  [[ $1 != idem ]] || set -- "$IDEM_BIN" "${@:2}"
  "${_argv[@]}" "$@"
}

bg_on_host() {
  local _argv job=$2
  _host_argv "$1"
  shift 2
  [[ $1 != idem ]] || set -- "$IDEM_BIN" "${@:2}"
  bg "$job" "${_argv[@]}" "$@"
}

# Can this process make the namespaces? If not, say why and skip.
_hosts_probe() {
  local err
  host_new probe
  if ! err=$(on_host probe sh -c '[ "$(hostname)" = probe ] && cat /proc/sys/kernel/random/boot_id' 2>&1) ||
    [[ $err != "$(host_boot_id probe)" ]]; then
    skip "cannot simulate hosts with unshare --uts --mount (needs root or CAP_SYS_ADMIN): $err"
  fi
  [[ $(hostname) != probe && $(cat /proc/sys/kernel/random/boot_id) != "$(host_boot_id probe)" ]] ||
    fail "simulating a host changed this host's own name or boot id"
}
_hosts_probe
