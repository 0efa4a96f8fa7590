#!/usr/bin/env python3
"""eager_loop.py: an eager PyTorch generate loop, written the way Hugging Face's Llama and
`generate` are (one Python call per op, a KV cache grown with torch.cat, a 4-D mask built
each step, a host read of every new token), to measure what a profiler costs where the
host launches every kernel one by one (docs/profiler.md, issue 20). Random bf16 weights,
Llama-3.2-1B shape by default (16 layers, hidden 2048, 32 heads, 8 KV heads, MLP 8192,
vocab 128256), batch 1; optionally a 2-layer draft model that proposes --spec-tokens
tokens per round, verified by one target forward, accepted at a set rate (--alpha, drawn
from a seeded generator: the work per round is what matters here, not the text).

Prints one line per timed generation: `run <i> tokens <n> seconds <s> tok_s <x>`; run 0 is
the process's first (it pays the allocator and cuBLAS set-up) and a harness drops it.
NVTX phase ranges in specprof's format (`decode bs=1 tokens=1 ctx=N graph=0`, `draft`,
`verify`, `accept`) unless --no-nvtx.

usage: python3 eager_loop.py [--spec-tokens 4] [--tokens 64] [--runs 3] [--csv FILE]
"""
import argparse
import math
import sys
import time

import torch
import torch.nn.functional as F


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--inter", type=int, default=8192)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--draft-layers", type=int, default=2)
    p.add_argument("--spec-tokens", type=int, default=0, help="draft tokens per round (0: plain decode)")
    p.add_argument("--alpha", type=float, default=0.7, help="acceptance rate per draft token")
    p.add_argument("--prompt", type=int, default=128, help="prompt tokens (prefill, not timed)")
    p.add_argument("--tokens", type=int, default=64, help="new tokens per timed generation")
    p.add_argument("--runs", type=int, default=3, help="generations per process (the first is a warm-up)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-nvtx", action="store_true")
    p.add_argument("--csv", help="append label,run,tok_s rows")
    p.add_argument("--label", default="")
    return p.parse_args()


class Nvtx:
    def __init__(self, on):
        self.on = on

    def push(self, name):
        if self.on:
            torch.cuda.nvtx.range_push(name)

    def pop(self):
        if self.on:
            torch.cuda.nvtx.range_pop()


def rms_norm(x, w, eps=1e-5):
    # LlamaRMSNorm: float32 variance, rsqrt, scale, cast back
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return w * h.to(x.dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Model:
    """A decoder of `layers` Llama blocks; embedding and lm_head can be shared."""

    def __init__(self, a, layers, dev, gen, shared=None):
        h, d = a.hidden, a.hidden // a.heads
        self.a, self.nh, self.nkv, self.d = a, a.heads, a.kv_heads, d
        bf = torch.bfloat16

        def w(*shape):
            return (torch.randn(*shape, device=dev, generator=gen, dtype=torch.float32) * 0.02).to(bf)

        if shared:
            self.embed, self.lm_head = shared.embed, shared.lm_head
        else:
            self.embed = w(a.vocab, h)
            self.lm_head = w(a.vocab, h)
        self.layers = []
        for _ in range(layers):
            self.layers.append(dict(
                ln1=torch.ones(h, device=dev, dtype=bf), ln2=torch.ones(h, device=dev, dtype=bf),
                q=w(self.nh * d, h), k=w(self.nkv * d, h), v=w(self.nkv * d, h), o=w(h, self.nh * d),
                gate=w(a.inter, h), up=w(a.inter, h), down=w(h, a.inter)))
        self.norm = torch.ones(h, device=dev, dtype=bf)
        inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
        t = torch.arange(8192, device=dev, dtype=torch.float32)
        emb = torch.cat((torch.outer(t, inv),) * 2, dim=-1)
        self.cos, self.sin = emb.cos().to(bf), emb.sin().to(bf)

    def new_cache(self):
        return [[None, None] for _ in self.layers]

    @staticmethod
    def cache_len(cache):
        return 0 if cache[0][0] is None else cache[0][0].shape[2]

    @staticmethod
    def truncate(cache, n):
        for c in cache:
            c[0], c[1] = c[0][:, :, :n], c[1][:, :, :n]

    def forward(self, ids, cache):
        """ids: (1, n) int64 on the GPU; returns logits (1, n, vocab); grows cache."""
        n, past = ids.shape[1], self.cache_len(cache)
        x = F.embedding(ids, self.embed)
        pos = torch.arange(past, past + n, device=ids.device)
        cos, sin = self.cos[pos][None, None], self.sin[pos][None, None]
        # 4-D additive mask as HF builds it: each new token sees the past and itself
        L = past + n
        mask = torch.full((n, L), float("-inf"), device=ids.device, dtype=x.dtype)
        mask = torch.triu(mask, diagonal=past + 1)[None, None]
        for lw, c in zip(self.layers, cache):
            r = x
            h = rms_norm(x, lw["ln1"])
            q = F.linear(h, lw["q"]).view(1, n, self.nh, self.d).transpose(1, 2)
            k = F.linear(h, lw["k"]).view(1, n, self.nkv, self.d).transpose(1, 2)
            v = F.linear(h, lw["v"]).view(1, n, self.nkv, self.d).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            c[0] = k if c[0] is None else torch.cat([c[0], k], dim=2)
            c[1] = v if c[1] is None else torch.cat([c[1], v], dim=2)
            rep = self.nh // self.nkv
            kk = c[0][:, :, None].expand(1, self.nkv, rep, L, self.d).reshape(1, self.nh, L, self.d)
            vv = c[1][:, :, None].expand(1, self.nkv, rep, L, self.d).reshape(1, self.nh, L, self.d)
            o = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
            o = o.transpose(1, 2).reshape(1, n, self.nh * self.d)
            x = r + F.linear(o, lw["o"])
            r = x
            h = rms_norm(x, lw["ln2"])
            x = r + F.linear(F.silu(F.linear(h, lw["gate"])) * F.linear(h, lw["up"]), lw["down"])
        x = rms_norm(x, self.norm)
        return F.linear(x, self.lm_head).float()


def generate_plain(tgt, prompt, a, nv):
    cache = tgt.new_cache()
    logits = tgt.forward(prompt, cache)
    nxt = logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    t0, made = time.perf_counter(), 0
    while made < a.tokens:
        nv.push(f"decode bs=1 tokens=1 ctx={tgt.cache_len(cache)} graph=0")
        logits = tgt.forward(nxt, cache)
        nxt = logits[:, -1:].argmax(-1)
        made += 1
        done = bool((nxt == -1).all())   # generate's stopping check: a host read every token
        nv.pop()
        if done:
            break
    torch.cuda.synchronize()
    return made, time.perf_counter() - t0


def generate_spec(tgt, drf, prompt, a, nv, rng):
    k = a.spec_tokens
    tc, dc = tgt.new_cache(), drf.new_cache()
    logits = tgt.forward(prompt, tc)
    drf.forward(prompt, dc)
    last = logits[:, -1:].argmax(-1)
    pending = last                        # tokens the draft has not seen yet
    torch.cuda.synchronize()
    t0, made = time.perf_counter(), 0
    while made < a.tokens:
        ctx = tgt.cache_len(tc)
        nv.push(f"draft bs=1 tokens=1 ctx={ctx} steps={k} graph=0")
        props, inp = [], pending
        for _ in range(k):
            dl = drf.forward(inp, dc)
            inp = dl[:, -1:].argmax(-1)
            props.append(inp)
        nv.pop()
        nv.push(f"verify bs=1 tokens={k + 1} ctx={ctx} steps={k} graph=0")
        vin = torch.cat([last] + props, dim=1)
        vl = tgt.forward(vin, tc)
        best = vl.argmax(-1)              # the target's choice at every position
        nv.pop()
        nv.push("accept bs=1")
        acc = 0
        while acc < k and rng.random() < a.alpha:
            acc += 1
        bonus = best[:, acc : acc + 1]
        _ = best.tolist()                 # the host reads the verified tokens (a sync)
        # keep the target's cache up to last + accepted drafts; the draft saw last + props[:-1]
        tgt.truncate(tc, ctx + 1 + acc)
        dkeep = ctx + 1 + min(acc, k - 1)
        drf.truncate(dc, dkeep)
        pending = torch.cat(props[k - 1 :] + [bonus], dim=1) if acc == k else bonus
        last = bonus
        made += acc + 1
        nv.pop()
    torch.cuda.synchronize()
    return made, time.perf_counter() - t0


def main():
    a = parse()
    torch.backends.cuda.matmul.allow_tf32 = True
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)
    tgt = Model(a, a.layers, dev, gen)
    drf = Model(a, a.draft_layers, dev, gen, shared=tgt) if a.spec_tokens > 0 else None
    prompt = torch.randint(0, a.vocab, (1, a.prompt), device=dev, generator=gen)
    nv = Nvtx(not a.no_nvtx)
    import random
    rows = []
    with torch.inference_mode():
        for run in range(a.runs):
            # the same acceptance draws in every run, so that runs do the same work (the
            # first H200 call drew them on from run to run: 27 to 47 tok/s in one process)
            rng = random.Random(a.seed)
            if drf is None:
                made, sec = generate_plain(tgt, prompt, a, nv)
            else:
                made, sec = generate_spec(tgt, drf, prompt, a, nv, rng)
            tok_s = made / sec
            print(f"run {run} tokens {made} seconds {sec:.4f} tok_s {tok_s:.2f}", flush=True)
            rows.append((run, tok_s))
    if a.csv:
        with open(a.csv, "a") as f:
            for run, t in rows:
                f.write(f"{a.label},{run},{t:.3f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
