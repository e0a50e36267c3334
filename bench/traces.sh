#!/usr/bin/env bash
# What traces (contract §12) cost the CLI: a replay of a finished key and a first run of `true`
# (the record removed before each, untimed), with traces off (no OTEL_* variable), on (a receiver
# up: bench/node/otlp_sink.js, which parses each request and answers at once, as a Collector's
# receiver does before its pipeline; the tests' receiver, which checks every span in Python, is
# slower to answer than idem takes to send), and with the receiver down (the endpoint a port nobody listens on: connections
# refused). Each sample is one idem process, timed from its spawn to its exit; the three
# configurations take turns sample by sample, in an order shuffled each time, so that a machine
# whose load drifts weighs on the three alike (hyperfine would run all the samples of one before
# the next's). Medians and p99 of ROUNDS x RUNS samples a cell, and the ratios to traces off
# beside their goals (on/off <= 1.05; receiver down: replay p99 within 5% of off's). In the same
# rotation, the export's floor: bench/export_floor.c, static, with and without one POST to the
# receiver (connect, write, close, as the CLI does), and what that adds as a share of a replay.
# Usage: bench/traces.sh [IDEM_BIN]   (without it, builds idem Release into build-bench/)
#   ROUNDS (3), RUNS (300); QUICK=1: 1 round of 30.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=${QUICK:-0}
rounds=${ROUNDS:-$( ((quick)) && echo 1 || echo 3)}
runs=${RUNS:-$( ((quick)) && echo 30 || echo 300)}
"$root/scripts/deps.sh" python3 nodejs gcc
idem=$("$root/bench/idem_binary.sh" "$@")
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset TRACEPARENT
source "$root/bench/otlp_sink.sh"
otlp_sink_setup idem-traces
export IDEM_DB=$dir/idem.db

otlp_sink_start
up=$otlp_endpoint
# A port nobody listens on: bound, then closed (the kernel hands it out again only later).
down=http://127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$idem" run -q -k "done" -- true
gcc -O2 -static "$root/bench/export_floor.c" -o "$dir/export_floor"

python3 - "$idem" "$up" "$down" "$rounds" "$runs" "$dir/export_floor" <<'PY'
import os, random, statistics, subprocess, sys, time
idem, up, down, rounds, runs, floor = sys.argv[1:]
n = int(rounds) * int(runs)
base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
envs = {"off": base, "on": dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=up),
        "down": dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=down)}

def once(args, env, program=idem):
    t = time.perf_counter_ns()
    pid = os.posix_spawn(program, [program] + args, env)
    _, status = os.waitpid(pid, 0)
    took = (time.perf_counter_ns() - t) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{program} {' '.join(args)} failed")
    return took

times = {(m, c): [] for m in ("replay", "first") for c in envs}
times.update({("floor", c): [] for c in ("off", "on")})
port = up.rsplit(":", 1)[1]
for i in range(n + 10):  # the first 10 turns warm up
    for measure in ("replay", "first"):
        order = list(envs)
        random.shuffle(order)
        for config in order:
            if measure == "first":
                subprocess.run([idem, "rm", "fresh"], env=base, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            took = once(["run", "-k", "done" if measure == "replay" else "fresh", "--", "true"],
                        envs[config])
            if i >= 10:
                times[(measure, config)].append(took)
    order = ["off", "on"]
    random.shuffle(order)
    for config in order:
        took = once([port] if config == "on" else [], base, floor)
        if i >= 10:
            times[("floor", config)].append(took)

def p99(t):
    t = sorted(t)
    return t[min(len(t) - 1, int(round(0.99 * (len(t) - 1))))]

print("| measure | off: median / p99 | on (receiver up) | receiver down | on / off (median) "
      "| down / off (median; p99) | goal |")
print("|---|---|---|---|---|---|---|")
for name, label in (("replay", "replay of a finished key"), ("first", "first run of `true`")):
    off, on, dn = (times[(name, c)] for c in ("off", "on", "down"))
    m = {k: statistics.median(v) for k, v in (("off", off), ("on", on), ("down", dn))}
    goal = "on/off ≤ 1.05" + ("; down p99 ≤ 1.05× off's" if name == "replay" else "")
    print(f"| {label} | {m['off']:.2f} / {p99(off):.2f} ms | {m['on']:.2f} / {p99(on):.2f} ms | "
          f"{m['down']:.2f} / {p99(dn):.2f} ms | {m['on'] / m['off']:.3f} | "
          f"{m['down'] / m['off']:.3f}; {p99(dn) / p99(off):.3f} | {goal} |")
floor_off, floor_on = (statistics.median(times[("floor", c)]) for c in ("off", "on"))
replay_off = statistics.median(times[("replay", "off")])
print(f"\nThe export's floor (bench/export_floor.c, static): {floor_off:.2f} ms without, "
      f"{floor_on:.2f} ms with one POST to the receiver: +{floor_on - floor_off:.2f} ms, "
      f"{(floor_on - floor_off) / replay_off:.3f} of a replay with traces off.")
print(f"\n{n} samples a cell.")
PY
kill -TERM "$receiver_pid"
for _ in $(seq 50); do [[ -s $dir/sink.out ]] && break; sleep 0.1; done
receiver_pid=
echo "The receiver took $(cat "$dir/sink.out") (the warm-up's and the measured runs' with traces on)."
