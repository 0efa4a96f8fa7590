#!/usr/bin/env python3
"""probe_compare.py: the node probe's node times (a lite trace taken with --probe-nodes N)
against CUPTI's kernel and copy records (an always-mode trace of the same program and
configurations, another process), per graph launch shape. CPU only; run on call 33's traces.

A launch shape is the launching range's name without its ctx= word and the launch's work-node
count. Per shape and node index: the median over probed replays of the node's time from the
events (its event's end less the latest of its predecessors' ends), raw and less the events'
own cost per node, c; and the median over CUPTI's launches of the record's duration, records of
a launch ordered by graph node id (the executable's nodes are numbered in the graph's order:
node_probe.cu, call 32). c is measured two ways without CUPTI: per executable, (median probed
span - median unprobed span of the same executable) / nodes ("exec"), and the end record's
calibration on a chain of memset nodes ("calib").

usage: probe_compare.py PROBE_TRACE ALWAYS_TRACE [LABEL]
Prints one row per shape: nodes, node-time sums, the total share error (half the summed
|share difference|: 0 = the same split, 1 = disjoint) raw and corrected, the largest relative
error of a node over 5 us, kernel names that agree; then the time-weighted totals.
"""
import gzip
import json
import re
import statistics
import sys

CTX = re.compile(r"\s*ctx=\S+")


def events(path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with (gzip.open if gz else open)(path, "rt") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line.startswith("{"):
                try:
                    yield json.loads(line)
                except ValueError:
                    pass


def shape_key(nvtx):
    return CTX.sub("", nvtx or "").strip()


def read_probe(path):
    names, graphs, probes, spans, calib = {}, {}, [], {}, None
    for e in events(path):
        c, a = e.get("cat"), e.get("args", {})
        if c == "graph_probe" and e.get("name") == "probe_names":
            for k, n in enumerate(a["names"]):
                names[a["first"] + k] = n
        elif c == "graph_probe" and e.get("name") == "probe_graph":
            off, preds = 0, []
            for k in a["pred_n"]:
                preds.append(a["pred"][off:off + k])
                off += k
            graphs[a["graph_exec_id"]] = {"type": a["type"], "name": a["name"], "preds": preds}
        elif c == "graph_probe" and e.get("ph") == "X":
            probes.append((a["graph_exec_id"], a.get("nvtx", ""), e["dur"], a["end_us"]))
        elif c == "graph_trace":
            spans.setdefault(a["graph_exec_id"], []).append(e["dur"])
        elif e.get("name") == "specprof_end":
            calib = a.get("probe", {}).get("event_us")
    return names, graphs, probes, spans, calib


def read_always(path):
    launches = {}   # corr -> [(node id, dur, name, nvtx)]
    for e in events(path):
        if e.get("cat") not in ("kernel", "memcpy", "memset") or e.get("ph") != "X":
            continue
        a = e.get("args", {})
        if not a.get("graph_node_id"):
            continue
        launches.setdefault(a["corr"], []).append((a["graph_node_id"], e["dur"], e["name"], a.get("nvtx", "")))
    shapes = {}     # (key, n) -> [[dur...], names]
    for recs in launches.values():
        recs.sort()
        key = (shape_key(recs[0][3]), len(recs))
        s = shapes.setdefault(key, [[], [r[2] for r in recs]])
        s[0].append([r[1] for r in recs])
    return shapes


def med(v):
    return statistics.median(v) if v else float("nan")


def main():
    probe_path, always_path = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else ""
    names, graphs, probes, spans, calib = read_probe(probe_path)
    cupti = read_always(always_path)
    # per executable: the events' cost per node from its own spans
    c_exec = {}
    for x, g in graphs.items():
        pd = [p[2] for p in probes if p[0] == x]
        if pd and spans.get(x):
            c_exec[x] = (med(pd) - med(spans[x])) / len(g["type"])
    raw = {}        # (key, n) -> {"raw": [[...]], "exec": x}
    for x, nvtx, dur, end in probes:
        g = graphs.get(x)
        if not g:
            continue
        t = [end[i] - max([end[p] for p in g["preds"][i]], default=0.0) for i in range(len(end))]
        key = (shape_key(nvtx), len(end))
        r = raw.setdefault(key, {"raw": [], "exec": x})
        r["raw"].append(t)
    print(f"# {label} probe {probe_path} ({len(probes)} probed replays, calibration {calib} us a node)")
    print(f"# always {always_path}")
    print("# shape | nodes | launches probe/cupti | sum_us cupti raw exec calib | c_exec_us | "
          "share_err raw exec calib | max_rel_err_over_5us exec calib | names_agree")
    tot = {"w": 0.0, "raw": 0.0, "exec": 0.0, "calib": 0.0}
    for key in sorted(raw):
        if key not in cupti:
            print(f"{key[0]} | {key[1]} | no CUPTI launch of this shape")
            continue
        cd, cn = cupti[key]
        r = raw[key]
        n = key[1]
        cm = [med([l[i] for l in cd]) for i in range(n)]
        rm = [med([l[i] for l in r["raw"]]) for i in range(n)]
        ce = c_exec.get(r["exec"], float("nan"))
        cc = calib if calib is not None and calib >= 0 else float("nan")
        em = [max(0.0, v - ce) for v in rm]
        km = [max(0.0, v - cc) for v in rm]
        sc, sr, se, sk = sum(cm), sum(rm), sum(em), sum(km)

        def share_err(v, s):
            return sum(abs(a / s - b / sc) for a, b in zip(v, cm)) / 2 if s > 0 and sc > 0 else float("nan")

        def max_rel(v):
            return max([abs(a / b - 1) for a, b in zip(v, cm) if b > 5] or [0.0])

        g = graphs[r["exec"]]
        kn = [i for i in range(n) if g["type"][i] == "K"]
        agree = sum(1 for i in kn if names.get(g["name"][i], "") == cn[i])
        er, ee, ek = share_err(rm, sr), share_err(em, se), share_err(km, sk)
        print(f"{key[0]} | {n} | {len(r['raw'])}/{len(cd)} | {sc:.1f} {sr:.1f} {se:.1f} {sk:.1f} | {ce:.3f} | "
              f"{er:.4f} {ee:.4f} {ek:.4f} | {max_rel(em):.3f} {max_rel(km):.3f} | {agree}/{len(kn)}")
        tot["w"] += sc
        tot["raw"] += er * sc
        tot["exec"] += ee * sc
        tot["calib"] += ek * sc
    if tot["w"]:
        print(f"# total (weighted by CUPTI's node time): share_err raw {tot['raw'] / tot['w']:.4f} "
              f"exec {tot['exec'] / tot['w']:.4f} calib {tot['calib'] / tot['w']:.4f}")


if __name__ == "__main__":
    main()
