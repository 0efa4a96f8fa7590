#!/usr/bin/env python3
"""per_kernel.py: call 31's question in one table (traces/overhead/h200-call31/README.md).
For each round of each run (a: inside call31.sh, b: call30.sh again on the same machine):
torchbench's plain decode at 80 rows (eager, 356 kernels an iteration), unprofiled and under
specprof --mode always in two processes; the per-kernel cost of the capture is the difference of
the two processes' median iterations (the first of three repeats dropped) over 356, beside what
the always process's launch calibration read: in-process (on - off), the clean arm back to back
(on - clean) and swept (on_swept - clean_swept).
usage: python3 per_kernel.py [DIR]   (prints CSV)"""
import csv, os, statistics as st, sys

KERNELS = 356   # decode 352 + sample 4 launches an iteration (the call 29 capture's eager instances)
d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
print("run,round,none_iter_us,always_iter_us,capture_us_per_kernel,calib_inproc_us,calib_clean_us,calib_swept_us")
for run in ("a", "b"):
    txt = open(os.path.join(d, run, "torch.csv"), newline="").read().replace("\r", "")
    rows = [r for r in csv.reader(txt.splitlines()) if r]
    it = rows[0].index("iter_us")
    by = {}
    for r in rows[1:]:
        by.setdefault(r[-1], []).append(float(r[it]))
    cal = {}
    for r in csv.DictReader(open(os.path.join(d, run, "calib.csv"))):
        if r["what"] == "torch":
            cal[r["round"]] = r
    for rd in sorted({k.split("-")[1] for k in by}):
        n, a = by.get("none-" + rd, []), by.get("always-" + rd, [])
        if len(n) < 2 or len(a) < 2 or rd not in cal:
            continue
        nm, am = st.median(n[1:]), st.median(a[1:])
        c = cal[rd]
        f = lambda k: float(c[k])
        print("%s,%s,%.1f,%.1f,%.2f,%.3f,%.3f,%.3f" % (run, rd, nm, am, (am - nm) / KERNELS,
              f("launch_on_us") - f("launch_off_us"), f("launch_on_us") - f("launch_clean_us"),
              f("launch_on_swept_us") - f("launch_clean_swept_us")))
