#!/usr/bin/env bash
# What a replay cannot go below while its store is SQLite (issue 39's replay row): a static C
# program that does only what a replay asks of SQLite — open idem's store, read one record by its
# key, write the replay count unsynced, close — timed beside `flock -n L true`, `idem run` replaying
# the same key, and a static program that does nothing (the process's own start and exit). The
# program is built here from bench/sqlite_floor.c against Debian's libsqlite3.a, linked as idem is
# (static, no PIE). It runs on idem's own store (its schema: SQLite parses all of it at the first
# statement of every process) and on a store of a two-column table, which shows what the schema
# costs apart from SQLite's open itself. Then the same for a first run: `idem run` of `true` on a
# key removed before each (hyperfine's --prepare), and bench/claim_floor.c's floors: two synced
# commits of one page each around `true` (`page`), beside flock; and the floor that
# writes the rows idem's claim and outcome write (the record in all its indexes, its history row)
# with idem's settings and WAL handling, `true` started plainly (no cgroup, no output captured).
#   bench/sqlite_floor.sh [IDEM_BIN]    # without it, builds idem Release into build-bench/
#   ROUNDS (3), RUNS (300): hyperfine -N, all commands in one invocation, the order reversed
#   every other round; medians of the rounds' means, ratios to flock.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-3}
runs=${RUNS:-300}
"$root/scripts/deps.sh" hyperfine sqlite3 libsqlite3-dev gcc
idem=$("$root/bench/idem_binary.sh" "$@")
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-floor.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"

gcc -O2 -static -no-pie "$root/bench/sqlite_floor.c" -o floor -lsqlite3 -lm 2>/dev/null
gcc -O2 -static -no-pie "$root/bench/claim_floor.c" -o claim_floor -lsqlite3 -lm 2>/dev/null
printf 'int main(void) { return 0; }\n' >nothing.c
gcc -O2 -static -no-pie nothing.c -o nothing
export IDEM_DB=$dir/idem.db
"$idem" run -q -k "done" -- true
# The WAL as a store that has run for a while has it, not holding the schema's creation: emptied
# once; then idem's replays and the floor's counts grow it alike, and idem checkpoints it at
# 256 KiB as it does for any store.
sqlite3 idem.db 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
sqlite3 small.db "PRAGMA journal_mode=WAL;
  CREATE TABLE records (key TEXT PRIMARY KEY, fingerprint TEXT, replays INTEGER NOT NULL);
  INSERT INTO records VALUES ('done', 'x', 0);" >/dev/null
touch L

median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# measure TITLE: ROUNDS hyperfine invocations of cmds[] (each after its preps[] entry, when preps
# is set), the order reversed every other round; prints a table of each command's mean (median
# of the rounds) and its ratio to the one named "flock -n L true".
measure() {
  local -A means
  local r i m flock_ms ms order args n=${#cmds[@]}
  for ((r = 0; r < rounds; r++)); do
    mapfile -t order < <(seq 0 $((n - 1)))
    ((r % 2 == 0)) || mapfile -t order < <(seq $((n - 1)) -1 0)
    args=()
    for i in "${order[@]}"; do
      ((${#preps[@]} == 0)) || args+=(--prepare "${preps[$i]}")
      args+=("${cmds[$i]}")
    done
    hyperfine -N -w 30 -r "$runs" --export-json "round$r.json" "${args[@]}" >/dev/null 2>&1
    for i in "${order[@]}"; do
      m=$(python3 -c "import json,sys; d=json.load(open('round$r.json')); print([x['mean'] for x in d['results'] if x['command']==sys.argv[1]][0]*1000)" "${cmds[$i]}")
      means[$i]+="$m "
    done
  done
  for ((i = 0; i < n; i++)); do [[ ${names[$i]} != "flock -n L true" ]] || flock_ms=$(echo "${means[$i]}" | median); done
  echo
  echo "| $1 | mean (median of $rounds rounds) | / flock |"
  echo "|---|---|---|"
  for ((i = 0; i < n; i++)); do
    ms=$(echo "${means[$i]}" | median)
    printf '| %s | %.2f ms | %.2f |\n' "${names[$i]}" "$ms" "$(echo "$ms / $flock_ms" | bc -l)"
  done
}

echo "idem: $idem ($("$idem" --version)); $(date -u '+%Y-%m-%d %H:%M UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
names=("idem run (replay)" "floor, idem's schema" "floor, two columns" "flock -n L true" "nothing (static)")
cmds=("$idem run -k done -- true" "./floor idem.db done" "./floor small.db done" "flock -n L true" "./nothing")
preps=()
measure command

# First runs: each command with its own --prepare (idem's removes the key it is about to run).
"$idem" run -q -k fresh -- true
names=("idem run (first run)" "floor, idem's schema, first run" "floor, two columns, first run"
  "floor, idem's rows, first run" "flock -n L true")
cmds=("$idem run -k fresh -- true" "./claim_floor idem.db done page" "./claim_floor small.db done page"
  "./claim_floor idem.db floor-plain run" "flock -n L true")
preps=("$idem rm fresh" "true" "true" "./claim_floor idem.db floor-plain rm" "true")
./claim_floor idem.db floor-plain run
measure "first run"
