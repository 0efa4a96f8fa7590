#!/usr/bin/env python3
"""call24_tables.py DIR: the tables of profiler/device/call24.sh's runs (DIR/ab_*.csv: a lite
process, each point's window captured (profiler range-on) and not (range-off); DIR/none_*.csv: an
unprofiled process). Per configuration and way: windows, median and mean tok/s, the mean over the
median, and the share of slow windows (iteration time above 1.1x the configuration's median over
the unprofiled windows); then the same pooled over the configurations. Writes DIR/windows.csv
(every window: file,way,mode,steps,concurrency,rep,iter_us,tok_s) and DIR/summary.txt."""
import csv, glob, os, statistics as st, sys

def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    rows = []
    for f in sorted(glob.glob(os.path.join(d, "ab_*.csv")) + glob.glob(os.path.join(d, "none_*.csv"))):
        with open(f) as fh:
            for r in csv.DictReader(fh):
                way = r.get("profiler", "")
                if way not in ("range-on", "range-off", "none"):
                    sys.exit("%s: field profiler: value %r: expected range-on, range-off or none" % (f, way))
                rows.append(dict(file=os.path.basename(f), way=way, mode=r["mode"], steps=int(r["steps"]),
                                 conc=int(r["concurrency"]), rep=int(r["rep"]), iter_us=float(r["iter_us"]),
                                 tok_s=float(r["tok_s"])))
    if not rows:
        sys.exit("%s: no ab_*.csv or none_*.csv rows" % d)
    with open(os.path.join(d, "windows.csv"), "w") as fh:
        w = csv.writer(fh)
        w.writerow(["file", "way", "mode", "steps", "concurrency", "rep", "iter_us", "tok_s"])
        for r in rows:
            w.writerow([r["file"], r["way"], r["mode"], r["steps"], r["conc"], r["rep"],
                        "%.1f" % r["iter_us"], "%.2f" % r["tok_s"]])
    ways = ["none", "range-off", "range-on"]
    cfgs = sorted({(r["mode"], r["steps"], r["conc"]) for r in rows})
    out = ["# call 24: windows of 0.1 s; slow = iteration time above 1.1x the configuration's "
           "median over its unprofiled windows",
           "# %-8s %5s %4s  %-9s %7s %10s %10s %9s %7s %8s" % ("mode", "steps", "rows", "way", "windows",
                                                            "median", "mean", "mean/med", "slow", "slow%")]
    pool = {w: [0, 0, []] for w in ways}
    for c in cfgs:
        sel = [r for r in rows if (r["mode"], r["steps"], r["conc"]) == c]
        base = [r["iter_us"] for r in sel if r["way"] == "none"]
        if not base:
            continue
        m0 = st.median(base)
        for w in ways:
            v = [r for r in sel if r["way"] == w]
            if not v:
                continue
            t = [r["tok_s"] for r in v]
            slow = sum(r["iter_us"] > 1.1 * m0 for r in v)
            pool[w][0] += slow
            pool[w][1] += len(v)
            pool[w][2].append(st.median(t))
            out.append("  %-8s %5d %4d  %-9s %7d %10.1f %10.1f %9.3f %7d %7.1f%%" % (
                c[0], c[1], c[2], w, len(v), st.median(t), st.mean(t), st.mean(t) / st.median(t),
                slow, 100.0 * slow / len(v)))
    out.append("# pooled over the configurations: slow windows")
    for w in ways:
        s, n, _ = pool[w]
        if n:
            out.append("  %-9s %5d of %5d  %5.1f%%" % (w, s, n, 100.0 * s / n))
    text = "\n".join(out) + "\n"
    with open(os.path.join(d, "summary.txt"), "w") as fh:
        fh.write(text)
    sys.stdout.write(text)

main()
