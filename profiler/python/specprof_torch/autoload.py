"""autoload.py: annotate modules by class name as they are built, with no change to the program.

`specprof --torch-annotate SPEC -- python3 prog.py` (or SPECPROF_TORCH_ANNOTATE=SPEC with
profiler/python/site on PYTHONPATH) runs install(SPEC) from sitecustomize before the program
starts. When torch.nn's Module is first imported, its __init__ is wrapped: each new module
whose class matches an item of SPEC (ranges.parse_spec) is annotated as that item's role
once Module.__init__ has set up its hook tables. Counting is per item, in construction order
(a model's __init__ enters Module.__init__ before its submodules), so Hugging Face
generate(..., assistant_model=draft) with two models of one class is named by the order the
program builds them: LlamaForCausalLM#1=target,LlamaForCausalLM#2=draft. Cost: one name
test per module construction; nothing per forward for modules that do not match.
"""
import atexit
import fnmatch
import importlib.abc
import sys

from .ranges import parse_spec

_WATCH = "torch.nn.modules.module"


class _State:
    def __init__(self, items, log):
        self.items = items                   # [(pattern, nth, role)]
        self.seen = [0] * len(items)         # modules matched so far, per item
        self.annotations = []                # [(label, Annotation)]
        self.log = log


_state = None


def _matches(pat, cls):
    qual = "%s.%s" % (cls.__module__, cls.__qualname__)
    if any(c in pat for c in "*?["):
        return fnmatch.fnmatchcase(cls.__name__, pat) or fnmatch.fnmatchcase(qual, pat)
    return pat == cls.__name__ or pat == qual


def on_module_init(module):
    """Annotates module if an item of the installed spec picks it (called after
    Module.__init__). Each item counts the modules its pattern matches, in construction
    order; the first item that matches and names this instance (or every instance) decides."""
    st = _state
    cls = type(module)
    hits = [i for i, (pat, _, _) in enumerate(st.items) if _matches(pat, cls)]
    for i in hits:                       # every item counts the modules its pattern matches
        st.seen[i] += 1
    for i in hits:
        pat, nth, role = st.items[i]
        if nth and st.seen[i] != nth:
            continue
        from . import annotate
        a = annotate(module, role)
        label = "%s #%d" % (cls.__name__, st.seen[i])
        st.annotations.append((label, a))
        if st.log:
            sys.stderr.write("specprof_torch: annotating %s as %s (item %s%s=%s)\n"
                             % (label, role, pat, "#%d" % nth if nth else "", role))
        return a
    return None


def patch_module_class(Module):
    """Wraps Module.__init__ (once) so that every module built from now on is offered to
    on_module_init."""
    if getattr(Module.__init__, "_specprof_torch", False):
        return
    orig = Module.__init__

    def __init__(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        if _state is not None and "_forward_pre_hooks" in self.__dict__:
            on_module_init(self)
    __init__._specprof_torch = True
    __init__.__wrapped__ = orig
    __init__.__doc__ = orig.__doc__
    Module.__init__ = __init__


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        patch_module_class(module.Module)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds torch.nn.modules.module through the other finders and patches it once loaded."""

    def find_spec(self, name, path, target=None):
        if name != _WATCH:
            return None
        for f in sys.meta_path:
            if f is self or not hasattr(f, "find_spec"):
                continue
            spec = f.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader)
                sys.meta_path.remove(self)
                return spec
        return None


def _summary():
    for label, a in _state.annotations:
        sys.stderr.write("specprof_torch: %s as %s: %s\n" % (
            label, a.role, ", ".join("%s %d" % kv for kv in sorted(a.counts.items())) or "no forwards"))


def install(spec, log=True):
    """Parse spec (raises ranges.SpecError) and arrange for matching modules to be
    annotated when built. At exit, prints each annotated module's range counts."""
    global _state
    _state = _State(parse_spec(spec), log)
    mod = sys.modules.get(_WATCH)
    if mod is not None:
        patch_module_class(mod.Module)
    else:
        sys.meta_path.insert(0, _Finder())
    if log:
        atexit.register(_summary)
    return _state
