#!/bin/bash
# call12.sh: one device call (H200, <= 540 s) for issue 20's tables from ONE call: the eager
# loop at 1 row (torchbench dense, --disable-cuda-graph; plain decode and spec steps 3 at alpha
# 0.7) with
#  1. what lite recording costs inside one process (torchbench --capture-ab under specprof --mode
#     lite --capture-range profiler-api, three processes, as call 9; profiler/device/ab_tables.py);
#  2. the floor table, processes alternating mode by mode (overhead_run.sh loop tbe): none,
#     floor (bin/libfloor.so: a bare CUPTI subscriber with kernel activity only), lite (= specprof
#     in the table: its production mode) and always.
# Results ($OUT): run.log; ab.tar.gz (ab_eager_{1,2,3}.csv and stdout); ov.tar.gz (overhead_run's
# rows.csv, run.log, stats.jsonl, floor.txt).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call12.sh   (RUN_LIMIT_S 530)
set -u
OUT=${OUT:-/tmp/call12}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call12.XXXXXX)
LOG=$OUT/run.log
LIMIT=${RUN_LIMIT_S:-530}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
left() { echo $(( LIMIT - SECONDS )); }
step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
step "build"
make -j"$(nproc)" bin/specprof bin/libspecprof.so bin/libfloor.so bin/specbench > $W/build.log 2>&1 || { echo "BUILD FAILED" | tee -a "$LOG"; tail -30 $W/build.log | tee -a "$LOG"; }
SP=$PWD/bin/specprof
TB="python3 $PWD/profiler/bench/torchbench.py"
COMMON="--prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64"
mkdir -p $W/ab
step "in-process A/B: the eager loop at 1 row, 3 processes"
for i in 1 2 3; do
  timeout 60 $SP --quiet --mode lite --capture-range profiler-api -o $W/ab$i -- $TB --preset torch-dense \
    --disable-cuda-graph --mode baseline,spec --steps 3 --alpha 0.7 --concurrency 1 $COMMON --warmup 3 --seconds 0.4 \
    --repeats 7 --capture-ab --csv $W/ab/ab_eager_$i.csv > $W/ab/ab_eager_$i.out 2>&1
  echo "A/B $i rc=$? rows $(($(wc -l < $W/ab/ab_eager_$i.csv 2>/dev/null || echo 1) - 1))" | tee -a "$LOG"
done
(cd $W && tar czf "$OUT/ab.tar.gz" ab)
step "floor table: none / floor / lite / always, processes alternating (overhead_run.sh tbe)"
l=$(( $(left) - 30 ))
OUT=$W/ov RUN_LIMIT_S=$l ROUNDS=${ROUNDS:-4} SKIP_CALIB=1 SKIP_EAGER_SMOKE=1 SMOKE_S=1 SMOKE_ARGS="--mode lite" SAMPLES=0 \
  LOOPS=tbe MODES_tbe="none lite floor always" TB_REPEATS=3 timeout $(( l + 15 )) bash profiler/device/overhead_run.sh \
  > $W/ov.out 2>&1
grep -E " round [0-9]+: |^time:" $W/ov/run.log | cut -c1-200 | tee -a "$LOG"
(cd $W && tar czf "$OUT/ov.tar.gz" ov)
ls -la "$OUT" | tee -a "$LOG"
step "done"
