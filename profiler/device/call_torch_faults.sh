#!/bin/bash
# call_torch_faults.sh: one H200 device call (2026-12-03, fourth session) that takes the
# PyTorch ground truth's calibration captures AND its held-out grids in the same call
# (issue 13: a grid measured on another call's host misses by the host's speed), each
# preset captured twice (specprof --mode always, and the windowed default: issues 15/20's
# "the fit from the new mode"), the Kineto fixtures of the dense calibration subset
# (issue 14), then specprof's fault table (issue 17). Everything under $OUT as two tarballs
# (the device tool brings back at most 8 files): torch.tar.gz, faults.tar.gz.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call_torch_faults.sh
set -u
O=${OUT:-/tmp/call_torch_faults}
mkdir -p "$O"
OUT=$O/faults timeout 150 bash profiler/device/faults.sh > "$O/faults_stdout.txt" 2>&1
(cd "$O" && tar czf faults.tar.gz faults faults_stdout.txt && rm -rf faults faults_stdout.txt)
PLAN="check calib:torch-dense:always calib:torch-moe:always calib:torch-dense calib:torch-moe kineto:torch-dense grid:torch-dense:125 grid:torch-moe:125" \
  CALIB_SECONDS=0.08 CALIB_MIN_ITERS=10 GRID_SECONDS=0.08 GRID_MIN_ITERS=15 \
  OUT=$O/torch timeout $(( ${CALL_S:-560} - SECONDS )) bash profiler/device/torch_truth.sh > "$O/torch_stdout.txt" 2>&1
(cd "$O" && tar czf torch.tar.gz torch torch_stdout.txt && rm -rf torch torch_stdout.txt)
ls -la "$O"
