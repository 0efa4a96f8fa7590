#!/usr/bin/env python3
"""torch_gemm_sweep: the GEMM sweep of torchbench's own shapes, through torch (F.linear and
torch._grouped_mm, i.e. torch's cuBLAS/cuBLASLt and its heuristics), in the CSV that
`specsim fit --gemm-sweep` reads (docs/fit.md section 3b; models/gsweep.c):
  preset,site,phases,per_forward,m,n,k,tokens,us,calls,device
Why: torchbench has no sweep, and cuBLAS changes kernels at token counts no calibration
configuration has (docs/torchbench.md, "Verify at 24 and 52 rows"); specbench's llama8b
sweep stands in for torch-dense today (traces/torch/gemm_from_llama8b.sh). Method as
specbench's --gemm-sweep (docs/specbench.md): per point a CUDA graph of >= 8 calls over
rotating weight copies that together exceed 4x the L2 (the weights stream from memory as in
a forward), replayed once to warm and 3 times timed with CUDA events, then the GPU rests
REST x the point's time (back to back, large GEMMs hold the H200 at its power limit).
The MoE expert GEMMs are averaged over 8 random routings (top-k of E, uniform: torchbench's
router has random weights). Attention (two batched matmuls over each row's KV buffer) is
not a GEMM site: the fit prices it by the KV columns.
usage: python3 profiler/bench/torch_gemm_sweep.py --preset torch-dense --tokens 1:64,72:1024:8 \
           --csv gemm_torch-dense.csv [--rest 2]"""
import argparse, csv, math, os, sys, time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchbench import PRESETS   # noqa: E402  (the shapes torchbench runs)


def sites(c):
    """(site, phases, per_forward, m, n, k, kind) of one preset: the target layer's GEMMs,
    its LM head over every token (verify's logits), the EAGLE-3 draft's (fc over three
    hidden states, attention input 2 x hidden, a draft_vocab LM head over one token a row
    after extend, over every token in a draft forward)."""
    h, H, Hk, D, L = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"], c["layers"]
    qkv = (H + 2 * Hk) * D
    s = [("qkv", "verify;decode", L, "tokens", qkv, h, "linear"),
         ("o", "verify;decode", L, "tokens", h, H * D, "linear"),
         ("lm_head", "verify;decode", 1, "tokens", c["vocab"], h, "linear")]
    if c["experts"]:
        s += [("router", "verify;decode", L, "tokens", c["experts"], h, "linear"),
              ("moe_gu", "verify;decode", L, "tokens", 2 * c["moe_inter"], h, "grouped"),
              ("moe_down", "verify;decode", L, "tokens", h, c["moe_inter"], "grouped")]
    else:
        s += [("gu", "verify;decode", L, "tokens", 2 * c["inter"], h, "linear"),
              ("down", "verify;decode", L, "tokens", h, c["inter"], "linear")]
    s += [("d_fc", "extend", 1, "tokens", h, 3 * h, "linear"),
          ("d_qkv", "draft;extend", 1, "tokens", qkv, 2 * h, "linear"),
          ("d_o", "draft;extend", 1, "tokens", h, H * D, "linear"),
          ("d_gu", "draft;extend", 1, "tokens", 2 * c["draft_inter"], h, "linear"),
          ("d_down", "draft;extend", 1, "tokens", h, c["draft_inter"], "linear"),
          ("d_lm_head", "draft;extend", 1, "rows", c["draft_vocab"], h, "linear")]
    return s


def ilist(spec):
    """1:64,72:1024:8 -> [1..64, 72, 80, ..., 1024]"""
    out = []
    for part in spec.split(","):
        f = [int(x) for x in part.split(":")]
        lo, hi, st = f[0], f[1] if len(f) > 1 else f[0], f[2] if len(f) > 2 else 1
        out += list(range(lo, hi + 1, st))
    return sorted(set(out))


def time_graph(fn, ncalls):
    """us per call of fn() captured ncalls times in one CUDA graph: warm once, 3 timed."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn(0)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(ncalls):
            fn(i)
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(3):
        g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1000.0 / (3 * ncalls)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", required=True, choices=[p for p in PRESETS if not p.startswith("tiny")])
    ap.add_argument("--tokens", default="1:64,72:1024:8")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--rest", type=float, default=2.0, help="idle x the point's time after it")
    ap.add_argument("--routings", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_gemm_sweep: no CUDA device")
    torch.manual_seed(a.seed)
    c, dt, dev = PRESETS[a.preset], torch.bfloat16, "cuda"
    name = torch.cuda.get_device_name(0)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    E, K = c["experts"], c["moe_topk"]
    new = not os.path.exists(a.csv)
    with open(a.csv, "a", newline="") as fo:
        w = csv.writer(fo)
        if new:
            w.writerow(["preset", "site", "phases", "per_forward", "m", "n", "k", "tokens", "us",
                        "calls", "device"])
        for site, phases, pf, mkind, n, k, kind in sites(c):
            wbytes = n * k * 2 * (E if kind == "grouped" else 1)
            copies = max(1, math.ceil(4 * l2 / wbytes))
            ncalls = max(8, copies)
            shape = (E, n, k) if kind == "grouped" else (n, k)
            W = [torch.randn(*shape, device=dev, dtype=dt) / math.sqrt(k) for _ in range(copies)]
            for M in ilist(a.tokens):
                x = torch.randn(M * (K if kind == "grouped" else 1), k, device=dev, dtype=dt)
                if kind == "linear":
                    us = time_graph(lambda i: F.linear(x, W[i % copies]), ncalls)
                else:   # tokens ordered by expert, per-expert offsets (torchbench.Model.moe)
                    us = 0.0
                    for _ in range(a.routings):
                        e = torch.stack([torch.randperm(E, device=dev)[:K] for _ in range(M)]).view(-1)
                        offs = torch.cumsum(torch.bincount(e, minlength=E), 0).to(torch.int32)
                        us += time_graph(lambda i: torch._grouped_mm(
                            x, W[i % copies].transpose(1, 2), offs=offs), ncalls)
                    us /= a.routings
                w.writerow([a.preset, site, phases, pf, mkind, n, k, M, "%.3f" % us, ncalls, name])
                fo.flush()
                time.sleep(a.rest * us * ncalls * 4 / 1e6)   # the point ran 4 replays
            del W
            torch.cuda.empty_cache()
            print("%s %s: %d token counts" % (a.preset, site, len(ilist(a.tokens))), flush=True)


if __name__ == "__main__":
    main()
