#!/bin/bash
# pyfunc_cost.sh: what a torch.profiler trace taken with_stack=True (SGLang's default) costs
# per python_function event, the number models/timport.c needs to take Kineto's own cost out
# of such a trace's host times (docs/importers.md). torchbench's dense preset at a few
# calibration points, each first unprofiled ('none') and then --profile-steps iterations
# under torch.profiler ('kineto'), in two processes: without stacks and with them. Per point:
# the stack's extra time per iteration, (kineto - none) with stacks less (kineto - none)
# without, over the python_function events a profiled iteration recorded.
# Results: $OUT/pyfunc_cost.txt, $OUT/pyfunc_measured.csv.
# usage (GPU machine, repo root): OUT=/dir bash profiler/device/pyfunc_cost.sh
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/pyfunc_cost}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/pyfunc.XXXXXX)
TB="python3 profiler/bench/torchbench.py"
ARGS="--preset torch-dense --mode spec,baseline --steps 2 --alpha 0.7 --concurrency ${CONC:-1,4,15}
  --prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64 --warmup 2 --seconds 0.1
  --min-iters 6 --spans sglang --profile-steps ${KSTEPS:-6} --discard-first"
for how in nostack stack; do
  extra=""; [ $how = stack ] && extra="--profile-stack"
  timeout 150 $TB $ARGS --torch-profile "$W/$how" $extra --csv "$W/$how.csv" > "$W/$how.log" 2>&1
  echo "rc $how $?"; tail -3 "$W/$how.log"
done
python3 - "$W" > "$OUT/pyfunc_cost.txt" <<'PY'
import csv, glob, gzip, json, os, sys
W = sys.argv[1]
def rows(how):
    m = {}
    for r in csv.DictReader(open(os.path.join(W, how + ".csv"))):
        key = (r["mode"], r["steps"] if r["mode"] == "spec" else "0", r["concurrency"])
        m.setdefault(key, {})[r["profiler"]] = float(r["iter_us"])
    return m
def events(how, mode, steps, conc):
    tag = "torch-dense-spec-s%s-bs%s" % (steps, conc) if mode == "spec" else "torch-dense-baseline-bs%s" % conc
    f = glob.glob(os.path.join(W, how, tag, "*.trace.json.gz"))
    if not f: return None
    ev = json.load(gzip.open(f[0], "rt"))["traceEvents"]
    want = "verify" if mode == "spec" else "step[DECODE"
    it = sum(1 for e in ev if e.get("cat") == "user_annotation" and e.get("name", "").split(" ")[0] == want)
    pf = sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") == "python_function")
    host = sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver", "user_annotation"))
    return it, pf, host, os.path.getsize(f[0])
n, s = rows("nostack"), rows("stack")
print("# torch.profiler with_stack=True against without, torchbench torch-dense (pyfunc_cost.sh)")
print("# %-22s %9s %9s %9s %9s %7s %7s %9s %10s" % ("point", "none_ns", "kin_ns", "none_st", "kin_st",
      "host/it", "pyf/it", "us/pyfunc", "gz_bytes"))
for key in sorted(s):
    if key not in n or "kineto" not in s[key] or "kineto" not in n[key]: continue
    mode, steps, conc = key
    e = events("stack", mode, steps, conc)
    e0 = events("nostack", mode, steps, conc)
    if not e or not e[0]: continue
    it, pf, host, size = e
    extra = (s[key]["kineto"] - s[key]["none"]) - (n[key]["kineto"] - n[key]["none"])
    per = extra / (pf / it) if pf else float("nan")
    print("  %-22s %9.1f %9.1f %9.1f %9.1f %7.0f %7.0f %9.3f %10d (no stack: %d bytes)" % (
        "%s s%s bs%s" % key, n[key]["none"], n[key]["kineto"], s[key]["none"], s[key]["kineto"],
        host / it, pf / it, per, size, e0[3] if e0 else -1))
PY
cat "$W/nostack.csv" > "$OUT/pyfunc_measured.csv"; tail -n +2 "$W/stack.csv" >> "$OUT/pyfunc_measured.csv"
cat "$OUT/pyfunc_cost.txt"
rm -rf "$W"
