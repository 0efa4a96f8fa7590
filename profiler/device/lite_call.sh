#!/bin/bash
# lite_call.sh: one device call (H200, <= 540 s) for issues 15 and 20: what specprof --mode
# lite (no CUPTI in the measured process: docs/specprof.md "Lite mode") costs, and the lite
# captures that the fit combines with the committed node-level ones.
#  0. build what is missing; a 1-row torchbench decode under lite (if PyTorch fails under it,
#     the torch parts below are skipped and run.log has the error);
#  1. lite calibration captures, the configurations of the committed node-level ones:
#     specbench llama8b and kimi-tp8 (capture_run.sh's calibration subset, traces/calib/
#     manifest.csv: steps 2,5 at alpha 0.7 and baselines, concurrency 1,4,16,40,80, 0.12 s a
#     point), torchbench torch-dense with graphs (torch_truth.sh calib, as traces/torch/call6/
#     always: 0.04 s, >= 8 iterations) and without (the eager loop, as traces/torch/call6/eager:
#     --disable-cuda-graph, 0.08 s), each with what the program measured while captured, and
#     both held-out grids unprofiled (50 s each: TB_GRID_S, TBE_GRID_S);
#  2. overhead, processes alternating none / lite round by round (overhead_run.sh, first run
#     of each process dropped by overhead_tables.py): specbench decode c1 (sb_decode_c1) and
#     spec steps 3 alpha 0.7 at concurrency 16 (sb_spec_c16), torchbench dense with graphs
#     (tb: decode and spec at 1 and 13 rows), the eager loop (tbe: torchbench dense with
#     --disable-cuda-graph at 1 row, decode and spec), whose first-row decode also runs
#     under floor (bin/libfloor.so: CUPTI with kernel activity only) and always (--mode
#     always) for the floor table; 3 timed runs per process (2 kept), 3 rounds: 6 kept runs
#     per mode and loop when nothing is cut (RUN_LIMIT_S cuts late rounds first).
# Results ($OUT, 7 files):
#   run.log                             everything printed, with `specprof check` of each capture
#   tables.tar.gz                       tables/NAME.csv (run,profiled,tok_s; profiled 1 = lite) for
#                                       sb_decode_c1 sb_spec_c16 tb_decode_c1 tb_spec_c1 tb_spec_c13
#                                       tbe_decode_c1 tbe_spec_c1 (and tb_decode_c13); tables/
#                                       eager_floor.csv (run,mode,tok_s: none, floor, specprof = lite,
#                                       always, on tbe_decode_c1); tables/summary.csv, traces.csv;
#                                       ov/{run.log,rows.csv,stats.jsonl,floor.txt,corr.txt};
#                                       samples/ (round 1's lite trace of each loop)
#   calib_llama8b_lite.json.gz calib_kimi-tp8_lite.json.gz    specbench's lite calibration captures
#   calib_torch-dense_lite.json.gz calib_torch-dense_lite_eager.json.gz   torchbench's (graphs, eager)
#   calib_measured.tar.gz               calib_measured_lite.csv (specbench, both presets),
#                                       calib_measured_torch-dense_lite[_eager].csv, torch_truth logs,
#                                       measured_torch.csv / measured_eager.csv: torchbench dense's
#                                       held-out grids (graphs; eager loop), unprofiled, this call
# Time (from the H200 calls' logs: specbench 4 timed runs in 4-5 s a process, torchbench 12 in
# 9 s, the calibration subsets ~9 s a preset (call 5), torch calibration 7-9 s (call 6)):
# build 0-60 s, smoke 15 s, captures ~50 s, overhead ~75 s a round (sb 2x5, sb16 2x5, tb 2x9,
# tbe 4x9), 4 rounds ~300 s: ~430 s with a 60 s build. With the two torch grids (100 s),
# 3 rounds (6 kept runs per mode and loop): ~450 s.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/lite_call.sh
#   env: RUN_LIMIT_S (530): everything stops by then; ROUNDS (3); SKIP_CAPTURES=1.
set -u
OUT=${OUT:-/tmp/lite_call}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/lite_call.XXXXXX)
LOG=$OUT/run.log
LIMIT=${RUN_LIMIT_S:-530}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" 2>&1 | tee -a "$LOG"
git log --oneline -1 2>/dev/null | tee -a "$LOG"

step "build (only what is missing)"
for b in bin/specprof bin/libspecprof.so bin/libfloor.so bin/specbench; do
  [ -f $b ] && ldd $b 2>&1 | grep -q "not found" && { echo "$b: $(ldd $b | grep 'not found' | head -2): rebuilt" | tee -a "$LOG"; rm -f $b; }
  [ -f $b ] || make -j"$(nproc)" $b >> $W/build.log 2>&1 || { echo "BUILD $b FAILED" | tee -a "$LOG"; tail -20 $W/build.log | tee -a "$LOG"; }
done
ldd bin/specbench 2>&1 | grep -E "cudart" | tee -a "$LOG"   # the shared runtime: lite mode sees it
SP=$PWD/bin/specprof; SB=$PWD/bin/specbench
TBPY="python3 $PWD/profiler/bench/torchbench.py"

step "smoke: torchbench decode c1 under lite"
TORCH=1
timeout 60 $SP -o $W/smoke --mode lite -- $TBPY --preset torch-dense --mode baseline --concurrency 1 --prompt-len 1024 \
  --output-len 256 --seed 1 --cuda-graph-max-bs 64 --warmup 2 --seconds 0.3 --repeats 2 --csv $W/smoke.csv > $W/smoke.out 2>&1
rc=$?
cat $W/smoke.csv 2>/dev/null | tee -a "$LOG"
f=$(ls $W/smoke/specprof.rank*.json* 2>/dev/null | head -1)
[ -n "$f" ] && $SP check "$f" 2>&1 | head -16 | tee -a "$LOG"
if [ $rc != 0 ] || ! grep -q "^baseline\|,baseline," $W/smoke.csv 2>/dev/null; then
  TORCH=0
  echo "TORCHBENCH FAILED UNDER LITE (rc $rc): the torch parts are skipped" | tee -a "$LOG"
  grep -v "^#" $W/smoke.out | tail -40 | tee -a "$LOG"
fi

mkdir -p $W/measured
[ "${SKIP_CAPTURES:-0}" = 1 ] || {
step "lite calibration captures: specbench (capture_run.sh's subset)"
mkdir -p $W/calib
OUT=$W/calib SPECPROF_ARGS="--mode lite" SKIP_BUILD=1 SKIP_CHECK=1 SKIP_OVERHEAD=1 SKIP_SMOKE=1 timeout 150 \
  bash profiler/device/capture_run.sh > $W/calib/stdout.log 2>&1
grep -vE "^specprof: (trace|1 complete)" $W/calib/run.log | grep -E "^===|^#|^capture|^lite|^calib|^WARNING|^INCOMPLETE|^complete|NO TRACE|tok_s" \
  | head -60 | tee -a "$LOG"
for p in llama8b kimi-tp8; do
  [ -f $W/calib/calib_$p.json.gz ] && cp $W/calib/calib_$p.json.gz "$OUT/calib_${p}_lite.json.gz"
done
cp $W/calib/calib_measured.csv $W/measured/calib_measured_lite.csv 2>/dev/null
cp $W/calib/run.log $W/measured/capture_run.log 2>/dev/null
if [ $TORCH = 1 ]; then
  step "lite calibration captures: torchbench dense, graphs (as call 6's always capture)"
  OUT=$W/torch SP=$SP PLAN="calib:torch-dense:lite" CALIB_SECONDS=0.04 CALIB_MIN_ITERS=8 timeout 100 \
    bash profiler/device/torch_truth.sh > $W/torch.out 2>&1
  grep -E "^===|^capture|^lite|^calib|^WARNING|^INCOMPLETE|^complete|NO TRACE" $W/torch/run.log | tee -a "$LOG"
  step "lite calibration captures: torchbench dense, eager (as call 6's eager captures)"
  OUT=$W/eager SP=$SP TB_EXTRA="--disable-cuda-graph" TAG_SUFFIX=_eager PLAN="calib:torch-dense:lite" CALIB_SECONDS=0.08 \
    CALIB_MIN_ITERS=8 timeout 100 bash profiler/device/torch_truth.sh > $W/eager.out 2>&1
  grep -E "^===|^capture|^lite|^calib|^WARNING|^INCOMPLETE|^complete|NO TRACE" $W/eager/run.log | tee -a "$LOG"
  # the held-out grids of both, unprofiled, in this call (call 4's lesson: a grid measured in
  # another call than its capture carries the host's drift between processes)
  step "torchbench dense grids, unprofiled (graphs, then the eager loop)"
  OUT=$W/torch PLAN="grid:torch-dense:${TB_GRID_S:-50}" GRID_SECONDS=0.08 GRID_MIN_ITERS=15 timeout 80 \
    bash profiler/device/torch_truth.sh > $W/torch_grid.out 2>&1
  OUT=$W/eager TB_EXTRA="--disable-cuda-graph" PLAN="grid:torch-dense:${TBE_GRID_S:-50}" GRID_SECONDS=0.08 \
    GRID_MIN_ITERS=10 timeout 80 bash profiler/device/torch_truth.sh > $W/eager_grid.out 2>&1
  wc -l $W/torch/measured.csv $W/eager/measured.csv 2>&1 | tee -a "$LOG"
  for d in torch eager; do
    cp $W/$d/measured.csv $W/measured/measured_$d.csv 2>/dev/null
    cp $W/$d/calib_torch-dense_lite*.json.gz "$OUT/" 2>/dev/null
    cp $W/$d/calib_measured_*.csv $W/measured/ 2>/dev/null
    cp $W/$d/run.log $W/measured/torch_truth_$d.log 2>/dev/null
  done
fi
(cd $W && tar czf "$OUT/calib_measured.tar.gz" measured)
}

step "overhead: none / lite alternating (overhead_run.sh)"
LOOPS="sb_decode_c1 sb_spec_c16"; [ $TORCH = 1 ] && LOOPS="$LOOPS tb tbe"
left=$(( LIMIT - SECONDS - 25 ))
OUT=$W/ov RUN_LIMIT_S=$left ROUNDS=${ROUNDS:-3} SKIP_CALIB=1 SKIP_EAGER_SMOKE=1 SMOKE_S=1 SMOKE_ARGS="--mode lite" \
  SAMPLES=1 SAMPLE_MODE=lite LOOPS="$LOOPS" MODES_sb_decode_c1="none lite" MODES_sb_spec_c16="none lite" MODES_tb="none lite" \
  MODES_tbe="none lite floor always" SB_REPEATS=3 TB_REPEATS=3 timeout $(( left + 15 )) bash profiler/device/overhead_run.sh > $W/ov.out 2>&1
grep -E " round [0-9]+: |^time:" $W/ov/run.log | cut -c1-200 | tee -a "$LOG"

step "tables"
mkdir -p $W/pack/tables
python3 profiler/device/overhead_tables.py $W/ov $W/pack/tables --profiled lite 2>&1 | tee -a "$LOG"
# the eager loop's floor table: modes none, floor, specprof (= lite), always
[ -f $W/pack/tables/tbe_decode_c1_modes.csv ] && sed 's/,lite,/,specprof,/' $W/pack/tables/tbe_decode_c1_modes.csv \
  > $W/pack/tables/eager_floor.csv
mkdir -p $W/pack/ov
cp $W/ov/run.log $W/ov/rows.csv $W/ov/stats.jsonl $W/ov/floor.txt $W/ov/corr.txt $W/pack/ov/ 2>/dev/null
[ -f $W/ov/samples.tar.gz ] && (mkdir -p $W/pack/samples && cd $W/pack/samples && tar xzf $W/ov/samples.tar.gz)
(cd $W/pack && tar czf "$OUT/tables.tar.gz" .)
step "done"
ls -la "$OUT" | tee -a "$LOG"
