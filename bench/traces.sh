#!/usr/bin/env bash
# What traces (contract §12) cost the CLI: a replay of a finished key and a first run of `true`
# (the record removed before each), with traces off (no OTEL_* variable), on (a receiver up: the
# tests' OTLP/HTTP receiver, tests/helpers/otlp_receiver.py, which checks and records every span),
# and with the receiver down (the endpoint a port nobody listens on: connections refused).
# hyperfine -N, every command through `env` so that each pays the same extra exec; ROUNDS rounds
# of RUNS runs each, the order of the three turned every round; medians and p99 over all rounds,
# and the ratios to traces off beside their goals (on/off ≤ 1.05; receiver down: replay p99
# within 5% of off's).
# Usage: bench/traces.sh [IDEM_BIN]   (without it, builds idem Release into build-bench/)
#   ROUNDS (3), RUNS (300); QUICK=1: 1 round of 30.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=${QUICK:-0}
rounds=${ROUNDS:-$( ((quick)) && echo 1 || echo 3)}
runs=${RUNS:-$( ((quick)) && echo 30 || echo 300)}
"$root/scripts/deps.sh" hyperfine python3
if (($# > 0)); then
  idem=$(realpath "$1")
else
  cmake -S "$root" -B "$root/build-bench" -DCMAKE_BUILD_TYPE=Release -DIDEM_TESTS=OFF >/dev/null
  cmake --build "$root/build-bench" -j"$(nproc)" --target idem >/dev/null
  idem=$root/build-bench/idem
fi
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset TRACEPARENT OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_SDK_DISABLED
dir=$(mktemp -d "${TMPDIR:-/tmp}/idem-traces.XXXXXX")
receiver_pid=
cleanup() {
  [[ -z $receiver_pid ]] || kill -KILL "$receiver_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
export IDEM_DB=$dir/idem.db

python3 "$root/tests/helpers/otlp_receiver.py" --port-file "$dir/port" --spans "$dir/spans.jsonl" \
  --errors "$dir/errors" &
receiver_pid=$!
disown "$receiver_pid"  # its end, killed, is not a job to report
for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.1; done
[[ -s $dir/port ]] || { echo "the receiver did not start" >&2; exit 1; }
up=http://127.0.0.1:$(<"$dir/port")
# A port nobody listens on: bound, then closed (the kernel hands it out again only later).
down=http://127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

declare -A envs=([off]="-u OTEL_EXPORTER_OTLP_ENDPOINT" [on]="OTEL_EXPORTER_OTLP_ENDPOINT=$up"
  [down]="OTEL_EXPORTER_OTLP_ENDPOINT=$down")
"$idem" run -q -k done -- true
"$idem" run -q -k fresh -- true

# measure NAME CONFIG ARGS...: one hyperfine of `env CONFIG idem ARGS`, its times appended to
# $dir/NAME-CONFIG.times (seconds, one a line).
measure() {
  local name=$1 config=$2
  shift 2
  local prepare=()
  [[ $name != first ]] || prepare=(--prepare "$idem rm fresh")
  # shellcheck disable=SC2086  # the config is words for env
  hyperfine -N -w 5 -r "$runs" "${prepare[@]}" --export-json "$dir/hf.json" \
    "env ${envs[$config]} $idem $*" >/dev/null
  python3 -c 'import json, sys; print("\n".join(map(str, json.load(open(sys.argv[1]))["results"][0]["times"])))' \
    "$dir/hf.json" >>"$dir/$name-$config.times"
}

order=(off on down)
for ((r = 0; r < rounds; ++r)); do
  for config in "${order[@]}"; do
    measure replay "$config" run -k done -- true
    measure first "$config" run -k fresh -- true
  done
  order=("${order[1]}" "${order[2]}" "${order[0]}")
done
[[ ! -s $dir/errors ]] || { echo "the receiver refused spans: $(head -3 "$dir/errors")" >&2; exit 1; }
spans=$(wc -l <"$dir/spans.jsonl")

python3 - "$dir" "$spans" <<'EOF'
import statistics, sys
d, spans = sys.argv[1], sys.argv[2]
def times(name, config):
    return sorted(float(l) * 1000 for l in open(f"{d}/{name}-{config}.times"))
def p99(t):
    return t[min(len(t) - 1, int(round(0.99 * (len(t) - 1))))]
print("| measure | off: median / p99 | on (receiver up) | receiver down | on / off (median) | down / off (median; p99) | goal |")
print("|---|---|---|---|---|---|---|")
for name, label in (("replay", "replay of a finished key"), ("first", "first run of `true`")):
    off, on, down = (times(name, c) for c in ("off", "on", "down"))
    m = {k: statistics.median(v) for k, v in (("off", off), ("on", on), ("down", down))}
    goal = "on/off ≤ 1.05" + ("; down p99 ≤ 1.05× off's" if name == "replay" else "")
    print(f"| {label} | {m['off']:.2f} / {p99(off):.2f} ms | {m['on']:.2f} / {p99(on):.2f} ms | "
          f"{m['down']:.2f} / {p99(down):.2f} ms | {m['on'] / m['off']:.3f} | "
          f"{m['down'] / m['off']:.3f}; {p99(down) / p99(off):.3f} | {goal} |")
print(f"\n{len(off)} runs per cell; {spans} spans received.")
EOF
