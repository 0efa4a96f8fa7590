#!/usr/bin/env python3
"""ab_tables.py: the overhead tables of an in-process A/B (torchbench --capture-ab under
specprof --mode lite --capture-range profiler-api; profiler/device/call9.sh).

Every point ran twice per repeat in one process, its measured window recorded (profiled 1:
between cudaProfilerStart and Stop) and not (profiled 0: every interposed call passed straight
through), the order alternating, both windows drawing the same acceptances. Adjacent windows
share the host's speed, which on the H200 moved 1.6-2.5x between processes (docs/torchbench.md).

usage: ab_tables.py OUTDIR PREFIX CSV...   (one CSV per process)
writes OUTDIR/PREFIX_<decode|spec>_c<C>.csv (run,profiled,tok_s: run = process * 100 + repeat,
the repeat's two windows share it; each process's repeat 0, which pays the allocator's first
cudaMallocs, dropped) and prints per loop: pairs, median loss 1 - on/off with a bootstrap 90%
interval of the median (4000 resamples, seed 1), and the unprofiled windows' range.
"""
import csv
import random
import statistics
import sys


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: ab_tables.py OUTDIR PREFIX CSV...", file=sys.stderr)
        return 2
    out, prefix, files = argv[1], argv[2], argv[3:]
    loops = {}
    for pi, f in enumerate(files, 1):
        try:
            rows = list(csv.DictReader(open(f)))
        except OSError as e:
            print("ab_tables.py: %s: %s" % (f, e), file=sys.stderr)
            return 2
        for r in rows:
            if r.get("profiler") not in ("range-on", "range-off"):
                print("ab_tables.py: %s: column profiler: value \"%s\": not an A/B row "
                      "(torchbench --capture-ab)" % (f, r.get("profiler")), file=sys.stderr)
                return 2
            if r["rep"] == "0":
                continue
            name = "%s_%s_c%s" % (prefix, "decode" if r["mode"] == "baseline" else "spec", r["concurrency"])
            run = pi * 100 + int(r["rep"])
            loops.setdefault(name, {}).setdefault(run, {})[r["profiler"]] = float(r["tok_s"])
    rng = random.Random(1)
    print("# loop                  pairs  median_loss  90%_interval      unprofiled tok/s (min..max)")
    for name in sorted(loops):
        pairs = {k: v for k, v in loops[name].items() if len(v) == 2}
        with open("%s/%s.csv" % (out, name), "w") as f:
            f.write("run,profiled,tok_s\n")
            for run in sorted(pairs):
                f.write("%d,0,%.2f\n%d,1,%.2f\n" % (run, pairs[run]["range-off"], run, pairs[run]["range-on"]))
        loss = [1 - v["range-on"] / v["range-off"] for v in pairs.values()]
        if not loss:
            print("  %-22s %5d  (no complete pair)" % (name, 0))
            continue
        boot = sorted(statistics.median(rng.choices(loss, k=len(loss))) for _ in range(4000))
        off = [v["range-off"] for v in pairs.values()]
        print("  %-22s %5d  %+10.2f%%  %+6.2f%% %+6.2f%%   %.1f..%.1f" % (
            name, len(loss), 100 * statistics.median(loss), 100 * boot[200], 100 * boot[3799],
            min(off), max(off)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
