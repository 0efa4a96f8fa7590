"""python3 -m specprof_torch SPEC PROGRAM.py [ARGS...]   (or: SPEC -m MODULE [ARGS...])

Runs a Python program with the modules that SPEC names annotated as they are built (the
same as `specprof --torch-annotate SPEC`, for use inside another launcher: specprof -o DIR
-- python3 -m specprof_torch SPEC prog.py). SPEC: PATTERN=ROLE[,PATTERN=ROLE...], see
ranges.parse_spec; needs profiler/python on PYTHONPATH.
"""
import os
import runpy
import sys

from . import autoload
from .ranges import SpecError


def main(argv):
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        sys.stderr.write(__doc__)
        return 2
    try:
        autoload.install(argv[0])
    except SpecError as e:
        sys.stderr.write("%s\n" % e)
        return 2
    if argv[1] == "-m":
        if len(argv) < 3:
            sys.stderr.write(__doc__)
            return 2
        sys.argv = argv[2:]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv[1:]
        sys.path[0] = os.path.dirname(os.path.abspath(argv[1]))
        runpy.run_path(argv[1], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
