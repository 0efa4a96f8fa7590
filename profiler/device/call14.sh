#!/bin/bash
# call14.sh: one device call (H200, <= 400 s): call 9's one-process design for torch-dense with
# CUDA graphs, the calibration subset widened by 2 rows (plain decode, steps 2 and 5), because
# inside the forward cuBLAS runs torch-dense's decode 2 and 3 rows as slowly as 4 (call 13):
# can a calibration with 2 rows predict plain decode at 1-8 rows within 3% (issue 13)?
#  1. node-level reference (specprof --mode always, another process): the subset at 1, 2, 4,
#     15, 33, 80 rows (torch_truth.sh calib, CALIB_CONC);
#  2. the held-out grid of call 9 in one lite process, the widened subset captured.
# Results ($OUT): run.log; grid_dense.csv; lite_dense.json.gz; ref_dense.json.gz.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call14.sh
set -u
OUT=${OUT:-/tmp/call14}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call14.XXXXXX)
LOG=$OUT/run.log
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
make -j"$(nproc)" bin/specprof bin/libspecprof.so > $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
SP=$PWD/bin/specprof
TB="python3 $PWD/profiler/bench/torchbench.py"
COMMON="--prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64"
step "node-level reference, 1 2 4 15 33 80 rows"
OUT=$W/ref SP=$SP PLAN="calib:torch-dense:always" CALIB_CONC=1,2,4,15,33,80 CALIB_SECONDS=0.04 CALIB_MIN_ITERS=8 \
  timeout 120 bash profiler/device/torch_truth.sh > $W/ref.out 2>&1
grep -E "^complete|^calibration|NO TRACE|^-rw" $W/ref/run.log | tee -a "$LOG"
cp $W/ref/calib_torch-dense_always.json.gz "$OUT/ref_dense.json.gz" 2>/dev/null
CALIB=""
for c in 1 2 4 15 33 80; do CALIB="$CALIB,spec:2:$c,spec:5:$c,baseline:$c"; done
step "grid and the widened subset in one lite process"
timeout 150 $SP --quiet --mode lite --capture-range profiler-api -o $W/p -- $TB --preset torch-dense \
  --mode spec,baseline --steps 1,2,3,4,5,6 --alpha 0.5,0.8 --concurrency 1,2,4,7,9,15,24,33,50,80 $COMMON \
  --warmup 1 --seconds 0.08 --min-iters 15 --repeats 3 --discard-first --time-budget 100 --capture "${CALIB#,}" \
  --csv $OUT/grid_dense.csv > $W/p.out 2>&1
echo "rc=$?" | tee -a "$LOG"; grep "^#" $W/p.out | tail -3 | tee -a "$LOG"
f=$(ls $W/p/specprof.rank*.json* 2>/dev/null | head -1)
[ -n "$f" ] && { $SP check "$f" 2>&1 | sed -n 3,6p | tee -a "$LOG"; cp "$f" "$OUT/lite_dense.json.gz"; }
ls -la "$OUT" | tee -a "$LOG"
step "done"
