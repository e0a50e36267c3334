#!/usr/bin/env bash
# Writes src/link_order.txt: the functions the CLI's short-lived paths run and the data they
# touch, in the order the static idem's link lays them out (CMakeLists.txt, "Link order"). Every
# `idem run` is a new process that faults its pages in: code one 64 KiB window at a time, data a
# page at each first write. Packed together, what a run touches spans a few windows and pages
# instead of one per function or variable scattered over 9 MiB of text and 600 KiB of data.
#   scripts/link_order.sh [IDEM_BIN]   # a static Release idem; without it, build-bench/'s
# The paths, on a store in a temp dir: `--version`; a replay, `ls` and `show` (every function they
# run, from callgrind, and every variable, from lackey's trace); first runs, half of them traced,
# and traced replays (functions sampled by perf at 40 kHz over 600 runs: valgrind cannot follow
# the clone that starts the command, nor the one that sends a span).
# Regenerate after a change to those paths; a name the link no longer finds is skipped, and what
# the list misses is laid out after it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh" valgrind linux-perf nodejs
idem=$("$root/bench/idem_binary.sh" "$@")
source "$root/bench/otlp_sink.sh"
otlp_sink_setup idem-order
export IDEM_STORE=$dir/store.db
unset TRACEPARENT "${!OTEL_@}"
"$idem" run -q -k finished -- true
# Runs with traces on send their spans to bench/node/otlp_sink.js on a free port of 127.0.0.1.
otlp_sink_start
endpoint=$otlp_endpoint

callgrind() {
  valgrind --tool=callgrind --demangle=no --compress-strings=no \
    --callgrind-out-file="$dir/cg.$1" "${@:2}" >/dev/null 2>&1
  # fn= lines name each function once per file; '2 and later mark its recursions.
  sed -n "s/^fn=//p" "$dir/cg.$1" | sed "s/'[0-9]*\$//"
}
{
  callgrind version "$idem" --version
  callgrind replay "$idem" run -k finished -- true
  callgrind ls "$idem" ls
  callgrind show "$idem" show finished
} >"$dir/named"

cp "$idem" "$dir/idem-first"  # its own name: perf's samples of these runs alone
cat >"$dir/first.sh" <<EOF
for i in \$(seq 200); do
  "$idem" rm fresh 2>/dev/null || true; "$dir/idem-first" run -k fresh -- true
  "$idem" rm fresh 2>/dev/null || true; OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint "$dir/idem-first" run -k fresh -- true
  OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint "$dir/idem-first" run -k fresh -- true
done
EOF
perf record -q -F 40000 -o "$dir/perf.data" bash "$dir/first.sh" >/dev/null 2>&1
perf report -i "$dir/perf.data" --comm idem-first --sort sym --stdio --no-demangle 2>/dev/null |
  sed -n 's/.*\[\.\] //p' >>"$dir/named"

# The data those paths read and write, from a trace of every load and store (lackey): packed
# too, they are a few pages written (copied or zeroed) instead of one for each variable.
lackey() {
  valgrind --tool=lackey --trace-mem=yes --log-file="$dir/lk.$1" "${@:2}" >/dev/null 2>&1
}
lackey version "$idem" --version
lackey replay "$idem" run -k finished -- true
lackey ls "$idem" ls
python3 "$root/scripts/link_order_data.py" "$idem" "$dir"/lk.* >>"$dir/named"

# First appearance wins; addresses and callgrind's pseudo-functions are no names.
awk '!/^0x/ && !/^\(/ && NF && !seen[$0]++' "$dir/named" >"$root/src/link_order.txt"
echo "src/link_order.txt: $(wc -l <"$root/src/link_order.txt") names"
