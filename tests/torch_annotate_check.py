"""torch_annotate_check.py: drives profiler/python/specprof_torch for tests/test_torch_annotate.c.

  python3 tests/torch_annotate_check.py builder   range names for fixed shapes (torch blocked)
  python3 tests/torch_annotate_check.py spec      parse_spec on good and bad specs
  python3 tests/torch_annotate_check.py model     a tiny CPU model, hooks recorded (needs torch)
  python3 tests/torch_annotate_check.py autoload  models built under SPECPROF_TORCH_ANNOTATE
  python3 tests/torch_annotate_check.py cost [N]  the hooks' cost per forward, microseconds
Prints one result per line; the C test compares them with what it expects. `model` and
`autoload` print "skip: ..." when torch cannot be imported.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "profiler", "python"))


def builder():
    sys.modules["torch"] = None          # any import of torch now fails: the builder needs none
    from specprof_torch import ranges
    for role, rows, q, past in [("target", 1, 1, 517), ("target", 1, 5, 517), ("target", 1, 64, 0),
                                ("target", 4, 1, 100), ("draft", 1, 2, 130), ("draft", 1, 64, 0),
                                ("draft", 2, 1, 7), ("extend", 3, 4, 10)]:
        print("range %s %d %d %d: %s" % (role, rows, q, past, ranges.forward_range(role, rows, q, past)))
    print("torch imported: %s" % ("torch" in sys.modules and sys.modules["torch"] is not None))


def spec():
    sys.modules["torch"] = None
    from specprof_torch.ranges import SpecError, parse_spec
    for s in ["LlamaForCausalLM#1=target,LlamaForCausalLM#2=draft", "Tiny=draft",
              " transformers.models.llama.modeling_llama.LlamaForCausalLM = target ",
              "*ForCausalLM#2=draft", "", "Tiny", "Tiny=Draft", "Tiny#0=target", "Tiny#x=target",
              "=target", "Tiny=target,,", "A b=target"]:
        try:
            print("spec [%s]: %s" % (s, parse_spec(s)))
        except SpecError as e:
            print("spec [%s]: error: %s" % (s, e))


def _torch():
    try:
        import torch  # noqa: F401
        return torch
    except Exception as e:  # noqa: BLE001
        print("skip: no torch (%s)" % e)
        return None


class _Recorder:
    def __init__(self):
        self.names = []
        self.depth = 0

    def push(self, name):
        self.names.append(name)
        self.depth += 1

    def pop(self):
        self.depth -= 1


def _tiny_classes(torch):
    class FakeCache:                     # transformers' DynamicCache: get_seq_length() -> int
        def __init__(self, n):
            self.n = n

        def get_seq_length(self, layer_idx=0):
            return self.n

    class TensorCache:                   # a static cache: the length is a tensor (not read)
        def get_seq_length(self, layer_idx=0):
            return torch.tensor(3)

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(50, 8)

        def forward(self, input_ids=None, attention_mask=None, past_key_values=None,
                    inputs_embeds=None, fail=False, **kwargs):
            if fail:
                raise RuntimeError("forward failed")
            if not torch.is_tensor(input_ids) and inputs_embeds is None:
                return None
            x = self.emb(input_ids) if inputs_embeds is None else inputs_embeds
            return x.sum()

    class Outer(torch.nn.Module):        # an annotated module inside another one
        def __init__(self):
            super().__init__()
            self.inner = Tiny()

        def forward(self, input_ids, past_key_values=None):
            return self.inner(input_ids=input_ids, past_key_values=past_key_values)

    return FakeCache, TensorCache, Tiny, Outer


def model():
    torch = _torch()
    if torch is None:
        return
    import specprof_torch as sp
    rec = _Recorder()
    sp.set_sink(rec.push, rec.pop)
    FakeCache, TensorCache, Tiny, Outer = _tiny_classes(torch)
    t, d = Tiny(), Tiny()
    at = sp.annotate(t, "target")
    ad = sp.annotate(d, "draft")
    ids = lambda r, q: torch.zeros((r, q), dtype=torch.long)  # noqa: E731
    t(input_ids=ids(1, 16), past_key_values=FakeCache(0))             # prefill
    t(input_ids=ids(1, 1), past_key_values=FakeCache(16))             # decode
    t(input_ids=ids(1, 5), past_key_values=FakeCache(17))             # verify
    t(ids(2, 3), None, ((torch.zeros(2, 4, 9, 8), torch.zeros(2, 4, 9, 8)),))  # positional, legacy
    t(input_ids=ids(1, 4), attention_mask=torch.ones(1, 30))          # mask only
    t(input_ids=ids(1, 2), attention_mask=torch.ones(1, 12), past_key_values=TensorCache())
    t(inputs_embeds=torch.zeros(3, 1, 8), past_key_values=FakeCache(40))
    d(input_ids=ids(1, 16), past_key_values=FakeCache(0))
    d(input_ids=ids(1, 2), past_key_values=FakeCache(17))
    d(input_ids=ids(1, 1), past_key_values=FakeCache(19))
    t()                                                               # no token input: no range
    o = Outer()
    sp.annotate(o, "verify")
    sp.annotate(o.inner, "draft")
    o(ids(1, 3), FakeCache(5))                                        # only the outer range
    try:
        t(input_ids=ids(1, 1), past_key_values=FakeCache(19), fail=True)  # forward raises
    except RuntimeError:
        pass
    t(input_ids="not a tensor", past_key_values=FakeCache(1))         # unreadable: no range
    t(input_ids=ids(1, 1), past_key_values=FakeCache(20))             # balanced after the raise
    at.remove()
    t(input_ids=ids(1, 1), past_key_values=FakeCache(21))             # removed: no range
    for n in rec.names:
        print("pushed: %s" % n)
    print("depth after: %d" % rec.depth)
    print("counts target: %s" % sorted(at.counts.items()))
    print("counts draft: %s" % sorted(ad.counts.items()))
    try:
        sp.annotate(t, "Verify")
    except ValueError as e:
        print("annotate error: %s" % e)


def autoload():
    torch = _torch()
    if torch is None:
        return
    import specprof_torch as sp
    from specprof_torch import autoload as al
    if al._state is None:
        print("skip: the autoload hook is not installed (SPECPROF_TORCH_ANNOTATE, PYTHONPATH)")
        return
    rec = _Recorder()
    sp.set_sink(rec.push, rec.pop)
    FakeCache, _, Tiny, _ = _tiny_classes(torch)
    a, b, c = Tiny(), Tiny(), Tiny()       # #1 target, #2 draft, #3 not named
    for m, q in ((a, 5), (b, 2), (c, 3)):
        m(input_ids=torch.zeros((1, q), dtype=torch.long), past_key_values=FakeCache(9))
    for n in rec.names:
        print("pushed: %s" % n)
    print("annotated: %s" % [(label, x.role) for label, x in al._state.annotations])


def cost(n=20000):
    """Seconds per forward of a module that does nothing, called like Hugging Face calls a
    model (input_ids, attention_mask, past_key_values), with and without annotate: the
    difference is the helper's whole cost per forward (torch's hook path included)."""
    torch = _torch()
    if torch is None:
        return
    import specprof_torch as sp
    FakeCache, _, _, _ = _tiny_classes(torch)
    try:
        from transformers import DynamicCache
        cache = DynamicCache()
        kind = "transformers.DynamicCache (empty)"
    except Exception:  # noqa: BLE001
        cache, kind = FakeCache(100), "a get_seq_length() stand-in"

    class Nothing(torch.nn.Module):
        def forward(self, input_ids=None, attention_mask=None, past_key_values=None, **kw):
            return None

    m = Nothing()
    kw = dict(input_ids=torch.zeros((1, 1), dtype=torch.long), attention_mask=torch.ones(1, 101),
              past_key_values=cache, use_cache=True)

    def per_call():
        t0 = time.perf_counter()
        for _ in range(n):
            m(**kw)
        return (time.perf_counter() - t0) / n

    per_call()
    res = {"off": [], "on": []}
    for _ in range(5):
        res["off"].append(per_call())
        a = sp.annotate(m, "target")
        res["on"].append(per_call())
        a.remove()
    off, on = sorted(res["off"])[2], sorted(res["on"])[2]
    print("cost cache: %s; sink: %s" % (kind, "torch.cuda.nvtx" if sp._sink and sp._sink[0] is not sp._nothing
                                          else "none (no working NVTX)"))
    print("cost per forward us: off %.3f on %.3f helper %.3f" % (off * 1e6, on * 1e6, (on - off) * 1e6))


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "builder"
    if mode == "cost":
        cost(int(sys.argv[2]) if len(sys.argv) > 2 else 20000)
    else:
        {"builder": builder, "spec": spec, "model": model, "autoload": autoload}[mode]()
