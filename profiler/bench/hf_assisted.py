#!/usr/bin/env python3
"""hf_assisted.py: Hugging Face transformers' own assisted generation, a ground truth for specsim.

model.generate(..., assistant_model=draft, num_assistant_tokens=K, num_assistant_tokens_schedule=
"constant", do_sample=False), batch 1, eager, as a user runs it; K=0 is plain generate. The
models are random-weight Llama-shaped ones built from a LlamaConfig (no downloads): a target
(default 16 layers, hidden 2048) and a 2-layer draft, one vocabulary. Workload assumed: one
request, short prompt, greedy; the host (Python, one thread) is most of each step.

Acceptance is set, not hoped for. Each layer's output projections are scaled by --eps, so the
residual stream is the current token's embedding (random, std 1: near-orthogonal rows), and
lm_head row perm[t] is embedding row t: the target's greedy next token after t is perm[t],
perm one cycle through the vocabulary. The draft's lm_head does the same with perm_d, which
equals perm on the tokens with u[t] < a (u uniform, seeded) and differs elsewhere, so a draft
token after t is accepted exactly when t is in that set: per-position acceptance a, drawn
independently per token, as specsim's acceptance model assumes. The prompt's last token is
picked so that the tokens the drafts see (the first --new-tokens of the chain) hold each
level's fraction as closely as the chain allows; the run reports that measured fraction
(a_tok), the generated tokens per target forward (accept_len) and draft forwards per round.
Checks (printed, and in the CSV header): the target's plain output follows perm; every
assisted output equals the plain one (assisted greedy decoding is lossless).

  hf_assisted.py grid    [--levels 0.9,0.6] [--ks 0..8] [--repeats 3] [--budget-s S] --csv F
                         [--cost-csv F]: K 0..8 at each level, every configuration once as
                         warm-up (not reported), then rounds in alternating order; with
                         --cost-csv the helper's cost: in every round one adjacent pair
                         (annotate on/off, the order alternating) at K 0 and 4, then its cost
                         per forward on a module that does nothing
  hf_assisted.py capture --k K --level a [--repeats 2] --csv F: warm-up, then (under specprof
                         with --signal-start --signal-stop) SIGUSR1 to specprof, --repeats pairs
                         of generates (plain, then K), SIGUSR2; the annotation comes from
                         specprof --torch-annotate (LlamaForCausalLM#1=target,#2=draft)
CSV columns (grid and capture): K, level (requested per-position acceptance), a_tok, accept_len,
draft_per_round, tok_s, repeat, new_tokens, wall_s, target_fwd, draft_fwd, cpu_s (the
process's CPU time during the generate: a stall with the CPU idle shows as wall_s >> cpu_s).
"""
import argparse
import contextlib
import os
import signal
import statistics
import sys
import time

CSV_COLS = "K,level,a_tok,accept_len,draft_per_round,tok_s,repeat,new_tokens,wall_s,target_fwd,draft_fwd,cpu_s"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["grid", "capture"])
    ap.add_argument("--levels", default="0.9,0.6", help="per-position acceptance levels (grid)")
    ap.add_argument("--ks", default="0,1,2,3,4,5,6,7,8", help="num_assistant_tokens values (grid)")
    ap.add_argument("--k", type=int, default=2, help="num_assistant_tokens (capture)")
    ap.add_argument("--level", type=float, default=0.9, help="acceptance level (capture)")
    ap.add_argument("--repeats", type=int, default=3, help="measured runs per configuration")
    ap.add_argument("--max-repeats", type=int, default=8, help="grid: more rounds while --budget-s lasts")
    ap.add_argument("--budget-s", type=float, default=0, help="grid: no new round after this many s (0: none)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--cost-csv", default="", help="grid: also measure specprof_torch's cost here")
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=96)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--inter", type=int, default=5632)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--draft-layers", type=int, default=2)
    ap.add_argument("--draft-hidden", type=int, default=1024)
    ap.add_argument("--draft-inter", type=int, default=2816)
    ap.add_argument("--draft-heads", type=int, default=8)
    ap.add_argument("--eps", type=float, default=0.01, help="scale of o_proj and down_proj weights")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    return ap.parse_args()


class Bench:
    def __init__(self, args, levels):
        import torch
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
        transformers.logging.set_verbosity_error()
        self.torch, self.args, self.levels = torch, args, levels
        dev = torch.device(args.device)
        self.dev = dev
        self.sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        V, N = args.vocab, args.new_tokens
        g = torch.Generator().manual_seed(args.seed)
        order = torch.randperm(V, generator=g)
        perm = torch.empty(V, dtype=torch.long)
        perm[order] = order.roll(-1)                      # perm[order[i]] = order[i+1]: one cycle
        u = torch.rand(V, generator=g)
        self.perm, self.u, self.order = perm, u, order

        def config(layers, hidden, inter, heads, kv):
            return LlamaConfig(vocab_size=V, hidden_size=hidden, intermediate_size=inter,
                               num_hidden_layers=layers, num_attention_heads=heads,
                               num_key_value_heads=kv, max_position_embeddings=4096,
                               bos_token_id=None, eos_token_id=None, pad_token_id=None,
                               tie_word_embeddings=False)

        def build(cfg, p, seed):
            with (dev if hasattr(dev, "__enter__") else contextlib.nullcontext()):  # torch >= 2.0
                m = LlamaForCausalLM(cfg)
            m = m.to(dtype=torch.bfloat16).eval()
            gen = torch.Generator(device=dev).manual_seed(seed)
            with torch.no_grad():
                E = m.model.embed_tokens.weight
                E.copy_(torch.randn(E.shape, generator=gen, device=dev))
                inv = torch.empty_like(p)
                inv[p] = torch.arange(V)
                m.lm_head.weight.copy_(E[inv.to(dev)])    # lm_head row p[t] = embedding row t
                for layer in m.model.layers:
                    layer.self_attn.o_proj.weight.mul_(args.eps)
                    layer.mlp.down_proj.weight.mul_(args.eps)
            assert m.lm_head.weight.data_ptr() != E.data_ptr(), "lm_head is tied to the embedding"
            m.generation_config.eos_token_id = None
            m.generation_config.pad_token_id = None
            return m

        t0 = time.perf_counter()
        self.target = build(config(args.layers, args.hidden, args.inter, args.heads, args.kv_heads),
                            perm, args.seed + 1)
        self.drafts, self.perm_d = {}, {}
        for i, a in enumerate(levels):
            agree = u < a
            b = (~agree).nonzero().flatten()
            pd = perm.clone()
            pd[b] = perm[b.roll(-1)]                     # a derangement of the rest: never perm[t]
            self.perm_d[a] = pd
            self.drafts[a] = build(config(args.draft_layers, args.draft_hidden, args.draft_inter,
                                          args.draft_heads, args.draft_heads), pd, args.seed + 2 + i)
        self.sync()
        log("# built target and %d draft(s) in %.1f s" % (len(levels), time.perf_counter() - t0))

        # the prompt's last token: the chain start whose first N tokens best hold each level
        inA = torch.stack([(u[order] < a).float() for a in levels])          # [levels, V] by cycle pos
        ext = torch.cat([inA, inA[:, :N]], dim=1)
        cs = torch.cat([torch.zeros(len(levels), 1), ext.cumsum(1)], dim=1)
        frac = (cs[:, N:N + V] - cs[:, :V]) / N                               # window starting at c
        err = (frac - torch.tensor(levels)[:, None]).abs().max(0).values
        c = int(err.argmin())
        start = int(order[c])
        prompt = torch.randint(V, (1, args.prompt_len), generator=g)
        prompt[0, -1] = start
        self.prompt = prompt.to(dev)
        self.mask = torch.ones_like(self.prompt)
        self.chain = [start]
        for _ in range(N + 1):
            self.chain.append(int(perm[self.chain[-1]]))
        self.a_tok = {a: float(frac[i, c]) for i, a in enumerate(levels)}
        log("# chain start %d: a_tok %s over the first %d tokens" % (
            start, {a: round(v, 4) for a, v in self.a_tok.items()}, N))

    def generate(self, K, a):
        args = self.args
        kw = dict(input_ids=self.prompt, attention_mask=self.mask, max_new_tokens=args.new_tokens,
                  do_sample=False)
        if K > 0:
            d = self.drafts[a]
            gc = d.generation_config
            gc.num_assistant_tokens = K
            gc.num_assistant_tokens_schedule = "constant"
            gc.assistant_confidence_threshold = 0.0        # no early stop of the draft
            kw.update(assistant_model=d, num_assistant_tokens=K, num_assistant_tokens_schedule="constant")
        self.sync()
        c0 = time.process_time()
        t0 = time.perf_counter()
        out = self.target.generate(**kw)
        self.sync()
        self.last_cpu_s = time.process_time() - c0   # this process's CPU time (all threads)
        return out, time.perf_counter() - t0

    def counted(self, K, a):
        """One generate with forward counters; (output, target forwards, draft forwards)."""
        n = {"t": 0, "d": 0}
        hs = [self.target.register_forward_pre_hook(lambda m, x: n.__setitem__("t", n["t"] + 1))]
        if K > 0:
            hs.append(self.drafts[a].register_forward_pre_hook(lambda m, x: n.__setitem__("d", n["d"] + 1)))
        try:
            out, dt = self.generate(K, a)
        finally:
            for h in hs:
                h.remove()
        return out, dt, n["t"], n["d"]


def row(K, a, st, tok_s, rep, new, wall, cpu_s=0.0):
    return "%d,%.4g,%.4f,%.4f,%.3f,%.3f,%d,%d,%.5f,%d,%d,%.4f" % (
        K, a, st["a_tok"], st["accept_len"], st["draft_per_round"], tok_s, rep, new, wall,
        st["target_fwd"], st["draft_fwd"], cpu_s)


def warm_and_check(b, configs):
    """Each configuration once, counted: its stats; and the losslessness checks."""
    P = b.args.prompt_len
    plain, _, _, _ = b.counted(0, configs[0][1])
    gen = plain[0, P:].tolist()
    follow = sum(1 for i, t in enumerate(gen) if t == b.chain[i + 1]) / max(len(gen), 1)
    log("# target plain output follows perm: %.4f of %d tokens" % (follow, len(gen)))
    stats, equal = {}, {}
    for K, a in configs:
        out, dt, nt, nd = b.counted(K, a)
        new = out.shape[1] - P
        equal[(K, a)] = bool(out.shape == plain.shape and (out == plain).all())
        stats[(K, a)] = {"a_tok": b.a_tok[a], "accept_len": new / nt if nt else 0,
                         "draft_per_round": nd / nt if nt and K else 0, "target_fwd": nt,
                         "draft_fwd": nd}
        log("# warm-up K=%d a=%.2f: %.1f tok/s, %d target / %d draft forwards, accept_len %.3f, "
            "equal to plain %s" % (K, a, new / dt, nt, nd, stats[(K, a)]["accept_len"], equal[(K, a)]))
    return follow, stats, equal


def header(f, b, follow, equal):
    import torch
    import transformers
    a = b.args
    f.write("# hf_assisted.py: transformers %s, torch %s, %s; target %d layers hidden %d inter %d "
            "heads %d/%d; draft %d layers hidden %d inter %d heads %d; vocab %d; prompt %d, new tokens %d, "
            "bf16, eager, batch 1, greedy; eps %g, seed %d\n" % (
                transformers.__version__, torch.__version__,
                torch.cuda.get_device_name() if b.dev.type == "cuda" else "cpu", a.layers,
                a.hidden, a.inter, a.heads, a.kv_heads, a.draft_layers, a.draft_hidden, a.draft_inter,
                a.draft_heads, a.vocab, a.prompt_len, a.new_tokens, a.eps, a.seed))
    f.write("# checks: target plain output follows perm %.4f; assisted outputs equal to plain: %d of %d\n"
            % (follow, sum(equal.values()), len(equal)))
    f.write("# level: requested per-position acceptance; a_tok: fraction of the chain's first new_tokens "
            "tokens the draft agrees on; accept_len: new tokens per target forward; tok_s: new tokens / "
            "wall time of generate()\n")
    f.write(CSV_COLS + "\n")
    f.write("#,,,,,tok/s,,,s,,,s\n")


COST_KS = (0, 4)


def cost_runs(b, f, sp, a, pair, order_on_first):
    """One pair per K in COST_KS: the same generate with annotate on the target and the draft
    and without, adjacent, in the order given; rows to f; {(K, on): tok_s}."""
    res = {}
    for K in COST_KS:
        for on in ((1, 0) if order_on_first else (0, 1)):
            anns = [sp.annotate(b.target, "target"), sp.annotate(b.drafts[a], "draft")] if on else []
            out, dt = b.generate(K, a)
            for x in anns:
                x.remove()
            new = out.shape[1] - b.args.prompt_len
            res[(K, on)] = new / dt
            f.write("K%d_a%.2f,%d,%d,%.3f,%.5f,%.4f\n" % (K, a, on, pair, new / dt, dt, b.last_cpu_s))
    f.flush()
    return res


def cost_open(b, f):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import specprof_torch as sp
    f.write("# specprof_torch cost: the same generate() with annotate on the target and the draft (1) "
            "and without (0), adjacent, the order alternating by pair, one pair per K per grid round "
            "(inside the grid's rounds), no specprof (NVTX calls reach no tool)\n")
    f.write("config,annotate,pair,tok_s,wall_s,cpu_s\n")
    return sp


def cost_summary(f, res):
    """res: list of {(K, on): tok_s} per pair; medians and the median of the pairs' ratios."""
    for K in COST_KS:
        offs = [r[(K, 0)] for r in res]
        ons = [r[(K, 1)] for r in res]
        ratios = sorted(r[(K, 1)] / r[(K, 0)] for r in res)
        off, on = statistics.median(offs), statistics.median(ons)
        log("# cost K=%d: median tok/s off %.2f on %.2f: %+.2f%%; median of %d pair ratios %+.2f%% "
            "(%+.2f .. %+.2f)" % (K, off, on, 100 * (on / off - 1), len(res),
                                  100 * (statistics.median(ratios) - 1), 100 * (ratios[0] - 1),
                                  100 * (ratios[-1] - 1)))
        f.write("# K=%d median tok/s off %.3f on %.3f change %+.3f%%; median pair ratio %+.3f%% "
                "(min %+.3f%%, max %+.3f%%, %d pairs)\n" % (
                    K, off, on, 100 * (on / off - 1), 100 * (statistics.median(ratios) - 1),
                    100 * (ratios[0] - 1), 100 * (ratios[-1] - 1), len(res)))


def cost_per_forward(b, f, sp):
    """The helper's cost per forward: a module that does nothing, called as generate calls
    the target (a real, filled DynamicCache), with and without annotate."""
    torch = b.torch
    # per forward: a module that does nothing, called as generate calls the target (a real,
    # filled DynamicCache), with and without annotate
    out = b.target.generate(input_ids=b.prompt, attention_mask=b.mask, max_new_tokens=8, do_sample=False,
                            return_dict_in_generate=True)
    cache = out.past_key_values

    class Nothing(torch.nn.Module):
        def forward(self, input_ids=None, attention_mask=None, past_key_values=None, **kw):
            return None
    m = Nothing()
    kw = dict(input_ids=b.prompt[:, -1:], attention_mask=torch.ones(1, b.args.prompt_len + 9, device=b.dev),
              past_key_values=cache, use_cache=True, cache_position=torch.arange(1, device=b.dev))
    n = 20000

    def per_call():
        t0 = time.perf_counter()
        for _ in range(n):
            m(**kw)
        return (time.perf_counter() - t0) / n
    per_call()
    offs, ons = [], []
    for _ in range(5):
        offs.append(per_call())
        x = sp.annotate(m, "target")
        ons.append(per_call())
        x.remove()
    us = (statistics.median(ons) - statistics.median(offs)) * 1e6
    log("# cost per forward: %.3f us (module call %.3f -> %.3f us; cache length %d)" % (
        us, statistics.median(offs) * 1e6, statistics.median(ons) * 1e6, cache.get_seq_length()))
    f.write("# per forward: helper %.3f us (a do-nothing module called like the target: %.3f us without, "
            "%.3f us with annotate; median of 5 alternating sets of %d calls)\n" % (
                us, statistics.median(offs) * 1e6, statistics.median(ons) * 1e6, n))
    return us


def main():
    args = parse_args()
    if args.mode == "grid":
        levels = [float(x) for x in args.levels.split(",")]
        ks = [int(x) for x in args.ks.split(",")]
    else:
        levels, ks = [args.level], [0, args.k]
    t_start = time.perf_counter()
    b = Bench(args, levels)
    configs = [(K, a) for a in levels for K in ks]
    follow, stats, equal = warm_and_check(b, configs)
    with open(args.csv, "w") as f:
        header(f, b, follow, equal)
        if args.mode == "capture":
            if os.environ.get("SPECPROF_DIR"):
                os.kill(os.getppid(), signal.SIGUSR1)     # specprof forwards it: the window opens
                time.sleep(0.5)
            for r in range(args.repeats):              # plain decode too: the fit's baseline
                for K in (0, args.k):
                    out, dt = b.generate(K, args.level)
                    new = out.shape[1] - args.prompt_len
                    f.write(row(K, args.level, stats[(K, args.level)], new / dt, r, new, dt) + "\n")
                    log("# capture K=%d a=%.2f repeat %d: %.2f tok/s" % (K, args.level, r, new / dt))
            if os.environ.get("SPECPROF_DIR"):
                os.kill(os.getppid(), signal.SIGUSR2)
                time.sleep(1.5)                            # the library closes the file
            return 0
        cf = open(args.cost_csv, "w") if args.cost_csv else None
        sp = cost_open(b, cf) if cf else None
        if cf:
            cost_runs(b, open(os.devnull, "w"), sp, levels[0], -1, 0)   # warm-up of the hooks
        cres = []
        rounds, per_round = 0, None
        while rounds < args.max_repeats:
            if rounds >= args.repeats and args.budget_s and \
                    time.perf_counter() - t_start + (per_round or 0) > args.budget_s:
                break
            t0 = time.perf_counter()
            order = configs if rounds % 2 == 0 else configs[::-1]   # alternate the order
            if cf and rounds % 2 == 1:
                cres.append(cost_runs(b, cf, sp, levels[0], rounds, 1))
            for K, a in order:
                out, dt = b.generate(K, a)
                new = out.shape[1] - args.prompt_len
                f.write(row(K, a, stats[(K, a)], new / dt, rounds, new, dt, b.last_cpu_s) + "\n")
            if cf and rounds % 2 == 0:
                cres.append(cost_runs(b, cf, sp, levels[0], rounds, 0))
            f.flush()
            rounds += 1
            per_round = time.perf_counter() - t0
            log("# round %d done in %.1f s (%.0f s since start)" % (rounds, per_round,
                                                                   time.perf_counter() - t_start))
    if cf:
        cost_summary(cf, cres)
        cost_per_forward(b, cf, sp)
        cf.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
