#!/usr/bin/env python3
"""torchbench.py: the PyTorch ground truth of specsim (issue 13): a speculative-decoding
serving loop that costs what SGLang's EAGLE worker costs, written with torch only.

What it is: a target model (dense Llama-shaped, or MoE with top-k routing and grouped
expert GEMMs) and an EAGLE-3-like draft (1 layer, 3*hidden input), random bf16 weights, a
KV cache as torch tensors, and a serving loop at a fixed concurrency: per iteration
draft (steps-1 draft forwards, one CUDA graph) / verify (target over bs*(steps+1) tokens,
chain topk=1) / accept (a BLOCKING device-to-host read, `.tolist()`, as SGLang's verify
does) / draft-extend (draft over bs*(steps+1) tokens), then a Python scheduler step whose
cost grows with the running requests (request objects, output lists, stop checks, the
next batch's input lists). CUDA graphs per captured batch size (SGLang's list), batches
padded to the next captured size, eager above the largest. Baseline mode: one target
forward over bs tokens, greedy sample, `.tolist()`.
Why: specbench (CUDA C) has no Python host; this one has the host costs real servers have
(blocking reads, per-request scheduling, PyTorch's eager launch cost) so that a fit that
learns only specbench is caught out. docs/torchbench.md says what is approximated.

  python3 torchbench.py --preset torch-dense --mode spec,baseline --steps 2,5 --alpha 0.7 \\
      --concurrency 1,4,15 --seconds 0.3 --csv out.csv
  python3 torchbench.py --check
  python3 torchbench.py --device cpu --preset tiny --disable-cuda-graph ...   (CPU smoke)
"""
import argparse
import bisect
import csv
import datetime
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------
# Presets. Shapes follow public models (shared/FACTS.md): torch-dense is Llama-3.1-8B's
# layer (hidden 4096, 32 heads, 8 KV heads, intermediate 14336, vocab 128256) with 8 layers
# so that a run is seconds; torch-moe is Qwen3-30B-A3B-like (hidden 2048, 32 heads of 128,
# 4 KV heads, expert intermediate 768, vocab 151936; config.json of Qwen/Qwen3-30B-A3B)
# with 64 experts top-8 and 12 layers. The draft is EAGLE-3-like: one layer, a 3*hidden fc
# over three target layers' hidden states, a 32000-token draft vocabulary (EAGLE-3
# Llama-3.1-8B draft: draft_vocab_size 32000). tiny/tiny-moe: CPU tests only.
PRESETS = {
    "torch-dense": dict(layers=8, hidden=4096, heads=32, kv_heads=8, head_dim=128, inter=14336,
                        vocab=128256, experts=0, moe_topk=0, moe_inter=0, draft_inter=14336,
                        draft_vocab=32000),
    "torch-moe": dict(layers=12, hidden=2048, heads=32, kv_heads=4, head_dim=128, inter=6144,
                      vocab=151936, experts=64, moe_topk=8, moe_inter=768, draft_inter=6144,
                      draft_vocab=32000),
    "tiny": dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, inter=128, vocab=256,
                 experts=0, moe_topk=0, moe_inter=0, draft_inter=128, draft_vocab=128),
    "tiny-moe": dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, inter=128, vocab=256,
                     experts=8, moe_topk=2, moe_inter=32, draft_inter=128, draft_vocab=128),
}

# SGLang's captured batch sizes for speculative decoding (server_args.py, shared/FACTS.md):
# 1..8, 10..32 step 2, 40..64 step 4, 72..256 step 8, 272..max step 16.
def sglang_cuda_graph_bs(max_bs):
    bs = list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 65, 4)) + \
        list(range(72, 257, 8)) + list(range(272, max_bs + 1, 16))
    return [b for b in bs if b <= max_bs]


def cg_bucket(cg_bs, bs):
    """The captured size a batch of bs rows pads to (bisect_left), or 0: eager."""
    if not cg_bs or bs > cg_bs[-1]:
        return 0
    return cg_bs[bisect.bisect_left(cg_bs, bs)]


def die(msg):
    print("torchbench: " + msg, file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------
# Annotations: specprof's NVTX ranges (traces/FORMAT.md "Phases"; models/fit.c
# fr_parse_range reads tokens= bs= rows= ctx= graph= steps= topk= forwards= experts=
# moe_topk=) and SGLang's record_function spans (profile_utils.build_step_span_name,
# spec_utils.spec_stage_span).
class Spans:
    def __init__(self, kind, device, ranges_out=None, roofline=False):
        self.nvtx = kind in ("specprof", "both") and device == "cuda"
        self.sgl = kind in ("sglang", "both")
        self.log_names = ranges_out is not None and kind in ("specprof", "both")
        self.names = []
        self.ranges_out = ranges_out
        self.roofline = roofline
        self.stack = []

    def push(self, name):                 # a specprof phase range
        if self.nvtx:
            torch.cuda.nvtx.range_push(name)
        if self.log_names:
            self.names.append(name)

    def pop(self):
        if self.nvtx:
            torch.cuda.nvtx.range_pop()

    def sgl_push(self, name):             # an SGLang span (a record_function)
        if self.sgl:
            rf = torch.profiler.record_function(name)
            rf.__enter__()
            self.stack.append(rf)
            if self.ranges_out is not None:
                self.names.append(name)

    def sgl_pop(self):
        if self.sgl:
            self.stack.pop().__exit__(None, None, None)

    def step_name(self, mode, bs, ntok_per_req=1, seq_lens_sum=None):
        """step[MODE bs=N], with the roofline words of build_step_span_name when asked:
        DECODE: g_sq g_sqsq g_sqsk g_sk; TARGET_VERIFY: c_sq c_sqsq c_sqsk c_sk (its query
        tokens are tree-masked, so SGLang files them under context; test_step_span_roofline)."""
        base = "step[%s bs=%d" % (mode, bs)
        if not self.roofline or seq_lens_sum is None or mode == "DRAFT_EXTEND":
            return base + "]"
        n = ntok_per_req
        p = "c" if mode == "TARGET_VERIFY" else "g"
        return base + " %s_sq=%d %s_sqsq=%d %s_sqsk=%d %s_sk=%d]" % (
            p, n * bs, p, n * n * bs, p, n * seq_lens_sum, p, seq_lens_sum)

    def flush(self):
        if self.ranges_out and self.names:
            with open(self.ranges_out, "a") as f:
                for n in self.names:
                    f.write(n + "\n")
            self.names = []


# ---------------------------------------------------------------------------------------
# The model: plain tensors, PyTorch's kernels (cuBLAS GEMMs through F.linear and matmul).
def rms(x, w, eps=1e-5):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, eps)
    v = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(v + eps)).to(x.dtype) * w


def rope(x, cos, sin):
    """Llama rotary embedding (rotate-half) on x [T, n, D]; cos/sin [T, 1, D/2]."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model:
    """Target + draft weights, KV caches, and the forward functions. Owns its tensors."""

    def __init__(self, preset_name, cfg, rows_max, ctx_max, device, dtype, seed, moe_impl):
        self.name = preset_name
        self.c = cfg
        self.dev = device
        self.dt = dtype
        self.R = rows_max
        self.L = ctx_max
        c = cfg
        g = torch.Generator(device="cpu")
        g.manual_seed(seed)
        torch.manual_seed(seed)
        h, H, Hk, D = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"]
        self.h, self.H, self.Hk, self.D = h, H, Hk, D
        self.grp = H // Hk

        def w(*shape, fan_in=None):
            fan = fan_in if fan_in else shape[-1]
            t = torch.randn(*shape, device=device, dtype=torch.float32) * (1.0 / math.sqrt(fan))
            return t.to(dtype)

        def ones(n):
            return torch.ones(n, device=device, dtype=dtype)

        self.embed = w(c["vocab"], h, fan_in=1)
        self.lm_head = w(c["vocab"], h)
        self.norm = ones(h)
        self.layers = []
        E = c["experts"]
        for _ in range(c["layers"]):
            lw = dict(ln1=ones(h), ln2=ones(h), wqkv=w((H + 2 * Hk) * D, h), wo=w(h, H * D))
            if E:
                Im = c["moe_inter"]
                lw["wg"] = w(E, h)
                lw["w13"] = w(E, 2 * Im, h)      # [E, N, K]: used as .transpose(1, 2)
                lw["w2"] = w(E, h, Im)
            else:
                lw["wgu"] = w(2 * c["inter"], h)
                lw["wd"] = w(h, c["inter"])
            self.layers.append(lw)
        nl = c["layers"]
        # EAGLE-3 takes three target layers' outputs: low, middle, high
        self.aux_layers = sorted(set([min(1, nl - 1), nl // 2, max(nl - 2, 0)]))
        while len(self.aux_layers) < 3:
            self.aux_layers.append(self.aux_layers[-1])
        self.d = dict(fc=w(h, 3 * h), ln_e=ones(h), ln_h=ones(h),
                      wqkv=w((H + 2 * Hk) * D, 2 * h), wo=w(h, H * D), ln2=ones(h),
                      wgu=w(2 * c["draft_inter"], h), wd=w(h, c["draft_inter"]), norm=ones(h),
                      lm_head=w(c["draft_vocab"], h))
        # KV caches [rows, kv heads, positions, head dim], one pair per layer
        self.kc = [torch.zeros(rows_max, Hk, ctx_max, D, device=device, dtype=dtype)
                   for _ in range(nl)]
        self.vc = [torch.zeros_like(self.kc[0]) for _ in range(nl)]
        self.dkc = torch.zeros_like(self.kc[0])
        self.dvc = torch.zeros_like(self.kc[0])
        inv = 1.0 / (10000.0 ** (torch.arange(0, D, 2, device=device, dtype=torch.float32) / D))
        ang = torch.arange(ctx_max, device=device, dtype=torch.float32)[:, None] * inv[None, :]
        self.cos = ang.cos().to(dtype)
        self.sin = ang.sin().to(dtype)
        self.ar_rows = torch.arange(rows_max, device=device)
        self.ar_hk = torch.arange(Hk, device=device)
        self.ar_L = torch.arange(ctx_max, device=device)
        self.ar_q = torch.arange(64, device=device)
        self.ar_E = torch.arange(max(E, 1), device=device)
        self.moe_impl = moe_impl if E else "none"
        self.cap_full = False
        self.scale = 1.0 / math.sqrt(D)

    # -- pieces ------------------------------------------------------------------------
    def meta(self, base, rows, q):
        """Per-forward attention metadata (positions, rotary tables, mask), computed once
        per forward as an attention backend's init_forward_metadata does."""
        pos = base[:rows, None] + self.ar_q[:q][None, :]                 # [rows, q]
        T = rows * q
        cos = self.cos[pos].view(T, 1, -1)
        sin = self.sin[pos].view(T, 1, -1)
        allowed = self.ar_L[None, None, :] <= pos[:, :, None]            # [rows, q, L]
        mask = torch.zeros(rows, q, self.L, device=self.dev, dtype=self.dt)
        mask = mask.masked_fill(~allowed, float("-inf"))
        return pos, cos, sin, mask.view(rows, 1, 1, q, self.L)

    def attention(self, qkv, kc, vc, meta, rows, q):
        pos, cos, sin, mask = meta
        H, Hk, D, g = self.H, self.Hk, self.D, self.grp
        T = rows * q
        qh, kh, vh = qkv.split([H * D, Hk * D, Hk * D], dim=-1)
        qh = rope(qh.view(T, H, D), cos, sin)
        kh = rope(kh.view(T, Hk, D), cos, sin)
        bi = self.ar_rows[:rows, None, None]
        hi = self.ar_hk[None, None, :]
        pi = pos[:, :, None]
        kc.index_put_((bi, hi, pi), kh.view(rows, q, Hk, D))
        vc.index_put_((bi, hi, pi), vh.reshape(rows, q, Hk, D))
        qg = qh.view(rows, q, Hk, g, D).permute(0, 2, 3, 1, 4).reshape(rows, Hk, g * q, D)
        s = torch.matmul(qg, kc[:rows].transpose(-1, -2))               # [rows, Hk, g*q, L]
        s = s.view(rows, Hk, g, q, self.L) * self.scale + mask
        p = torch.softmax(s.float(), dim=-1).to(self.dt).view(rows, Hk, g * q, self.L)
        o = torch.matmul(p, vc[:rows])                                   # [rows, Hk, g*q, D]
        return o.view(rows, Hk, g, q, D).permute(0, 3, 1, 2, 4).reshape(T, H * D)

    @staticmethod
    def mlp(x, wgu, wd):
        gu = F.linear(x, wgu)
        a, b = gu.chunk(2, dim=-1)
        return F.linear(F.silu(a) * b, wd)

    def route(self, x, lw):
        K = self.c["moe_topk"]
        logits = F.linear(x, lw["wg"]).float()
        topv, topi = torch.topk(logits, K, dim=-1)
        return torch.softmax(topv, dim=-1), topi

    def moe(self, x, lw):
        """Top-k MoE over E experts, the experts' GEMMs grouped as PyTorch does it without
        custom kernels. Each (token, expert) assignment's rank within its expert comes from a
        cumulative sum over a one-hot (no sort, no host sync); then either one grouped GEMM
        per projection over the assignments ordered by expert (torch._grouped_mm with
        per-expert offsets: an expert no token chose costs no weight reads), or, where that
        is missing, one bmm over a fixed per-expert capacity (GShard; assignments past the
        capacity are dropped). Both have static shapes, so the layer runs in CUDA graphs."""
        E, K = self.c["experts"], self.c["moe_topk"]
        T = x.shape[0]
        N = T * K
        topw, topi = self.route(x, lw)
        flat = topi.reshape(-1)                                           # [N]
        cs = torch.cumsum((flat[:, None] == self.ar_E[None, :E]).to(torch.int32), dim=0)
        counts = cs[-1]                                                   # [E]
        rank = cs.gather(1, flat[:, None]).squeeze(1) - 1                 # [N]
        ar_n = torch.arange(N, device=x.device)
        wts = topw.reshape(-1).to(x.dtype)
        if self.moe_impl == "grouped":
            offs = torch.cumsum(counts, dim=0)
            dest = (offs - counts)[flat] + rank                           # sorted position
            perm = torch.empty_like(dest).scatter_(0, dest, ar_n)        # position -> assignment
            tok = perm // K
            o32 = offs.to(torch.int32)
            h1 = torch._grouped_mm(x[tok], lw["w13"].transpose(1, 2), offs=o32)
            a, b = h1.chunk(2, dim=-1)
            h2 = torch._grouped_mm((F.silu(a) * b).contiguous(), lw["w2"].transpose(1, 2), offs=o32)
            h2 = h2[dest]                                                 # back to assignment order
        else:   # capacity
            C = self.capacity(T)
            valid = rank < C
            slot = torch.where(valid, flat * C + rank, torch.full_like(rank, E * C))
            X = torch.zeros(E * C + 1, x.shape[1], device=x.device, dtype=x.dtype)
            X.index_copy_(0, slot, x[ar_n // K])
            h1 = torch.bmm(X[:E * C].view(E, C, -1), lw["w13"].transpose(1, 2))
            a, b = h1.chunk(2, dim=-1)
            y = torch.bmm(F.silu(a) * b, lw["w2"].transpose(1, 2)).view(E * C, -1)
            y = torch.cat([y, torch.zeros_like(y[:1])], 0)
            h2 = y[slot]
            wts = wts * valid.to(wts.dtype)
        # the weighted sum over each token's K experts, in a fixed order (no atomics: an
        # index_add_ in bf16 rounds differently run to run, and a flipped top-k choice in a
        # later layer turns that into a different output)
        return (h2.view(T, K, -1) * wts.view(T, K, 1)).sum(dim=1)

    def capacity(self, T):
        """Per-expert slots of the capacity MoE: twice the even share, at least 8, at most T
        (T with cap_full: nothing dropped, for the self-test)."""
        E, K = self.c["experts"], self.c["moe_topk"]
        if self.cap_full:
            return T
        return int(min(T, max(8, math.ceil(2.0 * T * K / E))))

    def moe_reference(self, x, lw):
        """Slow obvious MoE (a loop over experts, host-synchronising), for --check."""
        topw, topi = self.route(x, lw)
        out = torch.zeros(x.shape, device=x.device, dtype=torch.float32)
        for e in range(self.c["experts"]):   # float32 accumulation, expert order
            r, k = (topi == e).nonzero(as_tuple=True)
            if r.numel() == 0:
                continue
            xe = x[r]
            h1 = F.linear(xe, lw["w13"][e])
            a, b = h1.chunk(2, dim=-1)
            ye = F.linear(F.silu(a) * b, lw["w2"][e]).float()
            out.index_add_(0, r, ye * topw[r, k][:, None])
        return out.to(x.dtype)

    # -- forwards ----------------------------------------------------------------------
    def target(self, tok, base, rows, q, aux):
        """Target forward over rows*q tokens (tok [rows, q]) at positions base..base+q-1.
        Returns logits [rows*q, vocab] and, if aux, the EAGLE-3 hidden states [rows*q, 3h]."""
        meta = self.meta(base, rows, q)
        x = F.embedding(tok.reshape(-1), self.embed)
        keep = []
        for li, lw in enumerate(self.layers):
            a = self.attention(F.linear(rms(x, lw["ln1"]), lw["wqkv"]), self.kc[li], self.vc[li],
                               meta, rows, q)
            x = x + F.linear(a, lw["wo"])
            hn = rms(x, lw["ln2"])
            x = x + (self.moe(hn, lw) if self.c["experts"] else self.mlp(hn, lw["wgu"], lw["wd"]))
            if aux and li in self.aux_layers:
                keep.extend([x] * self.aux_layers.count(li))
        logits = F.linear(rms(x, self.norm), self.lm_head)
        return logits, (torch.cat(keep, dim=-1) if aux else None)

    def draft(self, tok, hid, base, rows, q):
        """One draft-model forward (EAGLE-3 midlayer): token embedding and hidden state
        side by side (2*hidden) into attention over the draft's KV cache, then the MLP.
        Returns the draft's hidden states [rows*q, h]."""
        d = self.d
        meta = self.meta(base, rows, q)
        e = F.embedding(tok.reshape(-1), self.embed)
        xin = torch.cat([rms(e, d["ln_e"]), rms(hid, d["ln_h"])], dim=-1)
        a = self.attention(F.linear(xin, d["wqkv"]), self.dkc, self.dvc, meta, rows, q)
        x = hid + F.linear(a, d["wo"])
        return x + self.mlp(rms(x, d["ln2"]), d["wgu"], d["wd"])

    def draft_logits(self, x):
        return F.linear(rms(x, self.d["norm"]), self.d["lm_head"])


# ---------------------------------------------------------------------------------------
class State:
    """Static device buffers the phases read and write (graph inputs/outputs live here)."""

    def __init__(self, m, steps_max):
        R, dev = m.R, m.dev
        z = lambda *s: torch.zeros(*s, device=dev, dtype=torch.long)
        self.base = z(R)                 # KV length per row (positions already cached)
        self.acc = z(R)                  # accepted draft tokens per row (host-drawn)
        self.last_tok = z(R)             # the bonus token: first verify input
        self.d_tok0 = z(R)               # first draft token (from draft-extend)
        self.d_hid0 = torch.zeros(R, m.h, device=dev, dtype=m.dt)
        self.draft_tok = z(R, steps_max + 1)
        self.tok_v = z(R, steps_max + 2)

    def randomize(self, m, gen_seed):
        g = torch.Generator(device="cpu")
        g.manual_seed(gen_seed)
        R = m.R
        self.base.copy_(torch.randint(1, m.L // 2, (R,), generator=g))
        self.last_tok.copy_(torch.randint(0, m.c["draft_vocab"], (R,), generator=g))
        self.d_tok0.copy_(torch.randint(0, m.c["draft_vocab"], (R,), generator=g))
        self.draft_tok.copy_(torch.randint(0, m.c["draft_vocab"], self.draft_tok.shape, generator=g))
        self.d_hid0.copy_(torch.randn(self.d_hid0.shape, generator=g).to(m.dt))
        self.acc.zero_()


class Engine:
    """The phases as graph bodies, their CUDA graphs (one per phase, padded rows and
    width), and the eager path. Graphs share one memory pool, as SGLang's runners do."""

    def __init__(self, m, st, use_graphs):
        self.m, self.s = m, st
        self.use_graphs = use_graphs and m.dev == "cuda"
        self.graphs = {}
        self.pool = torch.cuda.graph_pool_handle() if self.use_graphs else None
        self.capture_s = 0.0

    # graph bodies: only static buffers in, outputs returned (kept alive by the graph entry)
    def body_draft(self, rows, steps):
        m, s = self.m, self.s
        tok, hid = s.d_tok0[:rows], s.d_hid0[:rows]
        outs = []
        for i in range(steps - 1):
            x = m.draft(tok, hid, s.base + i, rows, 1)
            tok = torch.argmax(m.draft_logits(x), dim=-1)      # topk=1 (chain)
            hid = x
            outs.append(tok)
        s.draft_tok[:rows, 1:steps].copy_(torch.stack(outs, dim=1))
        return (hid,)

    def body_verify(self, rows, q):
        m, s = self.m, self.s
        vt = torch.cat([s.last_tok[:rows, None], s.draft_tok[:rows, :q - 1]], dim=1)
        s.tok_v[:rows, :q].copy_(vt)
        return m.target(vt, s.base, rows, q, aux=True)

    def body_extend(self, rows, q, aux):
        m, s = self.m, self.s
        et = torch.cat([s.tok_v[:rows, 1:q], s.last_tok[:rows, None]], dim=1)
        hid = F.linear(aux, m.d["fc"])
        x = m.draft(et, hid, s.base, rows, q)
        sel = x.view(rows, q, -1)[m.ar_rows[:rows], s.acc[:rows]]          # [rows, h]
        return sel, m.draft_logits(sel)

    def body_decode(self, rows):
        m, s = self.m, self.s
        logits, _ = m.target(s.last_tok[:rows, None], s.base, rows, 1, aux=False)
        return (logits,)

    def capture(self, key, fn):
        """The graph entry (graph, outputs) of key, captured on first use after two eager
        warm-up runs on a side stream (as torch.cuda.graphs recommends)."""
        ent = self.graphs.get(key)
        if ent is None:
            t0 = time.perf_counter()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    fn()
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=self.pool):
                out = fn()
            torch.cuda.synchronize()
            ent = (g, out)
            self.graphs[key] = ent
            self.capture_s += time.perf_counter() - t0
        return ent[1]

    def run(self, key, fn, graph):
        """Runs fn eagerly, or replays its graph (captured first if needed); fn's outputs."""
        if not graph:
            return fn()
        self.capture(key, fn)
        ent = self.graphs[key]
        ent[0].replay()
        return ent[1]

    def capture_point(self, rows, steps, spec):
        """Captures the graphs a point needs before it runs (SGLang captures at start-up),
        so that no capture falls inside a phase range."""
        if spec:
            q = steps + 1
            if steps > 1:
                self.capture(("draft", rows, steps), lambda: self.body_draft(rows, steps))
            aux = self.capture(("verify", rows, q), lambda: self.body_verify(rows, q))[1]
            self.capture(("extend", rows, q), lambda: self.body_extend(rows, q, aux))
        else:
            self.capture(("decode", rows), lambda: self.body_decode(rows))

    def draft(self, rows, steps, graph):
        return self.run(("draft", rows, steps), lambda: self.body_draft(rows, steps), graph)

    def verify(self, rows, q, graph):
        return self.run(("verify", rows, q), lambda: self.body_verify(rows, q), graph)

    def extend(self, rows, q, aux, graph):
        return self.run(("extend", rows, q), lambda: self.body_extend(rows, q, aux), graph)

    def decode(self, rows, graph):
        return self.run(("decode", rows), lambda: self.body_decode(rows), graph)


# ---------------------------------------------------------------------------------------
# Requests and the scheduler's per-request work.
PHASES = ("draft", "verify", "accept", "extend", "decode", "sample")


# ---------------------------------------------------------------------------------------
# The host's speed at the time of a measurement (issue 13: eager, launch-bound
# configurations move 16-47% between processes and within one on the H200 machine while the
# GPU does not). Two probes, taken just before and just after each timed window and
# averaged: probe_py_us, a fixed piece of pure-Python interpreter work (no CUDA call, so a
# CUPTI profiler in the process does not slow it), and probe_launch_us, the host time of one
# tiny eager CUDA op (x.add_(1) on one element, PROBE_LAUNCHES of them, synchronized before
# and after; slowed by a profiler's launch callbacks). specsim's validation can predict each
# run at the host speed it had (models/validate.sh, VALIDATE_HOST_PROBE) as it predicts each
# run at the acceptance it drew. Cost: ~3 ms a window.
PROBE_PY_REPS = 3          # median of 3: one scheduler tick of the OS does not decide it
PROBE_LAUNCHES = 200


def _probe_py_once():
    t0 = time.perf_counter()
    d, acc = {}, 0
    for i in range(6000):               # dict, list and int work, as a scheduler step does
        d[i & 255] = d.get(i & 255, 0) + i
        acc += len(str(i)) + (i * 7) % 13
    return (time.perf_counter() - t0) * 1e6


def probe_host(dev):
    """(probe_py_us, probe_launch_us): the median of PROBE_PY_REPS pure-Python runs, and the
    host time per tiny eager CUDA op (0 on CPU)."""
    py = sorted(_probe_py_once() for _ in range(PROBE_PY_REPS))[PROBE_PY_REPS // 2]
    launch = 0.0
    if dev == "cuda":
        x = torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(PROBE_LAUNCHES):
            x.add_(1)
        launch = (time.perf_counter() - t0) * 1e6 / PROBE_LAUNCHES
        torch.cuda.synchronize()
    return py, launch


def new_stats():
    return dict(tokens=0, acc_sum=0, acc_n=0, ctx_sum=0.0, host=0.0, d2h=0.0, fin=0, n=0)


class Req:
    __slots__ = ("rid", "prompt_len", "max_new_tokens", "output_ids", "kv_len", "stop_ids",
                 "finished_reason", "draws")

    def __init__(self, rid, prompt_len, max_new, gen, stop_ids):
        self.rid = rid
        self.prompt_len = prompt_len
        self.max_new_tokens = max_new
        self.output_ids = [0] * gen            # staggered start: requests mid-flight
        self.kv_len = prompt_len + gen
        self.stop_ids = stop_ids
        self.finished_reason = None
        self.draws = 0


def parse_capture(s):
    """--capture: a set of (mode, steps, C), or None for every point; die on a bad item."""
    if s.strip() == "*":
        return None
    out = set()
    for item in filter(None, (x.strip() for x in s.split(","))):
        p = item.split(":")
        try:
            if p[0] == "spec" and len(p) == 3:
                out.add(("spec", int(p[1]), int(p[2])))
            elif p[0] == "baseline" and len(p) == 2:
                out.add(("baseline", 0, int(p[1])))
            else:
                raise ValueError
        except ValueError:
            die("--capture: item \"%s\": expected spec:STEPS:C, baseline:C or *" % item)
    return out


def captured(a, mode, steps, C):
    if not a.capture:
        return False
    return a.capture_set is None or (mode, steps if mode == "spec" else 0, C) in a.capture_set


def parse_len(s):
    if ":" in s:
        a, b = s.split(":")
        return int(a), int(b)
    return int(s), int(s)


class Server:
    """The loop: one configuration point at a time (requests made fresh per point)."""

    def __init__(self, args, m, eng, spans):
        self.a, self.m, self.e, self.sp = args, m, eng, spans
        self.s = eng.s
        self.rid = 0
        self.log_f = None

    def new_req(self, rng, staggered):
        a = self.a
        p = rng.randint(*a.prompt)
        o = rng.randint(*a.output)
        gen = rng.randint(0, o - 1) if staggered else 0
        self.rid += 1
        # stop ids: an EOS the random tokens (almost) never hit; the check still runs
        return Req(self.rid, p, o, gen, (self.m.c["vocab"] - 1, self.m.c["draft_vocab"] - 1))

    def log(self, msg):
        if self.log_f:
            now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            self.log_f.write("[%s TP0] %s\n" % (now, msg))

    def run_point(self, mode, steps, alpha, C, rep, profile_dir=None, capture=False):
        """One point; capture: its timed window between cudaProfilerStart and Stop
        (torch.cuda.profiler), which specprof --capture-range profiler-api records alone."""
        a, m, e, s, sp = self.a, self.m, self.e, self.s, self.sp
        spec = mode == "spec"
        if not spec:
            steps = 0
        q = steps + 1
        pad = cg_bucket(a.cg_bs, C) if e.use_graphs else 0
        graph = pad > 0
        rows = pad if graph else C
        if rows > m.R:
            die("concurrency %d (rows %d) over capacity %d (--rows-max)" % (C, rows, m.R))
        seed = hash((a.seed, rep, C, steps, int(alpha * 1000), spec)) & 0x7FFFFFFF
        rng = random.Random(seed)
        reqs = [self.new_req(rng, True) for _ in range(C)]
        F_d = steps - 1 if steps > 1 else 1
        tail = (" experts=%d moe_topk=%d" % (m.c["experts"], m.c["moe_topk"])) if m.c["experts"] else ""
        dtail = " forwards=%d%s" % (F_d, tail)
        timing = m.dev == "cuda" and not a.no_phase_times
        lg = dict(tok=0, acc=0, fwd=0, t=time.perf_counter(), it=0)

        def ev():
            if not timing:
                return None
            x = torch.cuda.Event(enable_timing=True)
            x.record()
            return x

        def prepare():
            """SGLang's prepare_for_decode, host side: the next batch's per-row input lists
            (KV lengths; pads at 0) to the device, and this round's acceptance draws."""
            base = [r.kv_len for r in reqs] + [0] * (rows - C)
            s.base[:rows].copy_(torch.tensor(base, dtype=torch.long), non_blocking=True)
            if spec:
                acc = []
                for r in reqs:
                    k = 0
                    while k < steps and rng.random() < alpha:   # per-position Bernoulli chain
                        k += 1
                    acc.append(k)
                acc += [0] * (rows - C)
                s.acc[:rows].copy_(torch.tensor(acc, dtype=torch.long), non_blocking=True)
            return sum(base[:C])

        cur = dict(ctx=prepare())

        def one_iteration(stats, evs):
            """One round; accumulates into stats and evs (phase events) when given."""
            ctx = cur["ctx"]
            if spec:
                if steps > 1:
                    sp.sgl_push("draft")
                    sp.push("draft tokens=%d bs=%d rows=%d ctx=%d graph=%d steps=%d topk=1%s"
                            % (rows, C, rows, ctx, int(graph), steps, dtail))
                    e0 = ev()
                    if graph:
                        e.draft(rows, steps, True)
                    else:
                        self.eager_draft(rows, steps, C, ctx)
                    e1 = ev()
                    sp.pop()
                    sp.sgl_pop()
                    if evs is not None and timing:
                        evs.append((0, e0, e1))
                sp.sgl_push("verify")
                sp.push("verify tokens=%d bs=%d rows=%d ctx=%d graph=%d steps=%d topk=1%s"
                        % (rows * q, C, rows, ctx, int(graph), steps, tail))
                sp.sgl_push(sp.step_name("TARGET_VERIFY", C, q, ctx))
                e0 = ev()
                logits, aux = e.verify(rows, q, graph)
                e1 = ev()
                sp.sgl_pop()
                sp.pop()
                sp.push("accept tokens=%d bs=%d rows=%d ctx=%d graph=0 steps=%d topk=1%s"
                        % (C * q, C, C, ctx, steps, tail))
                e2 = ev()
                V = logits.shape[-1]
                pred = torch.argmax(logits.view(rows, q, V)[:C], dim=-1)      # greedy verify
                accd = s.acc[:C]
                keep = m.ar_q[:q][None, :] <= accd[:, None]
                out_tok = torch.where(keep, pred, torch.full_like(pred, -1))
                s.last_tok[:C].copy_(pred.gather(1, accd[:, None]).squeeze(1))
                e3 = ev()
                t0 = time.perf_counter()
                acc_list = accd.tolist()              # blocking device-to-host reads,
                tok_list = out_tok.tolist()           # as SGLang's verify does
                d2h = time.perf_counter() - t0
                sp.pop()
                sp.sgl_pop()
                sp.sgl_push("draft_extend")
                sp.push("extend tokens=%d bs=%d rows=%d ctx=%d graph=%d steps=%d topk=1%s"
                        % (rows * q, C, rows, ctx, int(graph), steps, tail))
                sp.sgl_push(sp.step_name("DRAFT_EXTEND", C))
                e4 = ev()
                sel, dlog = e.extend(rows, q, aux, graph)
                sp.sgl_pop()
                tok0 = torch.argmax(dlog, dim=-1)        # the draft's top-1 (capture_for_decode)
                s.d_tok0[:rows].copy_(tok0)
                s.draft_tok[:rows, 0].copy_(tok0)
                s.d_hid0[:rows].copy_(sel)
                e5 = ev()
                sp.pop()
                sp.sgl_pop()
                if evs is not None and timing:
                    evs.extend([(1, e0, e1), (2, e2, e3), (3, e4, e5)])
            else:
                sp.push("decode tokens=%d bs=%d rows=%d ctx=%d graph=%d steps=0 topk=0%s"
                        % (rows, C, rows, ctx, int(graph), tail))
                sp.sgl_push(sp.step_name("DECODE", C, 1, ctx))
                e0 = ev()
                (logits,) = e.decode(rows, graph)
                e1 = ev()
                sp.sgl_pop()
                sp.pop()
                sp.push("sample tokens=%d bs=%d rows=%d ctx=%d graph=0 steps=0 topk=0%s"
                        % (C, C, C, ctx, tail))
                e2 = ev()
                nt = torch.argmax(logits[:C], dim=-1)
                s.last_tok[:C].copy_(nt)
                e3 = ev()
                t0 = time.perf_counter()
                nl = nt.tolist()                      # blocking read of the sampled tokens
                d2h = time.perf_counter() - t0
                sp.pop()
                acc_list = [0] * C
                tok_list = [[t] for t in nl]
                if evs is not None and timing:
                    evs.extend([(4, e0, e1), (5, e2, e3)])
            # ---- the scheduler: process the results, then build the next batch ----------
            t0 = time.perf_counter()
            gained = 0
            for i, r in enumerate(reqs):
                out = r.output_ids
                for t in tok_list[i][:acc_list[i] + 1]:
                    out.append(t)                     # per token, as check_finished does
                    gained += 1
                    if len(out) >= r.max_new_tokens:
                        r.finished_reason = "length"
                        break
                    if t in r.stop_ids:
                        r.finished_reason = "stop"
                        break
                r.kv_len += acc_list[i] + 1
            fin = 0
            for i, r in enumerate(reqs):
                if r.finished_reason is not None:
                    fin += 1
                    reqs[i] = self.new_req(rng, False)
            cur["ctx"] = prepare()
            host = time.perf_counter() - t0
            accepted = sum(acc_list) + C
            if stats is not None:
                stats["tokens"] += gained
                stats["acc_sum"] += accepted
                stats["acc_n"] += C
                stats["ctx_sum"] += ctx / C
                stats["host"] += host
                stats["d2h"] += d2h
                stats["fin"] += fin
                stats["n"] += 1
            # ---- the server log (scheduler_metrics_mixin.report_decode_stats) -------------
            lg["tok"] += gained
            lg["acc"] += accepted
            lg["fwd"] += C
            lg["it"] += 1
            if self.log_f and lg["it"] % a.decode_log_interval == 0:
                now = time.perf_counter()
                num = sum(r.kv_len for r in reqs)
                msg = "Decode batch, #running-req: %d, #token: %d, token usage: %.2f, " % (
                    C, num, num / float(m.R * m.L))
                if spec:
                    msg += "accept len: %.2f, accept rate: %.2f, " % (
                        lg["acc"] / float(lg["fwd"]), (lg["acc"] - lg["fwd"]) / float(lg["fwd"] * steps))
                msg += "cuda graph: %s, gen throughput (token/s): %.2f, #queue-req: 0" % (
                    graph, lg["tok"] / max(now - lg["t"], 1e-9))
                self.log(msg)
                lg.update(tok=0, acc=0, fwd=0, t=now)

        if graph:
            e.capture_point(rows, steps, spec)
        for _ in range(a.warmup):
            one_iteration(None, None)
        if m.dev == "cuda":
            torch.cuda.synchronize()
        stats = new_stats()
        evs = []
        pr0 = probe_host(m.dev)
        if capture and m.dev == "cuda":
            torch.cuda.profiler.start()
        t_start = time.perf_counter()
        while True:
            one_iteration(stats, evs)
            n = stats["n"]
            if n >= a.max_iters or (n >= a.min_iters and time.perf_counter() - t_start >= a.seconds):
                break
        if m.dev == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - t_start
        if capture and m.dev == "cuda":
            torch.cuda.profiler.stop()
        pr1 = probe_host(m.dev)
        stats["probe_py"] = 0.5 * (pr0[0] + pr1[0])
        stats["probe_launch"] = 0.5 * (pr0[1] + pr1[1])
        prof = "specprof" if "specprof" in os.environ.get("CUDA_INJECTION64_PATH", "") else "none"
        if a.capture or a.capture_ab:            # specprof --capture-range: this window recorded or not
            prof = "range-on" if capture else "range-off"
        out = [self.result(mode, steps, alpha, C, rep, rows, graph, wall, stats, evs, prof)]
        if profile_dir is not None:
            out.append(self.profile_window(one_iteration, mode, steps, alpha, C, rep, rows,
                                           graph, profile_dir))
        sp.flush()
        return out

    def eager_draft(self, rows, steps, C, ctx):
        """The draft phase without a graph: steps-1 forwards, each in its own step span
        (an eager draft forward goes through model_runner.forward; a graph replay does not)."""
        e, s, m, sp = self.e, self.s, self.m, self.sp
        tok, hid = s.d_tok0[:rows], s.d_hid0[:rows]
        for i in range(steps - 1):
            sp.sgl_push(sp.step_name("DECODE", C, 1, ctx))
            x = m.draft(tok, hid, s.base + i, rows, 1)
            tok = torch.argmax(m.draft_logits(x), dim=-1)
            s.draft_tok[:rows, i + 1].copy_(tok)
            hid = x
            sp.sgl_pop()

    def profile_window(self, one_iteration, mode, steps, alpha, C, rep, rows, graph, pdir):
        """--profile-steps iterations under torch.profiler (CPU+CUDA, no shapes; stacks with
        --profile-stack),
        exported as SGLang's profiler does: DIR/{profile_id}-TP-0-DECODE.trace.json.gz."""
        a = self.a
        os.makedirs(pdir, exist_ok=True)
        acts = [torch.profiler.ProfilerActivity.CPU]
        if self.m.dev == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
            torch.cuda.synchronize()
        prof = torch.profiler.profile(activities=acts, with_stack=a.profile_stack, record_shapes=False)
        prof.start()
        stats = new_stats()
        t0 = time.perf_counter()
        for _ in range(a.profile_steps):
            one_iteration(stats, None)
        if self.m.dev == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        prof.stop()
        pid = "%.6f" % time.time()       # SGLang's profile_id: str(time.time())
        prof.export_chrome_trace(os.path.join(pdir, "%s-TP-0-DECODE.trace.json.gz" % pid))
        return self.result(mode, steps, alpha, C, rep, rows, graph, wall, stats, [], "kineto")

    def result(self, mode, steps, alpha, C, rep, rows, graph, wall, st, evs, profiler):
        a, m = self.a, self.m
        n = st["n"]
        phase_names = PHASES
        ph = [0.0] * 6
        for p, e0, e1 in evs:
            ph[p] += e0.elapsed_time(e1) * 1e3
        ph = [x / n if n else 0.0 for x in ph]
        iter_us = wall * 1e6 / n if n else 0.0
        spec = mode == "spec"
        row = dict(
            preset=m.name, mode=mode, steps=steps, topk=1 if spec else 0,
            draft_tokens=steps + 1 if spec else 0, alpha="%.3f" % (alpha if spec else 0.0),
            concurrency=C, rep=rep, tok_s="%.2f" % (st["tokens"] / wall if wall > 0 else 0),
            tok_s_req="%.3f" % (st["tokens"] / wall / C if wall > 0 else 0),
            iter_us="%.1f" % iter_us,
            accept_len="%.4f" % (st["acc_sum"] / float(st["acc_n"]) if st["acc_n"] else 0),
        )
        for i, nm in enumerate(phase_names):
            row[nm + "_us"] = "%.1f" % ph[i]
        row["host_us"] = "%.1f" % (iter_us - sum(ph) if evs else 0.0)
        row.update(
            ctx_mean="%.1f" % (st["ctx_sum"] / n if n else 0), iters=n, rows=rows,
            graph=int(graph), cuda_graph_bs=";".join(str(b) for b in a.cg_bs) if self.e.use_graphs else "none",
            layers=m.c["layers"], tp=1, gpus=1,
            prompt_len="%d:%d" % a.prompt, output_len="%d:%d" % a.output,
            seconds="%.4f" % wall,
            host_sched_us="%.1f" % (st["host"] * 1e6 / n if n else 0),
            d2h_us="%.1f" % (st["d2h"] * 1e6 / n if n else 0),
            profiler=profiler, experts=m.c["experts"], moe_topk=m.c["moe_topk"],
            moe_impl=m.moe_impl, finished=st["fin"], impl="torch-" + torch.__version__.split("+")[0],
            probe_py_us="%.1f" % st.get("probe_py", 0.0),
            probe_launch_us="%.2f" % st.get("probe_launch", 0.0),
        )
        return row


CSV_COLS = ["preset", "mode", "steps", "topk", "draft_tokens", "alpha", "concurrency", "rep",
            "tok_s", "tok_s_req", "iter_us", "accept_len", "draft_us", "verify_us", "accept_us",
            "extend_us", "decode_us", "sample_us", "host_us", "ctx_mean", "iters", "rows",
            "graph", "cuda_graph_bs", "layers", "tp", "gpus", "prompt_len", "output_len",
            "seconds", "host_sched_us", "d2h_us", "profiler", "experts", "moe_topk", "moe_impl",
            "finished", "impl", "probe_py_us", "probe_launch_us"]


def write_csv(path, rows):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLS)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow(r)


def server_args(a, m, mode, steps, C):
    spec = mode == "spec"
    return {
        "model_path": "torchbench/" + m.name, "tp_size": 1, "dp_size": 1, "pp_size": 1,
        "ep_size": 1, "dtype": "bfloat16" if m.dt == torch.bfloat16 else str(m.dt),
        "speculative_algorithm": "EAGLE3" if spec else None,
        "speculative_num_steps": steps if spec else None,
        "speculative_eagle_topk": 1 if spec else None,
        "speculative_num_draft_tokens": steps + 1 if spec else None,
        "cuda_graph_bs": a.cg_bs, "cuda_graph_max_bs": a.cuda_graph_max_bs,
        "disable_cuda_graph": bool(a.disable_cuda_graph), "attention_backend": "torch_native",
        "decode_log_interval": a.decode_log_interval, "max_running_requests": C,
        "random_seed": a.seed,
        "torchbench": {"preset": m.name, "shape": m.c, "concurrency": C,
                       "prompt_len": list(a.prompt), "output_len": list(a.output),
                       "moe_impl": m.moe_impl, "ctx_max": m.L, "rows_max": m.R},
    }


# ---------------------------------------------------------------------------------------
def pick_moe_impl(want, device):
    if want != "auto":
        return want
    if device == "cuda" and hasattr(torch, "_grouped_mm"):
        return "grouped"
    return "capacity"


def moe_selftest(m):
    """Chooses the MoE implementation that runs here, agrees with the slow reference loop
    (the capacity one compared with its capacity at T, so that nothing is dropped) and, on
    CUDA, captures and replays in a CUDA graph with the same result; returns (impl, max
    relative error, what failed before it)."""
    if not m.c["experts"]:
        return "none", 0.0, ""
    torch.manual_seed(7)
    x = torch.randn(37, m.h, device=m.dev, dtype=torch.float32).to(m.dt)
    ref = m.moe_reference(x, m.layers[0]).float()
    msgs = []
    for impl in [m.moe_impl] + (["capacity"] if m.moe_impl != "capacity" else []):
        m.moe_impl = impl
        m.cap_full = True
        try:
            y = m.moe(x, m.layers[0])
            err = rel_err(y, ref)
            if m.dev == "cuda":
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    m.moe(x, m.layers[0])
                torch.cuda.current_stream().wait_stream(side)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    yg = m.moe(x, m.layers[0])
                g.replay()
                torch.cuda.synchronize()
                err = max(err, rel_err(yg, ref))
                del g
        except Exception as ex:     # a missing or refusing kernel, or one not capturable
            msgs.append("%s: %s" % (impl, (str(ex).splitlines() or ["error"])[0][:200]))
            continue
        finally:
            m.cap_full = False
        if err < 3e-2:
            return impl, err, "; ".join(msgs)
        msgs.append("%s: max rel err %.3g vs the reference loop" % (impl, err))
    die("no MoE implementation works here: " + "; ".join(msgs))


def rel_err(a, b):
    a, b = a.float(), b.float()
    return float((a - b).abs().max() / max(float(b.abs().max()), 1e-6))


def run_check(a, device, dtype):
    """Per preset: the MoE against its slow loop, and every phase's CUDA graph replay
    against the same phase run eagerly from the same state (KV caches restored between
    the two), at a few shapes (rows 1, 8 and 16; 16 is not a captured size of the default
    list, so it is checked as the graph of its own size). Prints '# check: N passed, M
    failed' and returns M."""
    passed = failed = 0
    for pn in a.preset:
        cfg = PRESETS[pn]
        m = Model(pn, cfg, 16, 256, device, dtype, a.seed, pick_moe_impl(a.moe_impl, device))
        if cfg["experts"]:
            impl, err, msg = moe_selftest(m)
            print("check %s moe %s vs reference loop: max_rel_err=%.3g ok%s" % (
                pn, impl, err, (" (" + msg + ")") if msg else ""))
            passed += 1
        st = State(m, 6)
        eng = Engine(m, st, use_graphs=True)
        if not eng.use_graphs:
            print("check %s: no CUDA here, graph comparisons skipped" % pn)
            continue
        kv_all = m.kc + m.vc + [m.dkc, m.dvc]
        for rows, steps in ((1, 2), (8, 5), (16, 3)):
            q = steps + 1
            st.randomize(m, 1234 + rows)
            if steps > 1:                               # capture first, compare after
                eng.draft(rows, steps, True)
            vbuf = eng.verify(rows, q, True)[1]
            eng.extend(rows, q, vbuf, True)
            eng.decode(rows, True)
            torch.cuda.synchronize()
            g = torch.Generator(device="cpu")
            for phase in ("draft", "verify", "extend", "decode"):
                if phase == "draft" and steps < 2:
                    continue
                outs = []
                st.randomize(m, 4321 + rows)
                g.manual_seed(rows)
                acc = torch.randint(0, steps + 1, (rows,), generator=g)
                tokv = torch.randint(0, cfg["draft_vocab"], (rows, q), generator=g)
                aux = (torch.randn(rows * q, 3 * m.h, generator=g) * 0.5).to(dtype)
                saved = [t[:rows].clone() for t in kv_all]
                snap = [t.clone() for t in (st.base, st.last_tok, st.d_tok0, st.d_hid0, st.draft_tok)]
                for graph in (False, True):
                    for t, v in zip(kv_all, saved):
                        t[:rows].copy_(v)
                    for t, v in zip((st.base, st.last_tok, st.d_tok0, st.d_hid0, st.draft_tok), snap):
                        t.copy_(v)
                    st.acc[:rows].copy_(acc)
                    st.tok_v[:rows, :q].copy_(tokv)
                    if phase == "draft":
                        o = list(eng.draft(rows, steps, graph)) + [st.draft_tok[:rows, :steps]]
                    elif phase == "verify":
                        o = list(eng.verify(rows, q, graph))
                    elif phase == "extend":
                        src = vbuf if graph else aux.to(device)
                        if graph:
                            vbuf.copy_(aux)
                        o = list(eng.extend(rows, q, src, graph))
                    else:
                        o = list(eng.decode(rows, graph))
                    torch.cuda.synchronize()
                    outs.append([t.clone() for t in o] + [m.kc[0][:rows].clone(), m.dkc[:rows].clone()])
                worst = 0.0
                for x, y in zip(outs[0], outs[1]):
                    if x.dtype in (torch.long, torch.int32):
                        worst = max(worst, float((x != y).float().mean()))
                    else:
                        worst = max(worst, rel_err(y, x))
                ok = worst <= 2e-2        # bf16 (8 mantissa bits): the same kernels should agree exactly
                print("check %s %s rows=%d steps=%d graph vs eager: max_rel_err=%.3g %s" % (
                    pn, phase, rows, steps, worst, "ok" if ok else "FAIL"))
                passed, failed = passed + ok, failed + (not ok)
        del eng, st, m
        if device == "cuda":
            torch.cuda.empty_cache()
    print("# check: %d passed, %d failed" % (passed, failed))
    return failed


def ilist(s):
    out = []
    for part in s.split(","):
        if not part:
            continue
        if ":" in part:
            x = [int(v) for v in part.split(":")]
            out.extend(range(x[0], x[1] + 1, x[2] if len(x) > 2 else 1))
        else:
            out.append(int(part))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="torch-dense",
                    help="comma list of %s" % ",".join(PRESETS))
    ap.add_argument("--mode", default="spec,baseline", help="spec, baseline or both")
    ap.add_argument("--steps", default="3", help="draft steps (chain, topk=1), comma list")
    ap.add_argument("--alpha", default="0.7", help="per-position acceptance, comma list")
    ap.add_argument("--concurrency", default="1,16", help="running requests, comma list")
    ap.add_argument("--repeats", type=int, default=1, help="repeats per point (loop outermost)")
    ap.add_argument("--prompt-len", default="1024", help="N or LO:HI (uniform)")
    ap.add_argument("--output-len", default="256", help="N or LO:HI (uniform)")
    ap.add_argument("--warmup", type=int, default=3, help="iterations before the timed window")
    ap.add_argument("--seconds", type=float, default=0.3, help="timed window per point")
    ap.add_argument("--min-iters", type=int, default=5)
    ap.add_argument("--max-iters", type=int, default=100000)
    ap.add_argument("--cuda-graph-bs", default="", help="captured batch sizes (default SGLang's list)")
    ap.add_argument("--cuda-graph-max-bs", type=int, default=64)
    ap.add_argument("--disable-cuda-graph", action="store_true", help="everything eager")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="", help="bfloat16 (default on cuda) or float32 (cpu)")
    ap.add_argument("--moe-impl", default="auto", choices=["auto", "grouped", "capacity"])
    ap.add_argument("--rows-max", type=int, default=0, help="KV rows (default: largest padded batch)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", default="", help="append one row per point")
    ap.add_argument("--spans", default="specprof", choices=["specprof", "sglang", "both", "none"])
    ap.add_argument("--roofline", action="store_true", help="SGLang's roofline words in step spans")
    ap.add_argument("--ranges-out", default="", help="append every range/span name (tests)")
    ap.add_argument("--torch-profile", default="", help="DIR: per point, --profile-steps "
                    "iterations under torch.profiler into DIR/<point>/")
    ap.add_argument("--profile-steps", type=int, default=8)
    ap.add_argument("--profile-stack", action="store_true", help="--torch-profile with "
                    "with_stack=True (SGLang's default: python_function events)")
    ap.add_argument("--server-log", default="", help="SGLang-format Decode batch lines "
                    "(with --torch-profile: one server.log per point directory)")
    ap.add_argument("--decode-log-interval", type=int, default=40)
    ap.add_argument("--no-phase-times", action="store_true", help="no CUDA events per phase")
    ap.add_argument("--discard-first", action="store_true",
                    help="run the first point once more before the grid, not recorded")
    ap.add_argument("--time-budget", type=float, default=0, help="stop starting points after S s")
    ap.add_argument("--capture", default="", help="points whose timed window runs between "
                    "cudaProfilerStart and Stop (specprof --capture-range profiler-api records "
                    "those alone): comma list of spec:STEPS:C, baseline:C, or * for every point")
    ap.add_argument("--capture-ab", action="store_true", help="every point twice per repeat, "
                    "its window captured and not, the order alternating (the capture's cost "
                    "measured in one process: rows' profiler column range-on / range-off)")
    ap.add_argument("--check", action="store_true", help="graph vs eager, MoE vs loop")
    a = ap.parse_args(argv)
    a.capture_set = parse_capture(a.capture)

    presets = [p for p in a.preset.split(",") if p]
    for p in presets:
        if p not in PRESETS:
            die("--preset: value %s: not one of %s" % (p, ",".join(PRESETS)))
    a.preset = presets
    device = a.device
    if device == "cuda" and not torch.cuda.is_available():
        die("--device cuda: no CUDA device visible (use --device cpu with --preset tiny)")
    dtype = {"": torch.bfloat16 if device == "cuda" else torch.float32,
             "bfloat16": torch.bfloat16, "float32": torch.float32}.get(a.dtype)
    if dtype is None:
        die("--dtype: value %s: bfloat16 or float32" % a.dtype)
    a.cg_bs = ilist(a.cuda_graph_bs) if a.cuda_graph_bs else sglang_cuda_graph_bs(a.cuda_graph_max_bs)
    a.cg_bs = sorted(set(b for b in a.cg_bs if b <= a.cuda_graph_max_bs))
    if a.check:
        return 1 if run_check(a, device, dtype) else 0
    modes = [x for x in a.mode.split(",") if x]
    for x in modes:
        if x not in ("spec", "baseline"):
            die("--mode: value %s: spec or baseline" % x)
    steps_l = ilist(a.steps)
    alphas = [float(x) for x in a.alpha.split(",") if x]
    concs = ilist(a.concurrency)
    for s_ in steps_l:
        if not 1 <= s_ <= 16:
            die("--steps: value %d: 1..16" % s_)
    for al in alphas:
        if not 0 <= al <= 1:
            die("--alpha: value %g: 0..1" % al)
    if a.warmup < 1:
        die("--warmup: value %d: at least 1 (the first iteration captures the graphs)" % a.warmup)
    a.prompt, a.output = parse_len(a.prompt_len), parse_len(a.output_len)
    use_graphs = not a.disable_cuda_graph and device == "cuda"
    if not use_graphs:
        a.cg_bs = []
    smax = max(steps_l) if "spec" in modes else 1
    ctx_max = a.prompt[1] + a.output[1] + smax + 2
    ctx_max = (ctx_max + 63) // 64 * 64
    rows_max = a.rows_max or max(cg_bucket(a.cg_bs, c) or c for c in concs)
    print("# torchbench: torch %s, device %s, dtype %s, graphs %s, cuda_graph_bs %s" % (
        torch.__version__, device, str(dtype).replace("torch.", ""),
        "on" if use_graphs else "off", ";".join(map(str, a.cg_bs)) or "none"))
    print("# presets %s modes %s steps %s alpha %s concurrency %s repeats %d prompt %d:%d "
          "output %d:%d ctx_max %d rows_max %d window %.2fs" % (
              ",".join(presets), ",".join(modes), steps_l, alphas, concs, a.repeats,
              a.prompt[0], a.prompt[1], a.output[0], a.output[1], ctx_max, rows_max, a.seconds))
    t_begin = time.perf_counter()
    cols = ["preset", "mode", "steps", "alpha", "concurrency", "rep", "rows", "graph", "tok_s",
            "accept_len", "iter_us", "host_sched_us", "d2h_us", "profiler"]
    print("# " + " ".join(cols))
    print("# -     -    -     -     reqs        -   -    -     tok/s    tok/step us      us   us  -")
    npts = 0
    for pn in presets:
        t0 = time.perf_counter()
        m = Model(pn, PRESETS[pn], rows_max, ctx_max, device, dtype, a.seed,
                  pick_moe_impl(a.moe_impl, device))
        impl, err, msg = moe_selftest(m)
        print("# %s: %d layers, hidden %d, experts %d top-%d (%s), init %.1fs%s" % (
            pn, m.c["layers"], m.h, m.c["experts"], m.c["moe_topk"], impl,
            time.perf_counter() - t0, (" [" + msg + "]") if msg else ""))
        st = State(m, smax)
        st.randomize(m, a.seed)
        eng = Engine(m, st, use_graphs)
        spans = Spans(a.spans, device, a.ranges_out or None, a.roofline)
        srv = Server(a, m, eng, spans)
        if a.server_log and not a.torch_profile:
            srv.log_f = open(a.server_log, "a")
        stop = False
        if a.discard_first:
            m0 = modes[0]
            srv.run_point(m0, steps_l[0] if m0 == "spec" else 0, alphas[0], concs[0], -1)
        for rep in range(a.repeats):
            for mode in modes:
                for steps in (steps_l if mode == "spec" else [0]):
                    for C in concs:
                        for alpha in (alphas if mode == "spec" else [0.0]):
                            if a.time_budget and time.perf_counter() - t_begin > a.time_budget:
                                print("# time budget %.0fs reached: stopping before %s %s s%d "
                                      "C%d rep %d" % (a.time_budget, pn, mode, steps, C, rep))
                                stop = True
                                break
                            pdir = None
                            if a.torch_profile:
                                tag = "%s-%s-s%d-bs%d" % (pn, mode, steps, C) if mode == "spec" \
                                    else "%s-%s-bs%d" % (pn, mode, C)
                                pdir = os.path.join(a.torch_profile, tag)
                                os.makedirs(pdir, exist_ok=True)
                                with open(os.path.join(pdir, "server_args.json"), "w") as f:
                                    json.dump(server_args(a, m, mode, steps, C), f, indent=1)
                                srv.log_f = open(os.path.join(pdir, "server.log"), "a")
                            if a.capture_ab:         # both ways, the order alternating
                                first = (rep + npts) % 2 == 0
                                rows = srv.run_point(mode, steps, alpha, C, rep, pdir, first)
                                rows += srv.run_point(mode, steps, alpha, C, rep, pdir, not first)
                            else:
                                rows = srv.run_point(mode, steps, alpha, C, rep, pdir,
                                                     captured(a, mode, steps, C))
                            if pdir is not None:
                                srv.log_f.close()
                                srv.log_f = None
                            npts += 1
                            for r in rows:
                                print("  " + " ".join(str(r[c]) for c in cols))
                            if a.csv:
                                write_csv(a.csv, rows)
                            sys.stdout.flush()
                        if stop:
                            break
                    if stop:
                        break
                if stop:
                    break
            if stop:
                break
        print("# %s: %d graphs captured in %.1fs" % (pn, len(eng.graphs), eng.capture_s))
        if srv.log_f:
            srv.log_f.close()
        del srv, eng, st, m
        if device == "cuda":
            torch.cuda.empty_cache()
    print("# %d points in %.1fs" % (npts, time.perf_counter() - t_begin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
