#!/bin/bash
# call8.sh: one device call (H200, 2026-12-04) after lite_call.sh:
#  1. torchbench's own GEMM shapes timed through torch (profiler/device/torch_gemm_sweep.sh):
#     torch-dense at every token count 1..64 and every 8th to 1024 (replaces the stand-in made
#     from specbench's llama8b sweep), torch-moe at a coarser list (its expert GEMMs average 8
#     routings a point);
#  2. specprof --mode lite's cost on torchbench again with more rounds (lite_call.sh's 3 rounds
#     read 2.1% and 2.9% for the speculative loop at 1 and 13 rows, within its spread): the
#     graph loop tb (decode and spec at 1 and 13 rows) unpinned, 5 rounds none / lite; the eager
#     loop tbe (graphs off, 1 row) pinned to CPUs 2-3 in both modes (taskset: the process and
#     its threads), 5 rounds none / lite, first run of each process dropped.
# Results ($OUT): run.log, gemm.tar.gz (gemm_<preset>.csv, smi_<preset>.csv, its log),
# tables.tar.gz (overhead_tables.py's tables/, ov/rows.csv etc.).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call8.sh
set -u
OUT=${OUT:-/tmp/call8}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call8.XXXXXX)
LOG=$OUT/run.log
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
step "build"
make -j16 bin/specprof bin/libspecprof.so bin/libfloor.so > $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
step "torch GEMM sweeps"
mkdir -p $W/gemm
OUT=$W/gemm PRESETS=torch-dense timeout 150 bash profiler/device/torch_gemm_sweep.sh > $W/gemm_dense.out 2>&1
OUT=$W/gemm PRESETS=torch-moe GEMM_TOKENS=${MOE_TOKENS:-1:16,24:256:8,288:1024:32} timeout 170 \
  bash profiler/device/torch_gemm_sweep.sh > $W/gemm_moe.out 2>&1
grep -E "^===|rc=" $W/gemm/torch_gemm_sweep.log | tee -a "$LOG"
(cd $W && tar czf "$OUT/gemm.tar.gz" gemm)
step "overhead: tb unpinned, tbe pinned to CPUs 2-3; none / lite alternating"
left=$(( ${RUN_LIMIT_S:-540} - SECONDS - 20 ))
OUT=$W/ov RUN_LIMIT_S=$left ROUNDS=${ROUNDS:-5} SKIP_CALIB=1 SKIP_EAGER_SMOKE=1 SMOKE_S=1 SMOKE_ARGS="--mode lite" \
  LOOPS="tb tbe" MODES_tb="none lite" MODES_tbe="none lite" PIN_tbe=2-3 TB_REPEATS=3 \
  timeout $(( left + 15 )) bash profiler/device/overhead_run.sh > $W/ov.out 2>&1
grep -E " round [0-9]+: |^time:" $W/ov/run.log | cut -c1-200 | tee -a "$LOG"
step "tables"
mkdir -p $W/pack/tables $W/pack/ov
python3 profiler/device/overhead_tables.py $W/ov $W/pack/tables --profiled lite 2>&1 | tee -a "$LOG"
cp $W/ov/run.log $W/ov/rows.csv $W/ov/stats.jsonl $W/pack/ov/ 2>/dev/null
(cd $W/pack && tar czf "$OUT/tables.tar.gz" .)
step "done"
ls -la "$OUT" | tee -a "$LOG"
