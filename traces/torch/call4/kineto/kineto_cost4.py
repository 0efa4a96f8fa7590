#!/usr/bin/env python3
# kineto_cost4.py: run from the repository root: python3 traces/torch/call4/kineto/kineto_cost4.py traces/torch/call4/kineto
# (output: kineto_cost4.txt beside it)
# Kineto's host cost per recorded host event, from call 4's fixtures: each point ran unprofiled
# ('none') then under torch.profiler ('kineto') back to back (kineto/measured.csv); the
# profiled iterations' extra time over the host events Kineto recorded per iteration.
import csv, glob, gzip, json, os, statistics as st, sys
K = sys.argv[1]
HOST = ("cpu_op", "cuda_runtime", "cuda_driver", "user_annotation", "python_function")
M = {}
for r in csv.DictReader(open(K + "/measured.csv")):
    key = (r['mode'], r['steps'] if r['mode'] == 'spec' else '0', r['concurrency'])
    M.setdefault(key, {})[r['profiler']] = float(r['iter_us'])
print("# %-28s %10s %10s %8s %9s" % ("configuration", "none_us", "kineto_us", "events", "us/event"))
for d in sorted(glob.glob(K + "/torch-dense-*/")):
    name = os.path.basename(d.rstrip("/"))
    bs = name.split("-bs")[1]
    steps = name.split("-spec-s")[1].split("-")[0] if "-spec-s" in name else "0"
    mode = "spec" if "-spec-" in name else "baseline"
    ev = json.load(gzip.open(glob.glob(d + "*.trace.json.gz")[0], "rt"))["traceEvents"]
    nh = sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in HOST)
    # iterations: one verify stage span (spec) or one DECODE step span (baseline) each
    want = "verify" if mode == "spec" else "step[DECODE"
    it = sum(1 for e in ev if e.get("cat") == "user_annotation" and e["name"].split(" ")[0] == want)
    m = M.get((mode, steps, bs), {})
    if not it or 'none' not in m or 'kineto' not in m: continue
    per_it = nh / it
    print("  %-28s %10.1f %10.1f %8.0f %9.2f" % (name, m['none'], m['kineto'], per_it, (m['kineto'] - m['none']) / per_it))
