#!/usr/bin/env python3
"""gapprobe: how far apart a forward's kernels run on the GPU, eager against a CUDA graph,
with and without a profiler (issue 13: the eager instances' GPU idle the fit measures).

For each forward shape (torchbench's target forward at ROWS x Q tokens, or its one-layer
draft), three timings, each a CUDA event pair around the forward, repeated:
  graph   the forward captured in a CUDA graph, replayed while the stream is busy with a
          spin kernel (torch.cuda._sleep), so every node is queued before it can run;
  queued  the same forward launched eagerly while the stream is busy the same way: every
          kernel is launched before the GPU reaches it, so the span is the kernels and the
          GPU's own gaps between queued kernels, with no wait for the host;
  free    the forward launched eagerly on an idle stream, as a serving loop does: the span
          also holds the GPU's waits for the host's launches.
(queued - graph) / kernels is the GPU idle an eager kernel costs beyond a graph node when
nothing waits for the host. Run once unprofiled and once under `specprof --mode always`, the
difference is what the profiler adds to it. Kernels per forward are counted with
torch.profiler in unprofiled processes (it cannot run beside specprof).

Output: CSV rows `tag,profiled,shape,kind,rep,span_us,kernels,launch_us` (launch_us: host
time of the eager launches; a queued row whose launches outlast the spin is dropped, said on
stderr). NVTX ranges `gapprobe KIND SHAPE` bracket each timed forward.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchbench as tb  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="torch-dense")
    ap.add_argument("--shapes", default="target:80:3,target:80:1,target:40:3,target:8:1,draft:80:1",
                    help="KIND:ROWS:Q,... (KIND target or draft)")
    ap.add_argument("--ctx", type=int, default=1100, help="KV positions before the forward")
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--spin-ms", type=float, default=40.0)
    ap.add_argument("--tag", default="run")
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()
    profiled = 1 if os.environ.get("CUDA_INJECTION64_PATH") else 0
    dev, dt = "cuda", torch.bfloat16
    shapes = []
    for s in a.shapes.split(","):
        k, r, q = s.split(":")
        shapes.append((k, int(r), int(q)))
    rmax = max(r for _, r, _ in shapes)
    m = tb.Model(a.preset, tb.PRESETS[a.preset], rmax, a.ctx + 64, dev, dt, 1,
                 tb.pick_moe_impl("auto", dev))
    h = m.h
    # spin length: cycles per ms from one timed spin
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    e0.record()
    torch.cuda._sleep(20_000_000)
    e1.record()
    torch.cuda.synchronize()
    cyc = int(20_000_000 / e0.elapsed_time(e1) * a.spin_ms)
    rows_out = []

    for kind, rows, q in shapes:
        name = "%s r%dq%d" % (kind, rows, q)
        tok = torch.randint(0, 1000, (rows, q), device=dev)
        base = torch.full((rmax,), a.ctx, device=dev, dtype=torch.long)
        hid = torch.randn(rows * q, h, device=dev, dtype=dt)
        if kind == "target":
            def fwd():
                return m.target(tok, base, rows, q, False)[0]
        else:
            def fwd():
                return m.draft(tok, hid, base, rows, q)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                fwd()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fwd()
        torch.cuda.synchronize()
        kernels = 0
        if not profiled:
            try:
                from torch.profiler import profile, ProfilerActivity
                with profile(activities=[ProfilerActivity.CUDA]) as p:
                    fwd()
                    torch.cuda.synchronize()
                kernels = sum(1 for ev in p.events()
                              if ev.device_type == torch.autograd.DeviceType.CUDA)
            except Exception as ex:   # counted from the profiled processes' traces instead
                print("gapprobe: %s: kernels not counted (%s)" % (name, ex), file=sys.stderr)
        for rep in range(a.reps):
            for kd in ("graph", "queued", "free"):
                b0, b1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                if kd != "free":
                    torch.cuda._sleep(cyc)
                torch.cuda.nvtx.range_push("gapprobe %s %s" % (kd, name))
                t0 = time.perf_counter()
                b0.record()
                if kd == "graph":
                    g.replay()
                else:
                    fwd()
                b1.record()
                t1 = time.perf_counter()
                torch.cuda.nvtx.range_pop()
                torch.cuda.synchronize()
                lus = (t1 - t0) * 1e6
                if kd == "queued" and lus > 0.8 * a.spin_ms * 1e3:
                    print("gapprobe: %s rep %d: launches took %.0f us of a %.0f us spin: dropped"
                          % (name, rep, lus, a.spin_ms * 1e3), file=sys.stderr)
                    continue
                rows_out.append((a.tag, profiled, name, kd, rep, b0.elapsed_time(b1) * 1e3,
                                 kernels, lus))
        del g
    new = not os.path.exists(a.csv)
    with open(a.csv, "a") as f:
        if new:
            f.write("tag,profiled,shape,kind,rep,span_us,kernels,launch_us\n")
        for r in rows_out:
            f.write("%s,%d,%s,%s,%d,%.2f,%d,%.1f\n" % r)
    # the medians, for the log
    import statistics as st
    for kind, rows, q in shapes:
        name = "%s r%dq%d" % (kind, rows, q)
        med = {}
        for kd in ("graph", "queued", "free"):
            v = [r[5] for r in rows_out if r[2] == name and r[3] == kd and r[4] > 0]
            med[kd] = st.median(v) if v else float("nan")
        k = next((r[6] for r in rows_out if r[2] == name), 0)
        print("%s %s profiled=%d kernels=%d graph %.1f queued %.1f free %.1f us; (queued-graph)/k %s"
              % (a.tag, name, profiled, k, med["graph"], med["queued"], med["free"],
                 "%.3f" % ((med["queued"] - med["graph"]) / k) if k else "-"))


if __name__ == "__main__":
    main()
