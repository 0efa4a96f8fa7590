#!/usr/bin/env python3
"""eager_compare.py: the eager probe's kernel times (a lite trace taken with --probe-eager N)
against CUPTI's kernel records (an always-mode trace of the same program and configurations,
another process), per eager phase shape. CPU only.

A phase shape is a phase range's name without its ctx= word. Per shape, over its instances:
CUPTI: the kernels whose launch call (by corr) was made on the range's thread inside it, in
start order, each its record's duration. Probe: each kernel entry's a - b - cost_us (0 if less),
and each gap between one entry's a and the next entry's b less cost_us (a gap after a release
entry is not counted: the stream waited for the host there) as unseen kernels (cuBLAS and other
libraries that reach the driver themselves: no interposed launch).

usage: eager_compare.py PROBE_TRACE ALWAYS_TRACE [LABEL] [GAP_US]
GAP_US (default 0): a queue gap taken out of each probed kernel time and of each unseen gap, as
the fit does (FIT_PROBE_EAGER_GAP_US, docs/fit.md 1c): a kernel queued behind another starts
~1.1-1.6 us after it ends on the H100/H200 (traces/gapprobe), time an event pair holds and
CUPTI's duration does not.
Prints one row per shape: instances probe/cupti, kernels per instance (probe's seen, CUPTI's all
and driver-launched), median GPU time per instance (CUPTI; probe seen, unseen, total), the total's
error, and the share error over kernel names (half the summed |share difference| of the seen
kernels' per-name sums: 0 = the same split); then time-weighted totals.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_compare import events, shape_key  # noqa: E402  (one reader of the trace lines)

UNSEEN_MIN_US = 0.5   # a gap less than this above one event's cost is noise (events resolve ~0.5 us)


def med(v):
    return statistics.median(v) if v else float("nan")


GAP = 0.0


def read_probe(path):
    shapes = {}   # key -> list of instances {seen: [(name, us)], unseen_us, n_unseen}
    end = {}
    for e in events(path):
        if e.get("name") == "specprof_end":
            end = e.get("args", {}).get("eager_probe", {})
        if e.get("cat") != "eager_probe":
            continue
        a = e["args"]
        if a.get("other_streams") or a.get("lost") or a.get("watchdog"):
            continue
        cost, names, k = a["cost_us"] + GAP, a["names"], a["k"]
        seen, unseen, nun = [], 0.0, 0
        prev_a, prev_type = None, None
        for x in k:
            t, nm, b, aa = x[0], x[1], x[11], x[12]
            if prev_a is not None and prev_type != 2:
                g = b - prev_a - cost
                if g > UNSEEN_MIN_US:
                    unseen += g
                    nun += 1
            if t == 0:
                seen.append((names[nm] if 0 <= nm < len(names) else "(unnamed)", max(0.0, aa - b - cost)))
            prev_a, prev_type = aa, t
        shapes.setdefault(shape_key(a["phase"]), []).append(
            {"seen": seen, "unseen": unseen, "nun": nun, "cost": cost})
    return shapes, end


def read_always(path):
    ranges, api, kern = [], {}, []
    phases = ("draft", "verify", "accept", "extend", "decode", "sample")
    for e in events(path):
        c = e.get("cat")
        if c == "nvtx" and e.get("ph") == "X" and e["name"].split(" ")[0] in phases:
            ranges.append((e["args"].get("thread", e.get("tid")), e["ts"], e["ts"] + e["dur"], e["name"]))
        elif c == "api":
            a = e.get("args", {})
            api[a.get("corr")] = (a.get("thread"), e["ts"], bool(a.get("driver")))
        elif c == "kernel" and e.get("ph") == "X":
            a = e.get("args", {})
            if not a.get("graph_node_id"):
                kern.append((e["ts"], e["dur"], e["name"], a.get("corr")))
    kern.sort()
    by_thread = {}
    for r in ranges:
        by_thread.setdefault(r[0], []).append(r)
    for v in by_thread.values():
        v.sort(key=lambda r: r[1])
    inst = {}
    for ts, dur, name, corr in kern:
        c = api.get(corr)
        if not c:
            continue
        th, t, drv = c
        best = None
        for r in by_thread.get(th, []):   # the innermost phase range holding the call
            if r[1] <= t <= r[2] and (best is None or r[2] - r[1] < best[2] - best[1]):
                best = r
        if best:
            inst.setdefault(best, []).append((name, dur, drv))
    shapes = {}
    for r, ks in inst.items():
        shapes.setdefault(shape_key(r[3]), []).append(ks)
    return shapes


def main():
    probe_path, always_path = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else ""
    global GAP
    GAP = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    probe, end = read_probe(probe_path)
    cupti = read_always(always_path)
    print(f"# {label} probe {probe_path}: eager_probe {json.dumps(end)}")
    print(f"# always {always_path}; queue gap taken out of each probed kernel and unseen gap: {GAP} us")
    print("# shape | instances probe/cupti | kernels seen / cupti (driver) | us cupti runtime driver total | us probe seen unseen total | "
          "total_err | name_share_err | cost_us")
    tw = {"w": 0.0, "err": 0.0, "share": 0.0}
    for key in sorted(probe):
        p = probe[key]
        c = cupti.get(key)
        if not c:
            print(f"{key} | {len(p)}/0 | no CUPTI instance of this shape")
            continue
        cus = med([sum(k[1] for k in ks) for ks in c])
        crt = med([sum(k[1] for k in ks if not k[2]) for ks in c])
        cdr = med([sum(k[1] for k in ks if k[2]) for ks in c])
        nseen = med([len(i["seen"]) for i in p])
        ncup = med([len(ks) for ks in c])
        ndrv = med([sum(1 for k in ks if k[2]) for ks in c])
        ps = med([sum(s[1] for s in i["seen"]) for i in p])
        pu = med([i["unseen"] for i in p])
        pt = med([sum(s[1] for s in i["seen"]) + i["unseen"] for i in p])
        err = pt / cus - 1 if cus > 0 else float("nan")
        # per-name sums over all instances, seen kernels only (CUPTI's driver launches left out)
        pn, cn = {}, {}
        for i in p:
            for nm, us in i["seen"]:
                pn[nm] = pn.get(nm, 0.0) + us / len(p)
        for ks in c:
            for nm, us, drv in ks:
                if not drv:
                    cn[nm] = cn.get(nm, 0.0) + us / len(c)
        sp, sc = sum(pn.values()), sum(cn.values())
        share = (sum(abs(pn.get(n, 0) / sp - cn.get(n, 0) / sc) for n in set(pn) | set(cn)) / 2
                 if sp > 0 and sc > 0 else float("nan"))
        cost = med([i["cost"] for i in p])
        print(f"{key} | {len(p)}/{len(c)} | {nseen:g} / {ncup:g} ({ndrv:g}) | {crt:.1f} {cdr:.1f} {cus:.1f} | {ps:.1f} {pu:.1f} {pt:.1f} | "
              f"{100 * err:+.2f}% | {100 * share:.2f}% | {cost:.3f}")
        tw["w"] += cus
        tw["err"] += abs(err) * cus
        tw["share"] += share * cus
    if tw["w"] > 0:
        print(f"# time-weighted: |total error| {100 * tw['err'] / tw['w']:.2f}%, name share error "
              f"{100 * tw['share'] / tw['w']:.2f}%")


if __name__ == "__main__":
    main()
