#!/usr/bin/env python3
"""overhead_tables.py: turns what profiler/device/overhead_run.sh brought back (rows.csv,
stats.jsonl, floor.txt) into the committed tables (CPU, no GPU):
  DIR/LOOP.csv        run,profiled,tok_s   (profiled 0: mode none, 1: mode --profiled)
  DIR/LOOP_modes.csv  run,mode,tok_s       (every mode measured on the loop)
  DIR/summary.csv     loop,mode,runs,median_tok_s,min,max,loss_pct (median against none)
  DIR/traces.csv      loop,mode,round,records,bytes,bytes_per_record,span_s,records_per_s,
                      windows,window_pct,kernels,api,graph_trace,bytes_per_s,
                      attaches,attach_ms,detaches,detach_ms
Each process's first run (run 0: allocator, cuBLAS and JIT set-up) is dropped.

usage: overhead_tables.py RESULTS_DIR OUT_DIR [--profiled specprof]
"""
import argparse
import csv
import json
import os
import statistics
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--profiled", default="specprof", help="the mode written as profiled=1")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    runs = {}   # (loop, mode) -> [tok_s], in the order measured
    with open(os.path.join(a.results, "rows.csv")) as f:
        for r in csv.DictReader(f):
            if int(r["run"]) == 0 or not r["tok_s"]:
                continue
            runs.setdefault((r["loop"], r["mode"]), []).append(float(r["tok_s"]))
    loops = sorted({l for l, _ in runs})
    summary = [("loop", "mode", "runs", "median_tok_s", "min_tok_s", "max_tok_s", "loss_pct")]
    for loop in loops:
        modes = [m for (l, m) in runs if l == loop]
        with open(os.path.join(a.out, f"{loop}_modes.csv"), "w") as f:
            f.write("run,mode,tok_s\n")
            for m in modes:
                for i, t in enumerate(runs[(loop, m)], 1):
                    f.write(f"{i},{m},{t:.2f}\n")
        if (loop, "none") in runs and (loop, a.profiled) in runs:
            with open(os.path.join(a.out, f"{loop}.csv"), "w") as f:
                f.write("run,profiled,tok_s\n")
                for p, m in ((0, "none"), (1, a.profiled)):
                    for i, t in enumerate(runs[(loop, m)], 1):
                        f.write(f"{i},{p},{t:.2f}\n")
        base = statistics.median(runs[(loop, "none")]) if (loop, "none") in runs else None
        for m in modes:
            v = runs[(loop, m)]
            med = statistics.median(v)
            loss = f"{100 * (1 - med / base):.1f}" if base else ""
            summary.append((loop, m, len(v), f"{med:.2f}", f"{min(v):.2f}", f"{max(v):.2f}", loss))
    with open(os.path.join(a.out, "summary.csv"), "w") as f:
        csv.writer(f, lineterminator="\n").writerows(summary)
    st = os.path.join(a.results, "stats.jsonl")
    if os.path.exists(st):
        rows = [("loop", "mode", "round", "records", "bytes", "bytes_per_record", "span_s", "records_per_s",
                 "windows", "window_pct", "kernels", "api", "graph_trace", "bytes_per_s", "attaches",
                 "attach_ms", "detaches", "detach_ms")]
        with open(st) as f:
            for line in f:
                # the line starts with the harness's loop/mode/round; check's own "mode" (the
                # capture mode) comes later under the same key, so read the harness's by hand
                head = line[: line.index(',"file"')] + "}"
                h = json.loads(head)
                d = json.loads(line)
                if d["records"] <= 0 or d["end_ns"] <= 0:
                    rows.append((h["loop"], h["mode"], h["round"], "cut", "", "", "", "", d["windows"], "", "", "", "",
                                 "", "", "", "", ""))
                    continue
                span = (d["end_ns"] - d["t0_ns"]) / 1e9
                rows.append((h["loop"], h["mode"], h["round"], d["records"], d["bytes"],
                             f"{d['bytes'] / d['records']:.1f}", f"{span:.2f}", f"{d['records'] / span:.0f}",
                             d["windows"], f"{100 * d['window_ns'] / 1e9 / span:.1f}", d["kernels"], d["api"],
                             d["graph_trace"], f"{d['bytes'] / span:.0f}", d.get("attaches", 0),
                             f"{d.get('attach_ns', 0) / 1e6:.2f}", d.get("detaches", 0),
                             f"{d.get('detach_ns', 0) / 1e6:.2f}"))
        with open(os.path.join(a.out, "traces.csv"), "w") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
    for r in summary:
        print(",".join(str(x) for x in r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
