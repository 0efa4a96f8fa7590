#!/bin/bash
# call7.sh: one device call (H200) for issues 13 and 18 (2026-12-04): torchbench's
# calibration captures (specprof --mode always) and held-out grids of both presets, and the
# eager loop (dense, --disable-cuda-graph), as call 6 did, now with torchbench's host-speed
# probes in every row (probe_py_us, probe_launch_us: before and after each timed window).
# What it answers: does a probe beside each window follow the host-bound configurations'
# speed (calls 4 and 6: eager rows 27-47% apart between repeats while the GPU does not
# move), so that the validation can predict each run at the host speed it had?
# Results ($OUT): run.log, torch.tar.gz (calibration captures of both presets, their
# measured_while_captured CSVs, the two grids' measured.csv), eager.tar.gz (the eager loop's
# capture, its CSV, its grid).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call7.sh
set -u
OUT=${OUT:-/tmp/call7}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call7.XXXXXX)
LOG=$OUT/run.log
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "device"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc
  lscpu | grep -E "Model name|MHz|NUMA|Thread|Core"; git log -1 --format='commit %H %s'; } 2>&1 | tee -a "$LOG"
make -k -j16 bin/specprof bin/libspecprof.so > $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
step "torch ground truth (captures + grids, one call)"
OUT=$W/torch PLAN="calib:torch-dense:always calib:torch-moe:always grid:torch-dense:95 grid:torch-moe:95" \
  CALIB_SECONDS=0.04 CALIB_MIN_ITERS=8 GRID_SECONDS=0.08 GRID_MIN_ITERS=15 \
  timeout 300 bash profiler/device/torch_truth.sh > $W/torch.out 2>&1
grep -E "^===|rc=|complete|bytes per record" $W/torch/run.log | tee -a "$LOG"
(cd $W && tar czf "$OUT/torch.tar.gz" torch)
step "eager loop: torchbench dense, graphs off"
TB_EXTRA="--disable-cuda-graph" TAG_SUFFIX=_eager OUT=$W/eager \
  PLAN="calib:torch-dense:always grid:torch-dense:${EAGER_GRID_S:-80}" CALIB_SECONDS=0.08 \
  CALIB_MIN_ITERS=8 GRID_SECONDS=0.08 GRID_MIN_ITERS=10 timeout 200 bash profiler/device/torch_truth.sh > $W/eager.out 2>&1
grep -E "^===|rc=|complete|bytes per record" $W/eager/run.log | tee -a "$LOG"
(cd $W && tar czf "$OUT/eager.tar.gz" eager)
step "done"
ls -la "$OUT" | tee -a "$LOG"
