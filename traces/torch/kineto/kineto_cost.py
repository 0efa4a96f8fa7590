#!/usr/bin/env python3
# kineto_cost.py: the host time torch.profiler (Kineto) adds per host event it records, from
# the committed captures of the same torchbench configurations: the Kineto fixtures in this
# folder and the specprof calibration trace (../calib/calib_torch-dense.json.gz). For each
# configuration and phase: the median span of the Kineto phase span and of the specprof
# phase range, the median number of host events Kineto recorded inside the span (cpu_op,
# cuda_runtime, cuda_driver, user_annotation), and their quotient
#   us per event = (Kineto span - specprof span) / events.
# The eager (host-bound) phases give models/timport.c TIMPORT_KINETO_HOST_EVENT_US.
# Run from the repository root: python3 traces/torch/kineto/kineto_cost.py
import bisect, glob, gzip, json, os, statistics

K = "traces/torch/kineto"
SP = "traces/torch/calib/calib_torch-dense.json.gz"
HOST = ("cpu_op", "cuda_runtime", "cuda_driver", "user_annotation", "python_function")

# specprof: median range length per (phase, bs, steps)
sp = {}
with gzip.open(SP, "rt") as f:
    for line in f:
        line = line.strip().rstrip(",")
        if not line.startswith("{") or '"cat":"nvtx"' not in line:
            continue
        e = json.loads(line)
        w = dict(x.split("=", 1) for x in e["name"].split()[1:] if "=" in x)
        key = (e["name"].split()[0], w.get("bs"), w.get("steps"))
        sp.setdefault(key, []).append(e["dur"])

# Kineto span -> the specprof phases it holds (this SGLang layout samples inside verify)
HOLDS = {"draft": ["draft"], "verify": ["verify", "accept"], "draft_extend": ["extend"],
         "step[DECODE": ["decode"]}
print("# %-26s %-13s %5s %12s %12s %8s %10s" % ("configuration", "span", "n", "kineto_us", "specprof_us", "events", "us/event"))
for d in sorted(glob.glob(K + "/torch-dense-*/")):
    name = os.path.basename(d.rstrip("/"))
    bs = name.split("-bs")[1]
    steps = name.split("-spec-s")[1].split("-")[0] if "-spec-s" in name else "0"
    with gzip.open(glob.glob(d + "*.trace.json.gz")[0], "rt") as f:
        ev = json.load(f)["traceEvents"]
    host = sorted(e["ts"] for e in ev if e.get("ph") == "X" and e.get("cat") in HOST)
    spans = {}
    for a in ev:
        if a.get("cat") != "user_annotation":
            continue
        key = a["name"].split(" ")[0]
        if key not in HOLDS or (key == "step[DECODE" and steps != "0"):
            continue
        n = bisect.bisect_right(host, a["ts"] + a["dur"]) - bisect.bisect_left(host, a["ts"])
        spans.setdefault(key, []).append((a["dur"], n))
    for key, v in spans.items():
        ks = statistics.median(x[0] for x in v)
        nev = statistics.median(x[1] for x in v)
        ss = sum(statistics.median(sp[(p, bs, steps)]) for p in HOLDS[key] if (p, bs, steps) in sp)
        print("  %-26s %-13s %5d %12.1f %12.1f %8d %10.2f" % (name, key, len(v), ks, ss, nev, (ks - ss) / nev))
