#!/usr/bin/env python3
"""cupti_kernel_cost.py: CUPTI's GPU time per kernel in a torchbench always-mode capture, for
the fit's FIT_CUPTI_KERNEL_US (docs/fit.md, fit.env of a calibration folder). torchbench times
each phase with CUDA events; a graph phase's GPU time while specprof captured it against the same configuration unprofiled (the grid's
measured.csv, the same device call, both alphas averaged: a forward's GPU time does not depend
on the acceptance) over the kernels a replay of that phase runs (counted in the trace: kernels
whose phase is the phase, per range instance of the configuration) is what CUPTI adds to each
kernel. The captured time is the replay's GPU span in the trace (first kernel's start to the last
kernel's end, per range instance, median over the instances): torchbench's own event timing
while captured includes its host's waits under CUPTI. Prints one line per graph phase cell and
the median.
usage: cupti_kernel_cost.py TRACE.json.gz GRID_MEASURED.csv PRESET
On call 4 (traces/torch/call4) it gives 0.109 (torch-dense) and 0.171 (torch-moe), the values
its fit.env states."""
import csv, gzip, json, re, statistics, sys
from collections import defaultdict

PHASES = ("draft", "verify", "extend", "decode")


def key_of(name):
    w = name.split(" ")[0]
    kv = dict(re.findall(r"(\w+)=(\S+)", name))
    return w, int(kv.get("steps", 0)), int(kv.get("bs", kv.get("rows", 0))), kv.get("graph", "0")


def main(trace, grid, preset):
    ev = json.load(gzip.open(trace) if trace.endswith(".gz") else open(trace))
    if isinstance(ev, dict):
        ev = ev.get("traceEvents", [])
    # one graph replay per launch: its kernels share the launch's correlation id
    rep = defaultdict(lambda: [1e300, -1e300, 0, None])   # corr: first start, last end, kernels, cell
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        a = e.get("args", {})
        nv = a.get("nvtx", "")
        if not nv or not a.get("graph_id", 0):
            continue
        k = key_of(nv)
        if k[0] not in PHASES or k[3] != "1":
            continue
        r = rep[a.get("corr")]
        r[0] = min(r[0], e["ts"])
        r[1] = max(r[1], e["ts"] + e.get("dur", 0))
        r[2] += 1
        r[3] = k[:3]
    spans, kerns = defaultdict(list), defaultdict(list)
    for r in rep.values():
        spans[r[3]].append(r[1] - r[0])
        kerns[r[3]].append(r[2])

    def rows(path):
        with open(path) as f:
            return [r for r in csv.DictReader(f) if r.get("preset") == preset and r.get("mode") in ("spec", "baseline")]

    unp = defaultdict(list)
    for r in rows(grid):
        for p in PHASES:
            v = float(r.get(p + "_us") or 0)
            if v > 0 and r.get("graph") == "1":
                unp[(p, int(r["steps"]), int(r["concurrency"]))].append(v)
    per = []
    print("# phase steps conc kernels captured_us unprofiled_us us_per_kernel")
    for k in sorted(spans):
        if k not in unp:
            continue
        kn = statistics.median(kerns[k])
        a, b = statistics.median(spans[k]), statistics.mean(unp[k])
        per.append((a - b) / kn)
        print("%-6s %d %3d %6.0f %10.1f %10.1f %+8.3f" % (k[0], k[1], k[2], kn, a, b, per[-1]))
    if not per:
        sys.exit("cupti_kernel_cost.py: no graph phase cell in both %s and %s" % (trace, grid))
    q = statistics.quantiles(per, n=4) if len(per) > 1 else [per[0]] * 3
    print("# median %.3f us a kernel over %d cells (quartiles %.3f and %.3f)" % (statistics.median(per), len(per), q[0], q[2]))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
