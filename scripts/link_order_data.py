#!/usr/bin/env python3
# scripts/link_order.sh's helper: the variables a trace of loads and stores touches, first touch
# first. Arguments: the binary traced (its symbol table, from nm) and lackey's --trace-mem logs.
import bisect
import subprocess
import sys

binary, *traces = sys.argv[1:]
starts, ends, names = [], [], []
for line in subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True,
                           text=True, check=True).stdout.splitlines():
    f = line.split()
    if len(f) == 4 and f[2] in "dDbBrRV":
        a = int(f[0], 16)
        starts.append(a); ends.append(a + int(f[1], 16)); names.append(f[3])
order = sorted(range(len(starts)), key=starts.__getitem__)
starts = [starts[i] for i in order]; ends = [ends[i] for i in order]; names = [names[i] for i in order]
seen, out, lines = set(), [], set()
for trace in traces:
    for line in open(trace):
        if len(line) < 4 or line[1] not in "LSM":
            continue
        addr = int(line[3:].split(",")[0], 16)
        if addr >> 6 in lines:
            continue
        lines.add(addr >> 6)
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and addr < ends[i] and names[i] not in seen:
            seen.add(names[i]); out.append(names[i])
print("\n".join(out))
