#!/usr/bin/env python3
"""kernel_rows.py: per kernel, its GPU time in each graph replay of one phase, by the replay's
batch size (the range's bs=), from a node-level specprof trace (--mode always; JSON or .json.gz).

usage: kernel_rows.py TRACE PHASE OUT.csv
writes OUT.csv: kernel,bs,launches,median_us (the median over the phase's replays at that batch
size of the kernel's summed time in a replay; a kernel a replay did not run counts 0 there) and
prints the phase's median summed kernel time per batch size.
"""
import collections
import csv
import gzip
import json
import re
import statistics
import sys


def main(argv):
    if len(argv) != 4:
        print("usage: kernel_rows.py TRACE PHASE OUT.csv", file=sys.stderr)
        return 2
    path, phase, out = argv[1:]
    try:
        f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
        doc = json.load(f)
    except (OSError, ValueError) as e:
        print("kernel_rows.py: %s: %s" % (path, e), file=sys.stderr)
        return 2
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    per = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(float)))
    for e in ev:
        a = e.get("args") or {}
        if e.get("cat") != "kernel" or a.get("phase") != phase:
            continue
        m = re.search(r" bs=(\d+)", a.get("nvtx", ""))
        if m:
            per[int(m.group(1))][a["corr"]][e["name"]] += e["dur"]
    if not per:
        print("kernel_rows.py: %s: no kernel of phase %s with bs= in its range" % (path, phase), file=sys.stderr)
        return 2
    names = sorted({n for b in per.values() for r in b.values() for n in r})
    with open(out, "w", newline="") as fo:
        w = csv.writer(fo)
        w.writerow(["kernel", "bs", "launches", "median_us"])
        for n in names:
            for bs in sorted(per):
                v = [r.get(n, 0.0) for r in per[bs].values()]
                w.writerow([n, bs, len(v), "%.2f" % statistics.median(v)])
    for bs in sorted(per):
        print("%s bs=%d: %d replays, median kernel time %.1f us" % (
            phase, bs, len(per[bs]), statistics.median(sum(r.values()) for r in per[bs].values())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
