"""specprof_torch: NVTX ranges in specprof's phase format around PyTorch model forwards.

Two lines name the forwards of a speculative-decoding loop so that `specsim fit` can read
a specprof trace of it (traces/FORMAT.md "Phases"; docs/pytorch.md):

    import specprof_torch
    specprof_torch.annotate(model, "target")          # prefill, decode or verify by shape
    specprof_torch.annotate(assistant_model, "draft") # draft (draft_prefill on an empty cache)

Each forward of an annotated module runs inside one range such as
`verify tokens=5 bs=1 rows=1 ctx=517 graph=0` (ranges.py says what each word is). No
change to the model: forward pre/post hooks (torch >= 2.1; older torch: a wrapper around
the instance's forward). A forward that runs inside another annotated forward opens no
range of its own (phases do not nest). Assumed workload: eager Hugging Face-style
decoders, one forward per call, on the thread that calls them; the hooks read shapes only
(no GPU synchronisation). Dependencies: torch, and only when annotate() is called.
"""
import functools
import inspect
import sys
import threading

from .ranges import (ROLE_DRAFT, ROLE_TARGET, SpecError, forward_range, parse_spec,  # noqa: F401
                     phase_for, range_name)

__all__ = ["annotate", "Annotation", "set_sink", "range_name", "forward_range", "phase_for",
           "parse_spec", "SpecError", "ROLE_TARGET", "ROLE_DRAFT"]

_sink = None          # (push, pop): torch.cuda.nvtx's, a test's recorder, or no-ops
_tls = threading.local()


def set_sink(push, pop):
    """Replace where range names go (tests record them; default torch.cuda.nvtx)."""
    global _sink
    _sink = (push, pop)


def _nothing(*_):
    return None


def _resolve_sink():
    global _sink
    if _sink is not None:
        return _sink
    try:
        import torch.cuda.nvtx as nvtx
        nvtx.mark("specprof_torch")      # a CPU-only torch has a stub that raises here
        _sink = (nvtx.range_push, nvtx.range_pop)
    except Exception as e:  # noqa: BLE001 -- any failure: count, do not emit
        sys.stderr.write("specprof_torch: torch.cuda.nvtx does not work here (%s); ranges are "
                         "counted but not emitted\n" % e)
        _sink = (_nothing, _nothing)
    return _sink


class _Thread:
    """Per thread: which pre-hooks pushed a range (popped by the matching post-hook)."""
    __slots__ = ("pushed", "open")

    def __init__(self):
        self.pushed = []
        self.open = 0


def _thread():
    t = getattr(_tls, "t", None)
    if t is None:
        t = _tls.t = _Thread()
    return t


def _hooks_api():
    """(with_kwargs, always_call) support of this torch's module hooks."""
    import torch.nn as nn
    pre = inspect.signature(nn.Module.register_forward_pre_hook).parameters
    post = inspect.signature(nn.Module.register_forward_hook).parameters
    return "with_kwargs" in pre and "with_kwargs" in post and "always_call" in post


def _param_index(fn, name):
    """Position of parameter `name` among fn's positional parameters (self excluded), -1."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return -1
    pos = [p.name for p in params
           if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]
    return pos.index(name) if name in pos else -1


class Annotation:
    """The ranges of one annotated module. counts: range word -> forwards seen (prefill,
    decode, verify, draft, ...). remove() takes the hooks off again."""

    def __init__(self, module, role):
        self.module = module
        self.role = role
        self.counts = {}
        fwd = type(module).forward
        self._i_ids = _param_index(fwd, "input_ids")
        self._i_emb = _param_index(fwd, "inputs_embeds")
        self._i_pkv = _param_index(fwd, "past_key_values")
        self._i_mask = _param_index(fwd, "attention_mask")
        self._handles = []
        self._wrapped = None

    @staticmethod
    def _arg(args, kwargs, name, i):
        v = kwargs.get(name)
        if v is None and 0 <= i < len(args):
            v = args[i]
        return v

    def name_for(self, args, kwargs):
        """The range name for a call with these arguments, or None (no token input)."""
        x = self._arg(args, kwargs, "input_ids", self._i_ids)
        if x is None:
            x = self._arg(args, kwargs, "inputs_embeds", self._i_emb)
            if x is None:
                return None
            shape = x.shape
            rows, q = (shape[0], shape[1]) if len(shape) == 3 else (1, shape[0])
        else:
            shape = x.shape
            rows, q = (shape[0], shape[1]) if len(shape) == 2 else (1, shape[0])
        past = 0
        pkv = self._arg(args, kwargs, "past_key_values", self._i_pkv)
        if pkv is not None:
            get = getattr(pkv, "get_seq_length", None)
            if get is not None:
                past = get()
                if type(past) is not int:      # a tensor (static caches): reading it syncs
                    past = -1
            else:                               # legacy: per layer (key [b, heads, s, d], value)
                try:
                    past = pkv[0][0].shape[-2]
                except (IndexError, TypeError, AttributeError):
                    past = -1
        if pkv is None or past < 0:             # no readable cache: the 2-D attention mask
            past = 0
            m = self._arg(args, kwargs, "attention_mask", self._i_mask)
            if m is not None and len(m.shape) == 2:
                past = max(m.shape[-1] - q, 0)
        word = phase_for(self.role, q, past)
        self.counts[word] = self.counts.get(word, 0) + 1
        return range_name(word, rows * q, rows, rows * past)

    def _pre(self, module, args, kwargs):
        t = _thread()
        try:
            name = None if t.open else self.name_for(args, kwargs)
        except Exception:  # noqa: BLE001 -- an input it cannot read: no range, never a failure
            name = None
        if name is None:
            t.pushed.append(False)
            return None
        _resolve_sink()[0](name)
        t.pushed.append(True)
        t.open += 1
        return None

    def _post(self, module, args, kwargs, output):
        t = _thread()
        if t.pushed and t.pushed.pop():
            t.open -= 1
            _sink[1]()
        return None

    def _attach(self):
        m = self.module
        if _hooks_api():
            self._handles = [
                m.register_forward_pre_hook(self._pre, with_kwargs=True),
                m.register_forward_hook(self._post, with_kwargs=True, always_call=True),
            ]
            return
        orig = m.forward                   # torch < 2.1: no kwargs in hooks, or no always_call
        pre, post = self._pre, self._post

        @functools.wraps(orig)
        def forward(*args, **kwargs):
            pre(m, args, kwargs)
            try:
                return orig(*args, **kwargs)
            finally:
                post(m, args, kwargs, None)
        m.forward = forward
        self._wrapped = forward

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._wrapped is not None and self.module.__dict__.get("forward") is self._wrapped:
            del self.module.forward
        self._wrapped = None

    def __repr__(self):
        return "Annotation(%s as %s, ranges %s)" % (type(self.module).__name__, self.role, self.counts)


def annotate(module, phase):
    """Open one NVTX range per forward of `module`. phase: "target" (prefill on an empty
    cache, decode for 1 token per row, verify for more), "draft" (draft_prefill on an
    empty cache, else draft), or any lower-case phase word, emitted as it is. Returns the
    Annotation (counts, remove())."""
    if not phase or not all(c.islower() or c == "_" for c in phase):
        raise ValueError("specprof_torch.annotate: phase \"%s\": expected target, draft or a "
                         "lower-case phase word" % phase)
    a = Annotation(module, phase)
    a._attach()
    return a
