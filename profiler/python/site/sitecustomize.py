"""sitecustomize.py: specprof's --torch-annotate hook (profiler/python/specprof_torch/autoload.py).

`specprof --torch-annotate SPEC` puts this directory and profiler/python first on PYTHONPATH
and sets SPECPROF_TORCH_ANNOTATE=SPEC; Python's site module imports this file at start-up.
It installs the annotation hook when the variable is set, then runs the sitecustomize that
this one shadows (e.g. Debian's), if there is one, so that nothing else changes.
"""
import os
import sys


def _specprof_torch_install():
    spec = os.environ.get("SPECPROF_TORCH_ANNOTATE")
    if not spec:
        return
    try:
        from specprof_torch import autoload
        autoload.install(spec, log=os.environ.get("SPECPROF_QUIET") != "1")
    except Exception as e:  # noqa: BLE001 -- never stop the user's program here
        sys.stderr.write("specprof_torch: --torch-annotate %s: not installed: %s\n" % (spec, e))


def _specprof_chain():
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.machinery
    import importlib.util
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 -- as site.py does: report and go on
        sys.stderr.write("Error in sitecustomize (%s); set PYTHONVERBOSE for traceback:\n%s: %s\n"
                         % (spec.origin, type(e).__name__, e))


_specprof_torch_install()
_specprof_chain()
