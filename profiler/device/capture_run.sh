#!/bin/bash
# capture_run.sh: one device call (H200) that builds specbench and specprof, runs the GPU
# self-checks, captures the calibration subset of the validation grid under specprof (one
# trace per preset), measures specprof's overhead on a CUDA-graph decode loop, and runs
# the specprof smoke tests (profiler/device/smoke_specprof.sh). The measured grid itself
# is profiler/device/grid.sh (a second call). Results to $OUT (8 files at most come back):
#   calib_llama8b.json.gz calib_kimi-tp8.json.gz  the calibration traces (traces/calib/)
#   calib_measured.csv     what specbench measured while being captured
#   overhead.csv           tok/s with and without specprof, alternating runs
#   run.log                everything printed;  smoke.tar.gz  the specprof smoke outputs
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/capture_run.sh
#   env: CALIB_STEPS (default 2,5) CALIB_CONC (default 1,4,16,40,80): the calibration subset;
#        CALIB_PRESETS (default "llama8b kimi-tp8"); SKIP_BUILD=1 (binaries already there),
#        SPECPROF_ARGS (specprof options; unset: --mode always, the node-level calibration
#        traces/calib holds; set empty: specprof's default, lite with both probes); SKIP_CHECK=1 (no --check),
#        SKIP_OVERHEAD=1, SKIP_SMOKE=1 to capture only
set -u
OUT=${OUT:-/tmp/capture}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/capture.XXXXXX)
LOG=$OUT/run.log
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
CG=1,2,8,24,64                         # the validation grid's captured sizes (grid.sh)
COMMON="--prompt-len 1024 --output-len 256 --cuda-graph-bs $CG --seed 1"

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee -a "$LOG"
[ "${SKIP_BUILD:-0}" = 1 ] || {
step "build"
make -j"$(nproc)" bin/specbench bin/libspecprof.so bin/specprof_demo >> "$LOG" 2>&1
make bin/specprof >> "$LOG" 2>&1 || cc -O2 -std=c11 -D_GNU_SOURCE -Iprofiler/core -Imodels -o bin/specprof \
    profiler/specprof.c profiler/core/*.c models/bounds.c models/ofile.c -lz -lpthread -ldl -lm >> "$LOG" 2>&1
}
ls -la bin | tee -a "$LOG"
SP=bin/specprof; SB=bin/specbench

CALIB_PRESETS=${CALIB_PRESETS:-llama8b kimi-tp8}
[ "${SKIP_CHECK:-0}" = 1 ] || for p in $CALIB_PRESETS; do
  step "check $p"
  timeout 150 $SB --check --preset $p 2>&1 | tail -25 | tee -a "$LOG"
done

# The calibration subset: chain steps 2 and 5 at alpha 0.7 at every concurrency of the grid
# (1: an exact graph, 4, 16 and 40: padded to 8, 24 and 64, 80: eager), and the baselines at the same
# concurrencies. Every other draft length and acceptance of the grid is predicted from these
# two traces (make validate).
CALIB_STEPS=${CALIB_STEPS:-2,5}
CALIB_CONC=${CALIB_CONC:-1,4,16,40,80}
for p in $CALIB_PRESETS; do
  step "calibration capture $p"
  rm -rf $W/calib_$p
  timeout 240 $SP -o $W/calib_$p --quiet ${SPECPROF_ARGS---mode always} -- $SB --preset $p --mode spec,baseline --steps $CALIB_STEPS \
    --alpha 0.7 --concurrency $CALIB_CONC $COMMON --warmup 3 --seconds 0.12 --min-iters 6 \
    --repeats 1 --csv $W/calib_measured.csv 2>&1 | tail -30 | tee -a "$LOG"
  f=$(ls $W/calib_$p/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then
    $SP check "$f" 2>&1 | head -20 | tee -a "$LOG"
    ls -la "$f" | tee -a "$LOG"
    case "$f" in   # specprof writes .json.gz by default now; older captures were plain
      *.gz) cp "$f" "$OUT/calib_$p.json.gz" ;;
      *) gzip -9 -c "$f" > "$OUT/calib_$p.json.gz" ;;
    esac
  else echo "NO TRACE for $p" | tee -a "$LOG"; fi
done
cp $W/calib_measured.csv "$OUT/" 2>/dev/null

# Overhead: the same CUDA-graph decode loop with and without specprof, alternating.
[ "${SKIP_OVERHEAD:-0}" = 1 ] || {
step "overhead"
echo "run,profiled,tok_s" > "$OUT/overhead.csv"
for i in 1 2; do
  for prof in 0 1; do
    rm -f $W/ov.csv; rm -rf $W/ov
    if [ $prof = 1 ]; then pre="$SP -o $W/ov --quiet --"; else pre=""; fi
    timeout 120 $pre $SB --preset llama8b --mode spec --steps 3 --alpha 0.7 --concurrency 16 \
      $COMMON --warmup 10 --seconds 3 --csv $W/ov.csv > $W/ov.out 2>&1
    t=$(awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="tok_s") c=i} NR==2{print $c}' $W/ov.csv 2>/dev/null)
    echo "$i,$prof,$t" | tee -a "$OUT/overhead.csv" | tee -a "$LOG"
    [ $prof = 1 ] && ls -la $W/ov 2>&1 | tail -1 | tee -a "$LOG"
  done
done

}
[ "${SKIP_SMOKE:-0}" = 1 ] || {
step "specprof smoke"
mkdir -p $W/smoke
left=$(( ${RUN_LIMIT_S:-570} - SECONDS ))
OUT=$W/smoke SMOKE_BUDGET_S=$(( left > 160 ? left - 100 : 40 )) timeout $(( left > 30 ? left - 20 : 10 )) bash profiler/device/smoke_specprof.sh > $W/smoke/stdout.log 2>&1
tail -60 $W/smoke/smoke.log | tee -a "$LOG"
(cd $W && tar czf "$OUT/smoke.tar.gz" smoke)
}
step "done"
ls -la "$OUT"
