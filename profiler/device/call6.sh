#!/bin/bash
# call6.sh: one device call (H200) for issues 13, 18 and 20 (2026-12-03, fifth session):
#  1. does pinning torchbench to one CPU core (taskset) make its eager, host-bound
#     configurations repeat between processes? (call 5: 38% apart one minute apart)
#     4 unpinned and 4 pinned processes, alternating, each 3 timed repeats of spec steps 2 and
#     the baseline at 80 rows (eager, above the largest graph) and at 4 rows (a graph);
#  2. torchbench's calibration captures (always mode) and held-out grids of both presets in
#     this one call (as call 4), pinned when step 1 says pinning halves the spread;
#  3. the eager loop of issue 20: torchbench dense with --disable-cuda-graph, its calibration
#     subset captured in windows mode (API records kept on) and in always mode, and its
#     held-out grid unprofiled: the eager loop predicted from a windowed capture.
# Results ($OUT): run.log, pin.csv, torch.tar.gz (step 2), eager.tar.gz (step 3).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call6.sh
set -u
OUT=${OUT:-/tmp/call6}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call6.XXXXXX)
LOG=$OUT/run.log
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "device"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc; lscpu | grep -E "Model name|MHz|NUMA|Thread|Core"; } 2>&1 | tee -a "$LOG"
make -k -j16 bin/specprof bin/libspecprof.so > $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
PINCPU=${PINCPU:-3}
TBC="profiler/bench/torchbench.py --preset torch-dense --mode spec,baseline --steps 2 --alpha 0.7 --concurrency 4,80 --prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64 --warmup 3 --seconds 0.3 --min-iters 15 --repeats 3"
step "pin test (taskset -c $PINCPU)"
for i in 1 2 3 4; do
  for pin in 0 1; do
    pre=""; [ $pin = 1 ] && pre="taskset -c $PINCPU"
    rm -f $W/p.csv
    timeout 60 $pre python3 $TBC --csv $W/p.csv > $W/p.out 2>&1 || tail -3 $W/p.out | tee -a "$LOG"
    awk -F, -v i=$i -v pin=$pin 'NR==1{for(k=1;k<=NF;k++)h[$k]=k; if(i==1&&pin==0)print "proc,pinned,mode,concurrency,rep,tok_s"} NR>1{print i","pin","$h["mode"]","$h["concurrency"]","$h["rep"]","$h["tok_s"]}' $W/p.csv >> "$OUT/pin.csv"
  done
done
cat "$OUT/pin.csv" | tee -a "$LOG"
# spread between processes of the per-process median, eager spec at 80 rows: (max-min)/median
verdict=$(python3 - "$OUT/pin.csv" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = {}
for pin in "01":
    per = {}
    for r in rows:
        if r["pinned"] == pin and r["mode"] == "spec" and r["concurrency"] == "80":
            per.setdefault(r["proc"], []).append(float(r["tok_s"]))
    meds = [st.median(v) for v in per.values()]
    out[pin] = (max(meds) - min(meds)) / st.median(meds) if len(meds) > 1 else 9
print("pin" if out["1"] < 0.5 * out["0"] else "nopin", f"{out['0']:.3f}", f"{out['1']:.3f}")
PY
)
echo "pin verdict: $verdict (spread of process medians unpinned, pinned)" | tee -a "$LOG"
TBP="python3 profiler/bench/torchbench.py"
case "$verdict" in pin*) TBP="taskset -c $PINCPU python3 profiler/bench/torchbench.py" ;; esac
echo "torchbench command: $TBP" | tee -a "$LOG"
step "torch ground truth (captures + grids, one call)"
TB="$TBP" OUT=$W/torch PLAN="calib:torch-dense:always calib:torch-moe:always grid:torch-dense:95 grid:torch-moe:95" \
  CALIB_SECONDS=0.04 CALIB_MIN_ITERS=8 GRID_SECONDS=0.08 GRID_MIN_ITERS=15 timeout 270 bash profiler/device/torch_truth.sh > $W/torch.out 2>&1
grep -E "^===|rc=|complete|bytes per record" $W/torch/run.log | tee -a "$LOG"
echo "$TBP" > $W/torch/tb_command.txt
(cd $W && tar czf "$OUT/torch.tar.gz" torch)
step "eager loop: torchbench dense, graphs off"
TB="$TBP" TB_EXTRA="--disable-cuda-graph" TAG_SUFFIX=_eager OUT=$W/eager \
  PLAN="calib:torch-dense:windows calib:torch-dense:always grid:torch-dense:${EAGER_GRID_S:-80}" CALIB_SECONDS=0.08 \
  CALIB_MIN_ITERS=8 GRID_SECONDS=0.08 GRID_MIN_ITERS=10 timeout 200 bash profiler/device/torch_truth.sh > $W/eager.out 2>&1
grep -E "^===|rc=|complete|bytes per record" $W/eager/run.log | tee -a "$LOG"
(cd $W && tar czf "$OUT/eager.tar.gz" eager)
step "done"
ls -la "$OUT" | tee -a "$LOG"
