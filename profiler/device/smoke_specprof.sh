#!/bin/bash
# smoke_specprof.sh: everything one GPU run does to check specprof (issue 3): build
# libspecprof.so, specprof and the CUDA C demo on the machine; capture the C demo and the
# PyTorch demo and check the traces count for count against what the demos say they
# launched; the window (--delay/--duration, --signal-start/--signal-stop), SIGTERM and
# SIGKILL endings on a long-running CUDA-graph loop; a second CUPTI client (torch.profiler,
# ncu); no library; which NVTX setting records torch.cuda.nvtx. Every step runs even if one
# fails; results go to $OUT: 7 files (smoke.log, checks.txt, 4 demo traces, extra.tar.gz);
# the device machine returns 8 at most, so the caller adds none. ~3-4 minutes on one H200.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/smoke_specprof.sh
set -u
OUT=${OUT:-/tmp/specprof-smoke}
mkdir -p "$OUT"
LOG=$OUT/smoke.log
CHK=$OUT/checks.txt
W=$(mktemp -d /tmp/specprof-smoke.XXXXXX)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1   # the machines' rule
export PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date +%T), ${SECONDS}s)" | tee -a "$LOG"; }
BUDGET=${SMOKE_BUDGET_S:-250}   # skip the optional steps once this many seconds have passed
late() { [ "$SECONDS" -ge "$BUDGET" ] && { echo "=== skipped (time budget ${BUDGET}s used): $*" | tee -a "$LOG"; return 0; }; return 1; }
say() { echo "$*" | tee -a "$LOG"; }
: > "$CHK"

step "device and toolchain"
nvidia-smi -L 2>&1 | tee -a "$LOG"
nvidia-smi --query-gpu=driver_version,name --format=csv,noheader 2>&1 | tee -a "$LOG"
nvcc --version 2>&1 | tail -2 | tee -a "$LOG"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PYSITE=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)

# CUPTI: headers with cuda.h and the nvtx3 headers, and libcupti.so to link against
find_first() { for f in "$@"; do [ -e "$f" ] && { echo "$f"; return 0; }; done; return 1; }
CUPTI_H=$(find_first "$CUDA_HOME/targets/x86_64-linux/include/cupti.h" "$CUDA_HOME/include/cupti.h" \
                     "$CUDA_HOME/extras/CUPTI/include/cupti.h")
CUPTI_SO=$(find_first "$CUDA_HOME/targets/x86_64-linux/lib/libcupti.so" "$CUDA_HOME/lib64/libcupti.so" \
                      "$CUDA_HOME/extras/CUPTI/lib64/libcupti.so")
say "cupti.h: ${CUPTI_H:-none}  libcupti.so: ${CUPTI_SO:-none}"
for p in $PYSITE; do ls -d $p/nvidia/*/lib/libcupti* $p/nvidia/cu13/lib/libcupti* 2>/dev/null; done | sort -u | sed 's/^/pip cupti: /' | tee -a "$LOG"
MV=()   # make variables when CUPTI is not where profiler.mk looks
if [ -n "$CUPTI_H" ]; then
  inc=$(dirname "$CUPTI_H")
  [ "$inc" != "$CUDA_HOME/targets/x86_64-linux/include" ] && MV+=("CUDA_INC=$CUDA_HOME/targets/x86_64-linux/include -I$inc")
fi
[ -n "$CUPTI_SO" ] && MV+=("CUDA_LIBD=$(dirname "$CUPTI_SO")")
say "make variables: ${MV[*]:-(none)}"
grep -h "define CUPTI_API_VERSION" "$CUPTI_H" 2>/dev/null | tee -a "$LOG"
python3 -c 'import torch, os; print("torch", torch.__version__, "cuda", torch.version.cuda, os.path.dirname(torch.__file__))' 2>&1 | tee -a "$LOG"
TL=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))' 2>/dev/null)
[ -f "$TL" ] && readelf -d "$TL" | grep -E "NEEDED.*(cupti|nccl|cudart)|RUNPATH" | tee -a "$LOG"

step "build"
t0=$(date +%s)
make -j8 "${MV[@]}" bin/libspecprof.so 2>&1 | tee -a "$LOG"
make "${MV[@]}" bin/specprof 2>&1 | tee -a "$LOG" || true
if [ ! -x bin/specprof ]; then   # bin/specprof needs the whole libspecsim.a (GSL, cJSON) in make
  say "make bin/specprof failed (no GSL/cJSON here?): building it from profiler/ alone"
  cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iprofiler/core -Imodels -o bin/specprof profiler/specprof.c \
     profiler/core/*.c models/bounds.c models/ofile.c -lz -lpthread -ldl -lm 2>&1 | tee -a "$LOG"
fi
make "${MV[@]}" bin/specprof_demo 2>&1 | tee -a "$LOG"
say "build done in $(( $(date +%s) - t0 )) s"
ls -la bin/ 2>&1 | tee -a "$LOG"
readelf -d bin/libspecprof.so 2>/dev/null | grep -E "NEEDED|RUNPATH" | tee -a "$LOG"
ldd bin/specprof_demo 2>/dev/null | grep -E "nccl|cudart" | tee -a "$LOG"
SP=bin/specprof
DEMO=bin/specprof_demo
[ -x $SP ] && [ -f bin/libspecprof.so ] && [ -x $DEMO ] || { say "BUILD FAILED"; }

# check_trace NAME FILE EXPECT_FILE KIND: counts from the trace against DEMO_EXPECT
check_trace() {
  python3 - "$1" "$2" "$3" "$4" >> "$CHK" 2>&1 <<'PY'
import json, sys, collections
name, path, expect_path, kind = sys.argv[1:5]
exp = {}
for line in open(expect_path, errors="replace"):
    if line.startswith("DEMO_EXPECT "):
        exp = json.loads(line[len("DEMO_EXPECT "):])
evs, cut = [], False
with open(path) as f:
    for line in f:
        line = line.strip().rstrip(",")
        if line in ("[", "]", ""):
            continue
        try:
            evs.append(json.loads(line))
        except ValueError:
            cut = True
end = [e for e in evs if e.get("name") == "specprof_end"]
hdr = [e for e in evs if e.get("name") == "specprof_header"]
K = [e for e in evs if e.get("cat") == "kernel"]
M = [e for e in evs if e.get("cat") in ("memcpy", "memset")]
api = [e for e in evs if e.get("cat") == "api"]
nv = [e for e in evs if e.get("cat") == "nvtx"]
nc = [e for e in evs if e.get("cat") == "nccl"]
gi = [e for e in evs if e.get("cat") == "graph"]
A = lambda e: e.get("args", {})
rows = []
def row(what, want, got):
    ok = "" if want is None else ("ok" if want == got else "MISMATCH")
    rows.append((what, "-" if want is None else str(want), str(got), ok))
print("## %s: %s" % (name, path))
if hdr:
    h = A(hdr[0]); d = h.get("device", {})
    print("header: rank %s world %s device %s sms %s cc %s.%s mem %.1f GiB clock %s kHz l2 %s B pci %s; cupti %s driver %s runtime %s nccl %s; peers %s"
          % (h.get("rank"), h.get("world_size"), d.get("name"), d.get("sms"), d.get("cc_major"), d.get("cc_minor"),
             d.get("mem_bytes", 0) / 2**30, d.get("clock_khz"), d.get("l2_bytes"), d.get("pci_bus_id"),
             h.get("cupti_version"), h.get("cuda_driver_version"), h.get("cuda_runtime_version"), h.get("nccl_version"),
             h.get("peers")))
print("end: %s" % (json.dumps(A(end[0])) if end else "MISSING (truncated)"), "; last line cut" if cut else "")
nccl_gpu = [e for e in K + M if "nccl" in A(e)]
userK = [e for e in K if "nccl" not in A(e)]
byg = collections.Counter(A(e).get("graph_id", 0) for e in userK if A(e).get("graph_id", 0))
allbyg = collections.Counter(A(e).get("graph_id", 0) for e in K if A(e).get("graph_id", 0))
print("kernels %d (user %d, nccl-matched %d), user kernels per graph_id %s, all kernels per graph_id %s"
      % (len(K), len(userK), len([e for e in K if "nccl" in A(e)]), dict(byg), dict(allbyg)))
print("nccl-matched GPU records: %s" % dict(collections.Counter(
      (e["cat"], A(e)["nccl"]["op"], A(e)["nccl"]["dtype"], A(e)["nccl"]["bytes"], A(e)["nccl"]["captured"], bool(A(e).get("graph_id")))
      for e in nccl_gpu)))
print("nccl host events: %s" % dict(collections.Counter((A(e)["op"], A(e)["dtype"], A(e)["count"], A(e)["bytes"], A(e)["captured"], A(e)["comm_size"]) for e in nc)))
print("nvtx ranges: %s" % dict(collections.Counter((e["name"].split(" ")[0], A(e).get("domain", "")) for e in nv)))
print("phases of kernels: %s" % dict(collections.Counter(A(e).get("phase", "") for e in K)))
print("api: %s" % dict(collections.Counter(e["name"] for e in api)))
print("graph_instantiate events: %s" % [(A(e).get("graph_id"), A(e).get("graph_exec_id")) for e in gi])
print("graph launches -> graph_exec_id: %s" % dict(collections.Counter(A(e).get("graph_exec_id") for e in api if "GraphLaunch" in e["name"])))
if kind == "c" and exp:
    row("user kernels outside graphs", exp["user_kernels_eager"], len([e for e in userK if not A(e).get("graph_id")]))
    row("user kernels in graphs", exp["graph_kernels"], sum(byg.values()))
    row("per-graph kernel counts (sorted)", sorted([exp["draft_kernels"] * exp["draft_replays"], exp["verify_kernels"] * exp["verify_replays"]]), sorted(byg.values()))
    row("memsets (eager + graph node replays)", exp["memsets_eager"] + exp["memset_nodes_replayed"], len([e for e in M if e["cat"] == "memset" and "nccl" not in A(e)]))
    row("DtoH copies by the demo", exp["memcpys_user"], len([e for e in M if e["cat"] == "memcpy" and A(e).get("copy_kind") == "DtoH" and "nccl" not in A(e)]))
    row("cudaGraphLaunch API events", exp["graph_launches"], len([e for e in api if e["name"] == "cudaGraphLaunch"]))
    row("NVTX ranges (default domain)", exp["nvtx_ranges"], len([e for e in nv if not A(e).get("domain")]))
    row("kernels with phase verify (user)", exp["verify_kernels"] * exp["verify_replays"], len([e for e in userK if A(e).get("phase") == "verify"]))
    row("kernels with phase draft", exp["draft_kernels"] * exp["draft_replays"], len([e for e in K if A(e).get("phase") == "draft"]))
    row("user kernels with phase accept", exp["iters"], len([e for e in userK if A(e).get("phase") == "accept"]))
    if exp.get("nccl"):
        row("ncclAllReduce host events (eager + captured)", exp["nccl_eager"] + exp["nccl_captured"], len(nc))
        row("captured ncclAllReduce host events", exp["nccl_captured"], len([e for e in nc if A(e).get("captured")]))
        row("replays that carry nccl args (graph GPU records / captured calls)", exp["verify_replays"],
            len([e for e in nccl_gpu if A(e).get("graph_id")]) // max(1, exp["nccl_captured"]))
if kind == "torch" and exp:
    want = sorted(x for x in [exp.get("verify_kernel_nodes") and exp["verify_kernel_nodes"] * exp["verify_replays"],
                              exp.get("draft_kernel_nodes") and exp["draft_kernel_nodes"] * exp["draft_replays"]] if x)
    row("per-graph kernel counts, all kernels (sorted)", want or None, sorted(allbyg.values()))
    row("graph kernels total", exp.get("graph_kernels"), sum(allbyg.values()))
    row("NVTX ranges from torch.cuda.nvtx (default domain)", exp["nvtx_ranges"], len([e for e in nv if not A(e).get("domain")]))
    row("ncclAllReduce host events", exp["nccl_calls_eager"] + exp["nccl_calls_captured"], len([e for e in nc if A(e)["op"] == "allreduce"]))
    row("captured ncclAllReduce host events", exp["nccl_calls_captured"], len([e for e in nc if A(e).get("captured")]))
    row("graph kernels carrying nccl args", None, len([e for e in nccl_gpu if A(e).get("graph_id")]))
    row("kernels with phase verify", None, len([e for e in K if A(e).get("phase") == "verify"]))
    if exp.get("profiler_cuda_events") is not None:
        row("torch.profiler CUDA events (second CUPTI client)", None, exp["profiler_cuda_events"])
w = max([len(r[0]) for r in rows] + [10])
if rows:
    print("%-*s %14s %14s  %s" % (w, "# check", "demo", "trace", ""))
    for r in rows:
        print("%-*s %14s %14s  %s" % (w, r[0], r[1], r[2], r[3]))
print()
PY
}

step "C demo under specprof (20 iterations)"
rm -rf $W/c
timeout 60 $SP -o $W/c -- $DEMO --iters 20 > $W/c.out 2> $W/c.err; rc=$?; say "rc=$rc"
cat $W/c.out $W/c.err | tee -a "$LOG"
if [ $rc -ge 128 ] && [ $rc -ne 143 ] && command -v cuda-gdb > /dev/null; then   # crashed: where?
  say "C demo crashed (rc $rc): backtrace under cuda-gdb"
  ( export SPECPROF_DIR=$W/gdb CUDA_INJECTION64_PATH=$PWD/bin/libspecprof.so NVTX_INJECTION64_PATH=$PWD/bin/libspecprof.so
    timeout 90 cuda-gdb -batch -ex "set env LD_PRELOAD $PWD/bin/libspecprof.so" -ex run -ex "thread apply all bt 12" \
      --args $DEMO --iters 3 ) 2>&1 | tail -60 | tee -a "$LOG"
fi
if [ $rc -eq 124 ]; then   # hung: try again attaching at cuInit instead of the first NVTX call
  say "C demo timed out: retrying with SPECPROF_NVTX_EARLY_INIT=0"; export SPECPROF_NVTX_EARLY_INIT=0
  rm -rf $W/c; timeout 60 $SP -o $W/c -- $DEMO --iters 20 > $W/c.out 2> $W/c.err; say "rc=$?"
  cat $W/c.out $W/c.err | tee -a "$LOG"
fi
CT=$(ls $W/c/specprof.rank*.json $W/c/specprof.rank*.json.part 2>/dev/null | head -1)
if [ -n "$CT" ]; then
  $SP check "$CT" 2>&1 | tee -a "$LOG"; say "check rc=${PIPESTATUS[0]}"
  $SP check --json "$CT" >> "$W/summaries.jsonl" 2>&1
  check_trace c_demo "$CT" $W/c.out c
  cp "$CT" "$OUT/c_demo.json"
else say "NO C DEMO TRACE"; ls -la $W/c | tee -a "$LOG"; fi

step "C demo without specprof (reference output)"
timeout 60 $DEMO --iters 20 2>&1 | tail -2 | tee -a "$LOG"

step "PyTorch demo under specprof (10 iterations)"
rm -rf $W/t
timeout 100 $SP -o $W/t -- python3 profiler/demo/torch_demo.py --iters 10 > $W/t.out 2> $W/t.err; rc=$?; say "rc=$rc"
tail -30 $W/t.err | tee -a "$LOG"; cat $W/t.out | tee -a "$LOG"
if [ $rc -ne 0 ]; then
  step "PyTorch demo under specprof --no-nccl (retry without LD_PRELOAD)"
  rm -rf $W/t
  timeout 80 $SP --no-nccl -o $W/t -- python3 profiler/demo/torch_demo.py --iters 10 > $W/t.out 2> $W/t.err; say "rc=$?"
  tail -30 $W/t.err | tee -a "$LOG"; cat $W/t.out | tee -a "$LOG"
fi
TT=$(ls $W/t/specprof.rank*.json $W/t/specprof.rank*.json.part 2>/dev/null | head -1)
if [ -n "$TT" ]; then
  ls -la $W/t | tee -a "$LOG"
  $SP check "$TT" 2>&1 | tee -a "$LOG"; say "check rc=${PIPESTATUS[0]}"
  $SP check --json "$TT" >> "$W/summaries.jsonl" 2>&1
  check_trace torch_demo "$TT" $W/t.out torch
  cp "$TT" "$OUT/torch_demo.json"
else say "NO TORCH DEMO TRACE"; fi

step "long-running graph loop ended by SIGTERM (to specprof, forwarded)"
rm -rf $W/term
$SP -o $W/term -- $DEMO --long-secs 30 --sleep-ms 10 --quiet > $W/term.out 2> $W/term.err &
L=$!; sleep 5; kill -TERM $L; wait $L; say "rc=$? (143 = killed by SIGTERM, as the program would be)"
cat $W/term.err | tee -a "$LOG"
for f in $W/term/specprof.*; do say "file: $(basename $f) $(stat -c %s $f) B"; done
$SP check $W/term/specprof.rank*.json* 2>&1 | head -8 | tee -a "$LOG"

step "long-running graph loop killed by SIGKILL (like SGLang's workers)"
rm -rf $W/kill
$SP -o $W/kill -- $DEMO --long-secs 30 --sleep-ms 10 --quiet > $W/kill.out 2> $W/kill.err &
L=$!; sleep 5; C=$(pgrep -P $L 2>/dev/null | head -1); [ -z "$C" ] && C=$(ps -o pid= --ppid $L | head -1); say "launcher $L child $C"; kill -KILL $C; T_KILL=$(date +%s.%N); wait $L; say "rc=$?"
cat $W/kill.err | tee -a "$LOG"
KP=$(ls $W/kill/specprof.rank*.json.part 2>/dev/null | head -1)
if [ -n "$KP" ]; then
  say "part file $(basename $KP) $(stat -c %s $KP) B"
  $SP check "$KP" 2>&1 | head -12 | tee -a "$LOG"; say "check rc=${PIPESTATUS[0]} (1 = loaded but truncated)"
  $SP check --json "$KP" >> "$W/summaries.jsonl" 2>&1
  cp "$KP" "$OUT/c_demo_sigkill.json.part"
else say "NO .part FILE AFTER SIGKILL"; ls -la $W/kill | tee -a "$LOG"; fi

late "window tests" || {
step "window: --delay 1 --duration 1.5 on a 5 s loop"
rm -rf $W/win
timeout 60 $SP -o $W/win --delay 1 --duration 1.5 -- $DEMO --long-secs 5 --sleep-ms 10 --quiet > /dev/null 2> $W/win.err; say "rc=$?"
cat $W/win.err | tee -a "$LOG"
$SP check $W/win/specprof.rank*.json* 2>&1 | grep -E "complete|TRUNC|span|kernels" | tee -a "$LOG"

step "window: --signal-start --signal-stop (USR1 at 2 s, USR2 at 3.5 s)"
rm -rf $W/sig
$SP -o $W/sig --signal-start --signal-stop -- $DEMO --long-secs 6 --sleep-ms 10 --quiet > /dev/null 2> $W/sig.err &
L=$!; sleep 2; kill -USR1 $L; sleep 1.5; kill -USR2 $L; wait $L; say "rc=$?"
cat $W/sig.err | tee -a "$LOG"
$SP check $W/sig/specprof.rank*.json* 2>&1 | grep -E "complete|TRUNC|span|kernels" | tee -a "$LOG"
}

if ! late "torch.profiler run"; then
step "PyTorch demo with torch.profiler active (second CUPTI client)"
rm -rf $W/tp
timeout 80 $SP -o $W/tp -- python3 profiler/demo/torch_demo.py --iters 5 --profiler > $W/tp.out 2> $W/tp.err; say "rc=$?"
grep -iE "specprof|cupti|kineto|warn|error" $W/tp.err | head -30 | tee -a "$LOG"; cat $W/tp.out | tee -a "$LOG"
TP=$(ls $W/tp/specprof.rank*.json* 2>/dev/null | head -1)
[ -n "$TP" ] && { $SP check "$TP" 2>&1 | head -12 | tee -a "$LOG"; check_trace torch_profiler "$TP" $W/tp.out torch; cp "$TP" "$OUT/torch_profiler.json"; }
fi

if ! late "NVTX experiments"; then
step "NVTX experiments: torch.cuda.nvtx ranges recorded? (torch demo, 3 iterations, no dist)"
LIBCUPTI=$(ls $(dirname "${CUPTI_SO:-/nonexistent}")/libcupti.so* 2>/dev/null | head -1)
for mode in forwarder nvtx-to-libcupti no-preload late-attach; do
  rm -rf $W/nx_$mode; extra=(); envs=()
  case $mode in
    nvtx-to-libcupti) envs=(SPECPROF_NVTX_LIB=$LIBCUPTI) ;;
    no-preload) extra=(--no-nccl) ;;
    late-attach) envs=(SPECPROF_NVTX_EARLY_INIT=0) ;;
  esac
  env "${envs[@]}" timeout 60 $SP "${extra[@]}" -o $W/nx_$mode -- python3 profiler/demo/torch_demo.py --iters 3 --no-dist \
    > $W/nx_$mode.out 2> $W/nx_$mode.err; r=$?
  f=$(ls $W/nx_$mode/specprof.rank*.json* 2>/dev/null | head -1)
  n=0; k=0
  [ -n "$f" ] && { n=$(grep -c '"cat":"nvtx"' "$f"); k=$(grep -c '"cat":"kernel"' "$f"); }
  cu=$(grep -o '"cupti_loaded": \[[^]]*\]' $W/nx_$mode.out | head -1)
  say "nvtx mode $mode (${envs[*]} ${extra[*]}): rc $r, nvtx events $n, kernels $k, $cu"
  grep "specprof: pid" $W/nx_$mode.err | head -3 | tee -a "$LOG"
done
fi

step "merge (C demo, torch demo and the SIGKILL file as three ranks)"
mkdir -p $W/m
cp $W/c/specprof.rank*.json $W/m/ 2>/dev/null
for f in $W/t/specprof.rank*.json*; do [ -e "$f" ] && cp "$f" "$W/m/$(basename "$f" | sed 's/rank0/rank1/')"; done
for f in $W/kill/specprof.rank*.json.part; do [ -e "$f" ] && cp "$f" "$W/m/$(basename "$f" | sed 's/rank0/rank2/')"; done
$SP merge $W/m 2>&1 | tee -a "$LOG"
$SP check $W/m/merged.json 2>&1 | head -8 | tee -a "$LOG"

step "no library (SPECPROF_LIB points nowhere): the program still runs"
SPECPROF_LIB=/nonexistent/libspecprof.so timeout 60 $SP -o $W/nolib -- $DEMO --iters 2 2>&1 | tail -4 | tee -a "$LOG"

if late "ncu run"; then :
elif command -v ncu > /dev/null; then
  step "ncu attached first (another CUPTI client)"
  timeout 60 ncu --clock-control none -c 1 $SP -o $W/ncu -- $DEMO --iters 2 > $W/ncu.out 2>&1; say "rc=$?"
  grep -E "specprof|==PROF==|==ERROR==|DEMO_EXPECT" $W/ncu.out | head -20 | tee -a "$LOG"
else say "ncu not found"; fi

step "summary"
cat "$CHK" | tee -a "$LOG"
for f in "$OUT"/*.json "$OUT"/*.part; do
  [ -f "$f" ] || continue
  s=$(stat -c %s "$f")
  [ "$s" -gt 1000000 ] && gzip -9 "$f"
done
(cd $W && tar czf "$OUT/extra.tar.gz" --exclude='*.so' term win sig m ncu nolib nx_* *.out *.err summaries.jsonl 2>/dev/null)
ls -la "$OUT" | tee -a "$LOG"
