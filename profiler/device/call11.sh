#!/bin/bash
# call11.sh: one device call (H200, <= 540 s), call 9's design again (docs/torchbench.md "One
# process"): torchbench's grid and its captured calibration subset in ONE specprof --mode lite
# --capture-range profiler-api process. For issue 13's MoE preset (graphs, eager above 64 rows)
# and as replicates of call 9's dense processes (graphs; the eager loop with 0.2 s windows, to
# see how much of the eager error is the grid's own timing noise). The node-level references
# are committed ones (call 9 dense, call 7 MoE; models/lite_validate.sh nodes.csv): a lite
# capture takes only each graph replay's node shares and the eager kernels' GPU times from them.
# Results ($OUT): run.log; csv.tar.gz (grid_moe.csv, grid_dense_r2.csv, grid_eager_r2.csv and
# the processes' stdout); lite_moe.json.gz, lite_dense_r2.json.gz, lite_eager_r2.json.gz.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call11.sh   (RUN_LIMIT_S 530)
set -u
OUT=${OUT:-/tmp/call11}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call11.XXXXXX)
LOG=$OUT/run.log
LIMIT=${RUN_LIMIT_S:-530}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
left() { echo $(( LIMIT - SECONDS )); }
step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
step "build"
make -j"$(nproc)" bin/specprof bin/libspecprof.so > $W/build.log 2>&1 || { echo "BUILD FAILED" | tee -a "$LOG"; tail -30 $W/build.log | tee -a "$LOG"; }
SP=$PWD/bin/specprof
TB="python3 $PWD/profiler/bench/torchbench.py"
COMMON="--prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64"
LITE="$SP --quiet --mode lite --capture-range profiler-api"
CALIB="spec:2:1,spec:2:4,spec:2:15,spec:2:33,spec:2:80,spec:5:1,spec:5:4,spec:5:15,spec:5:33,spec:5:80"
CALIB="$CALIB,baseline:1,baseline:4,baseline:15,baseline:33,baseline:80"
GRID="--mode spec,baseline --steps 1,2,3,4,5,6 --alpha 0.5,0.8 --concurrency 1,2,4,7,9,15,24,33,50,80"
mkdir -p $W/pack
run() {   # run TAG BUDGET_S TORCHBENCH_ARGS...
  local tag=$1 b=$2; shift 2
  [ $(left) -lt $(( b / 2 + 30 )) ] && { echo "no time for $tag" | tee -a "$LOG"; return; }
  [ $b -gt $(( $(left) - 40 )) ] && b=$(( $(left) - 40 ))
  step "$tag (budget ${b}s)"
  timeout $(( b + 40 )) $LITE -o $W/$tag -- $TB "$@" $COMMON --repeats 3 --discard-first --time-budget $b \
    --capture "$CALIB" --csv $W/pack/grid_$tag.csv > $W/pack/$tag.out 2>&1
  echo "rc=$?" | tee -a "$LOG"; grep "^#" $W/pack/$tag.out | tail -3 | tee -a "$LOG"
  local f; f=$(ls $W/$tag/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then $SP check "$f" 2>&1 | sed -n 3,8p | tee -a "$LOG"; cp "$f" "$OUT/lite_$tag.json.gz"
  else echo "NO TRACE for $tag" | tee -a "$LOG"; fi
}
run moe 150 --preset torch-moe $GRID --warmup 1 --seconds 0.08 --min-iters 15
run dense_r2 80 --preset torch-dense $GRID --warmup 1 --seconds 0.08 --min-iters 15
run eager_r2 150 --preset torch-dense --disable-cuda-graph $GRID --warmup 1 --seconds 0.2 --min-iters 10
step "pack"
(cd $W/pack && tar czf "$OUT/csv.tar.gz" .)
ls -la "$OUT" | tee -a "$LOG"
step "done"
