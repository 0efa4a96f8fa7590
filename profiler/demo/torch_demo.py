#!/usr/bin/env python3
"""torch_demo.py: a small PyTorch program for checking specprof on a GPU.

Two torch.cuda.CUDAGraph graphs ("draft": a small MLP step, "verify": a 4-layer bf16 MLP
with an all-reduce per layer when torch.distributed with a 1-rank NCCL group works),
replayed under torch.cuda.nvtx ranges named like a speculative-decoding iteration, with
an eager "accept" step (argmax + an eager all-reduce). It prints what it launched as a
DEMO_EXPECT JSON line: the kernel nodes of each graph (read from the cudaGraph_t with
cudaGraphGetNodes/cudaGraphNodeGetType through ctypes) and the replay counts, so that
the trace's per-graph kernel counts can be checked exactly. Eager kernels are torch's
choice and are not counted here.

  python3 torch_demo.py [--iters N] [--no-dist] [--profiler] [--long-secs S]
--profiler runs the loop under torch.profiler (a second CUPTI client: see docs/specprof.md).
"""
import argparse
import ctypes
import json
import os
import sys
import tempfile
import time


def loaded_libs(word):
    """Paths of mapped shared objects whose name contains word (one entry per file)."""
    seen = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and word in os.path.basename(parts[5]) and parts[5] not in seen:
                    seen.append(parts[5])
    except OSError:
        pass
    return seen


def cudart():
    for p in loaded_libs("libcudart.so"):
        try:
            return ctypes.CDLL(p)
        except OSError:
            continue
    return None


def graph_node_counts(raw_graph):
    """(kernel nodes, all nodes, {type: count}) of a cudaGraph_t, or None."""
    rt = cudart()
    if rt is None or not raw_graph:
        return None
    g = ctypes.c_void_p(raw_graph)
    n = ctypes.c_size_t(0)
    if rt.cudaGraphGetNodes(g, None, ctypes.byref(n)) != 0:
        return None
    nodes = (ctypes.c_void_p * n.value)()
    if rt.cudaGraphGetNodes(g, nodes, ctypes.byref(n)) != 0:
        return None
    types = {}
    for i in range(n.value):
        t = ctypes.c_int(-1)
        rt.cudaGraphNodeGetType(ctypes.c_void_p(nodes[i]), ctypes.byref(t))
        types[t.value] = types.get(t.value, 0) + 1
    return types.get(0, 0), n.value, types   # cudaGraphNodeTypeKernel = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--long-secs", type=float, default=0)
    ap.add_argument("--no-dist", action="store_true")
    ap.add_argument("--profiler", action="store_true")
    args = ap.parse_args()

    import torch
    nvtx = torch.cuda.nvtx
    ranges = 0
    nvtx.range_push("setup")               # before CUDA is initialised: NVTX loads first
    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    try:
        v = torch.cuda.nccl.version()
        nccl_ver = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception as e:
        nccl_ver = "unknown (%s)" % e
    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": nccl_ver,
            "cupti_loaded": loaded_libs("libcupti"), "nccl_loaded": loaded_libs("libnccl"),
            "ld_preload": os.environ.get("LD_PRELOAD", "")}
    print("torch_demo: " + json.dumps(info), flush=True)

    dist = None
    dist_err = ""
    if not args.no_dist:
        try:
            import torch.distributed as d
            store = tempfile.mktemp(prefix="torch_demo_store_")
            d.init_process_group("nccl", init_method="file://" + store, rank=0, world_size=1, device_id=dev)
            dist = d
        except Exception as e:   # report and run on without all-reduces
            dist_err = "%s: %s" % (type(e).__name__, e)
            print("torch_demo: torch.distributed NCCL unavailable: " + dist_err, flush=True)

    hidden, bs, layers = 1024, 8, 4
    torch.manual_seed(0)
    ws = [torch.randn(hidden, hidden, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(layers)]
    wd = torch.randn(hidden, hidden, device=dev, dtype=torch.bfloat16) * 0.02
    x_verify = torch.randn(bs * 3, hidden, device=dev, dtype=torch.bfloat16)
    x_draft = torch.randn(bs, hidden, device=dev, dtype=torch.bfloat16)
    ar_eager = torch.zeros(64, device=dev, dtype=torch.float32)

    def verify_fwd(x, with_ar):
        h = x
        for w in ws:
            h = torch.relu(h @ w)
            if with_ar:
                dist.all_reduce(h)
        return h

    def draft_fwd(x):
        return torch.tanh(x @ wd)

    # warm up on a side stream (torch's rule before capture; also creates the NCCL comm)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            verify_fwd(x_verify, dist is not None)
            draft_fwd(x_draft)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    nvtx.range_pop()
    ranges += 1

    def capture(fn, *a):
        try:
            g = torch.cuda.CUDAGraph(keep_graph=True)
            keep = True
        except TypeError:
            g = torch.cuda.CUDAGraph()
            keep = False
        with torch.cuda.graph(g):
            out = fn(*a)
        counts = None
        if keep:
            try:
                counts = graph_node_counts(int(g.raw_cuda_graph()))
            except Exception as e:
                print("torch_demo: raw_cuda_graph: %s" % e, flush=True)
            g.instantiate()
        return g, out, counts

    nvtx.range_push("capture")
    ar_in_graph = dist is not None
    graph_err = ""
    try:
        g_verify, out_verify, c_verify = capture(verify_fwd, x_verify, ar_in_graph)
    except Exception as e:   # all-reduce inside capture refused: capture without it
        graph_err = "%s: %s" % (type(e).__name__, e)
        print("torch_demo: capture with all-reduce failed (%s); capturing without" % graph_err, flush=True)
        torch.cuda.synchronize()
        ar_in_graph = False
        g_verify, out_verify, c_verify = capture(verify_fwd, x_verify, False)
    g_draft, out_draft, c_draft = capture(draft_fwd, x_draft)
    nvtx.range_pop()
    ranges += 1
    torch.cuda.synchronize()

    prof = None
    if args.profiler:
        from torch.profiler import profile, ProfilerActivity
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()

    it = 0
    t0 = time.time()
    draft_replays = verify_replays = 0
    while True:
        if args.long_secs > 0:
            if time.time() - t0 >= args.long_secs:
                break
        elif it >= args.iters:
            break
        nvtx.range_push("draft steps=3 bs=%d tokens=%d graph=1" % (bs, bs))
        g_draft.replay()
        g_draft.replay()
        draft_replays += 2
        nvtx.range_pop()
        nvtx.range_push("verify bs=%d tokens=%d rows=%d graph=1" % (bs, bs * 3, bs))
        g_verify.replay()
        verify_replays += 1
        nvtx.range_pop()
        nvtx.range_push("accept bs=%d" % bs)
        tok = out_verify.float().argmax(dim=-1)
        ar_eager[:1].copy_(tok[:1].float())
        if dist is not None:
            dist.all_reduce(ar_eager)
        torch.cuda.synchronize()
        nvtx.range_pop()
        ranges += 3
        it += 1
    torch.cuda.synchronize()

    prof_kernels = None
    if prof is not None:
        prof.__exit__(None, None, None)
        try:
            from torch.autograd import DeviceType
            prof_kernels = sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)
        except Exception as e:
            prof_kernels = "error: %s" % e

    expect = {
        "iters": it, "draft_replays": draft_replays, "verify_replays": verify_replays,
        "verify_kernel_nodes": c_verify[0] if c_verify else None,
        "verify_nodes": c_verify[1] if c_verify else None,
        "verify_node_types": c_verify[2] if c_verify else None,
        "draft_kernel_nodes": c_draft[0] if c_draft else None,
        "draft_nodes": c_draft[1] if c_draft else None,
        "graph_kernels": (c_verify[0] * verify_replays + c_draft[0] * draft_replays) if c_verify and c_draft else None,
        "nvtx_ranges": ranges, "dist": dist is not None, "dist_error": dist_err,
        "allreduce_in_graph": ar_in_graph, "graph_error": graph_err,
        "nccl_calls_captured": layers if ar_in_graph else 0,
        "nccl_calls_eager": (it + 3 * layers) if dist is not None else 0,
        "profiler_cuda_events": prof_kernels,
    }
    print("DEMO_EXPECT " + json.dumps(expect), flush=True)
    if dist is not None:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
