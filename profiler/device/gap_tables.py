#!/usr/bin/env python3
"""gap_tables.py DIR: the tables of a gapcall.sh result folder (gap.csv, specbench.csv when
present): per forward shape, the median span of each timing (graph replay, eager queued
behind a spin, eager on an idle stream) unprofiled and under specprof always, each process's
first repeat dropped; the eager kernel's GPU idle beyond a graph node, (queued - graph) /
kernels, unprofiled, with the range over processes; what CUPTI adds to the queued and graph
spans. Then, from specbench.csv, each phase's median time unprofiled and profiled."""
import csv
import statistics as st
import sys
from collections import defaultdict

d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/gap.csv")))
kern = {}
by = defaultdict(list)          # (shape, kind, profiled, tag) -> spans
for r in rows:
    if int(r["kernels"]) > 0:
        kern[r["shape"]] = int(r["kernels"])
    if int(r["rep"]) == 0:
        continue
    by[(r["shape"], r["kind"], r["profiled"], r["tag"])].append(float(r["span_us"]))
shapes = sorted({k[0] for k in by}, key=lambda s: (s.split()[0], -int(s.split()[1][1:].split("q")[0]), s))
print("# gapcall: median span (us) of the kept repeats over every process; per process the "
      "median, then min..max over processes")
print("# shape            kernels  graph(none)  queued(none)  free(none)  graph(always)  queued(always)"
      "  (queued-graph)/k none [process range]   CUPTI on queued /k  on graph /k")
for s in shapes:
    def med(kind, p):
        v = [x for (sh, k, pp, t), xs in by.items() if sh == s and k == kind and pp == p for x in xs]
        return st.median(v) if v else float("nan")
    def per_proc(p):
        tags = sorted({t for (sh, k, pp, t) in by if sh == s and pp == p})
        out = []
        for t in tags:
            g = st.median(by[(s, "graph", p, t)]) if by[(s, "graph", p, t)] else None
            q = st.median(by[(s, "queued", p, t)]) if by[(s, "queued", p, t)] else None
            if g and q:
                out.append((q - g) / kern.get(s, 1))
        return out
    k = kern.get(s, 0)
    gn, qn, fn, ga, qa = med("graph", "0"), med("queued", "0"), med("free", "0"), med("graph", "1"), med("queued", "1")
    pp = per_proc("0")
    print("%-18s %7d %12.1f %13.1f %11.1f %14.1f %15.1f %12.3f [%.3f..%.3f] %18.3f %11.3f" % (
        s, k, gn, qn, fn, ga, qa, (qn - gn) / k if k else float("nan"),
        min(pp) if pp else float("nan"), max(pp) if pp else float("nan"),
        (qa - qn) / k if k else float("nan"), (ga - gn) / k if k else float("nan")))
try:
    sb = list(csv.DictReader(open(d + "/specbench.csv")))
except OSError:
    sys.exit(0)
print("#")
print("# specbench (llama8b): median phase time (us) over the runs, unprofiled / specprof always, difference")
agg = defaultdict(list)
for r in sb:
    prof = "always" if r["tag"].startswith("sb_always") else "none"
    agg[(r["mode"], r["concurrency"], r["graph"], prof)].append(r)
for mode, conc, graph in sorted({(m, c, g) for (m, c, g, p) in agg}, key=lambda x: (x[0], int(x[1]))):
    out = []
    for ph in ("draft_us", "verify_us", "extend_us", "decode_us", "iter_us"):
        a = [float(r[ph]) for r in agg[(mode, conc, graph, "none")]]
        b = [float(r[ph]) for r in agg[(mode, conc, graph, "always")]]
        if not a or not b or st.median(a) == 0:
            continue
        out.append("%s %.0f / %.0f (%+.0f)" % (ph[:-3], st.median(a), st.median(b), st.median(b) - st.median(a)))
    print("%-8s conc %-3s %s  %s" % (mode, conc, "graph" if graph == "1" else "eager", "  ".join(out)))
