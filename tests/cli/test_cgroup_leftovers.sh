#!/usr/bin/env bash
# contract §8.3 where cgroup v2 is writable: each attempt's command runs in a cgroup of its own, so
# what it leaves behind is seen even after it left the process group (setsid: a daemon, tmux,
# `ssh -f`). A clean run leaves no cgroup; a failed run's escaped process holds the key (75,
# status, show and doctor name the cgroup) until it ends by itself or --kill-stale ends it
# (TERM, then cgroup.kill for one that ignores TERM); then its cgroup is gone. Elsewhere (not
# root, no delegated subtree) the test is skipped: test_failed_group.sh covers the group alone.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

capture use idem doctor --json
[[ $(jsonq /processes/cgroups <"$T/use.out") == true ]] ||
  skip "no cgroups here: $(jsonq /processes/about <"$T/use.out")"
mount=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") { print $5; exit } break } }' /proc/self/mountinfo)
[[ -n $mount ]] || fail "doctor says cgroups, but no cgroup2 mount is listed"

# A clean run: the command is created in a cgroup named for its owner (idem: the command's
# parent, and the record's owner) and numbered, removed once the run is done.
capture clean idem run -k clean -- sh -c 'grep "^0::" /proc/self/cgroup; echo "parent $PPID"'
expect_rc 0
path=$(sed -n 's/^0:://p' "$T/clean.out")
parent=$(awk '/^parent/ { print $2 }' "$T/clean.out")
assert_eq "$parent" "$(idem show clean --json | jsonq /owner/pid)" "the record's owner"
[[ $path =~ /idem-${parent}-[0-9]+-1$ ]] || fail "the command's cgroup: $(cat "$T/clean.out")"
[[ ! -e $mount$path ]] || fail "a clean run left its cgroup $mount$path"
# Where a process cannot be created in a cgroup (a kernel before 5.7; the test build's hook takes
# that path here), the child is moved into one named for its group before it execs.
IDEM_TEST_CGROUP_MOVE=1 capture moved idem run -k moved -- sh -c 'grep "^0::" /proc/self/cgroup; echo "pgid $(cut -d " " -f5 /proc/$$/stat)"'
expect_rc 0
path=$(sed -n 's/^0:://p' "$T/moved.out")
pgid=$(awk '/^pgid/ { print $2 }' "$T/moved.out")
[[ $path =~ /idem-${pgid}-[0-9]+$ ]] || fail "the moved command's cgroup: $(cat "$T/moved.out")"
[[ ! -e $mount$path ]] || fail "a clean run left its cgroup $mount$path"

# Attempt 1 starts a process that leaves the group and the session (setsid), ignores TERM and
# runs until $T/NAME.go exists; then it fails. Later attempts finish at once.
# cmd_for NAME: sets cmd
cmd_for() {
  # shellcheck disable=SC2016
  cmd=(sh -c 'echo "attempt $IDEM_ATTEMPT" >> "$1.log"; [ "$IDEM_ATTEMPT" = 1 ] || exit 0
    setsid sh -c '\''trap "" TERM; echo $$ > "$1.pid"; while [ ! -e "$1.go" ]; do sleep 0.05; done'\'' sh "$1" </dev/null >/dev/null 2>&1 &
    while [ ! -s "$1.pid" ]; do sleep 0.01; done; exit 1' sh "$T/$1")
  track_pid_file "$T/$1.pid"
}
cgroup_of() { idem show "$1" --json | jsonq /process_group_cgroup; }

cmd_for esc
capture first idem run -k esc -- "${cmd[@]}"
expect_rc 1
escapee=$(cat "$T/esc.pid")
! pid_gone "$escapee" || fail "the escaped process should live"
group=$(idem show esc --json | jsonq /process_group)
[[ $(awk '{ print $5 }' "/proc/$escapee/stat" | tr -d ' ') != "$group" ]] ||
  fail "the escapee should have left process group $group"
esc_path=$(grep '^0::' "/proc/$escapee/cgroup" | cut -c4-)
owner=$(idem show esc --json | jsonq /owner/pid)
[[ $esc_path =~ /idem-${owner}-[0-9]+-1$ ]] || fail "the escapee's cgroup: $esc_path"
assert_eq "$esc_path" "$(cgroup_of esc)" "the failed record's cgroup"

# It holds the key: 75 naming the cgroup (the process group alone would see nothing), with -q too.
capture refused idem run -k esc -q -- "${cmd[@]}"
expect_rc 75
file_has "$T/refused.err" "failed attempt 1 still has live processes in cgroup $esc_path" ||
  fail "the refusal should name the cgroup: $(cat "$T/refused.err")"
assert_lines 1 "$T/esc.log"
capture st idem status esc
assert_bytes "$T/st.out" 'failed\n'
file_has "$T/st.err" "left live processes in cgroup $esc_path" || fail "status: $(cat "$T/st.err")"
file_has "$T/st.err" "cat $mount$esc_path/cgroup.procs" || fail "status's fix: $(cat "$T/st.err")"
capture sh idem show esc
file_has "$T/sh.out" "processes: cgroup $esc_path still has live processes" ||
  fail "show: $(cat "$T/sh.out")"
capture doc idem doctor --json
expect_rc 1
file_has "$T/doc.out" '"check":"leftovers"' || fail "doctor: $(cat "$T/doc.out")"
# Whatever the TTL: past it the failure still holds the key.
capture ttl idem run -k esc --ttl 1ms -- "${cmd[@]}"
expect_rc 75

# --kill-stale: TERM is ignored, so the cgroup is killed after --kill-after; then attempt 2 runs
# and the old cgroup is gone.
capture kill idem run -k esc --kill-stale --kill-after 200ms -- "${cmd[@]}"
expect_rc 0
pid_gone "$escapee" || fail "--kill-stale left the escaped process $escapee"
[[ ! -e $mount$esc_path ]] || fail "--kill-stale left the cgroup $mount$esc_path"
assert_bytes "$T/esc.log" 'attempt 1\nattempt 2\n'
assert_status esc succeeded

# The same for a command moved into its cgroup (named for its group): its leftover holds the key
# and --kill-stale ends it by that cgroup.
cmd_for mv
IDEM_TEST_CGROUP_MOVE=1 capture mv1 idem run -k mv -- "${cmd[@]}"
expect_rc 1
mv_path=$(cgroup_of mv)
[[ $mv_path =~ /idem-$(idem show mv --json | jsonq /process_group)-[0-9]+$ ]] ||
  fail "the moved command's cgroup: $mv_path"
capture mv2 idem run -k mv -- "${cmd[@]}"
expect_rc 75
capture mv3 idem run -k mv --kill-stale --kill-after 200ms -- "${cmd[@]}"
expect_rc 0
pid_gone "$(cat "$T/mv.pid")" || fail "--kill-stale left the moved command's escaped process"
[[ ! -e $mount$mv_path ]] || fail "--kill-stale left the cgroup $mount$mv_path"

# One that ends by itself: once it has, the next run runs, and the old cgroup is removed.
cmd_for self
capture first2 idem run -k self -- "${cmd[@]}"
expect_rc 1
self_path=$(cgroup_of self)
capture held idem run -k self -- "${cmd[@]}"
expect_rc 75
touch "$T/self.go"
wait_until "the escaped process ends" pid_gone "$(cat "$T/self.pid")"
capture again idem run -k self -- "${cmd[@]}"
expect_rc 0
assert_bytes "$T/self.log" 'attempt 1\nattempt 2\n'
[[ ! -e $mount$self_path ]] || fail "the emptied cgroup $mount$self_path was left"

# With IDEM_CGROUP=off a command gets none (and a record none); doctor says what that misses.
IDEM_CGROUP=off capture off idem run -k off -- sh -c 'grep "^0::" /proc/self/cgroup'
expect_rc 0
[[ $(cut -c4- "$T/off.out") != */idem-* ]] || fail "IDEM_CGROUP=off still made one: $(cat "$T/off.out")"
assert_eq null "$(cgroup_of off)" "no cgroup recorded"
