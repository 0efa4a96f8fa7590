#!/bin/bash
# call_torch_faults.sh: one H200 device call (2026-12-03, fourth session) that takes the
# PyTorch ground truth's calibration captures AND its held-out grids in the same call
# (issue 13: a grid measured on another call's host misses by the host's speed), each
# preset captured twice (specprof --mode always, and the windowed default: issues 15/20's
# "the fit from the new mode"), the Kineto fixtures of the dense calibration subset
# (issue 14), and specprof's fault table (issue 17).
# $OUT (the device tool brings back at most 8 files of at most 16 MiB each): faults.tar.gz,
# torch_misc.tar.gz (run.log, the measured CSVs, device.txt), kineto.tar.gz, and the four
# calibration traces calib_P[_always].json.gz (split in 15 MB parts .partNN if larger).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call_torch_faults.sh
set -u
O=${OUT:-/tmp/call_torch_faults}
mkdir -p "$O"
OUT=$O/faults timeout 150 bash profiler/device/faults.sh > "$O/faults_stdout.txt" 2>&1
tail -12 "$O/faults/faults.txt"
(cd "$O" && tar czf faults.tar.gz faults faults_stdout.txt && rm -rf faults faults_stdout.txt)
PLAN=${PLAN:-"check calib:torch-dense:always calib:torch-moe:always calib:torch-dense calib:torch-moe kineto:torch-dense grid:torch-dense:120 grid:torch-moe:120"} \
  CALIB_SECONDS=${CALIB_SECONDS:-0.04} CALIB_MIN_ITERS=${CALIB_MIN_ITERS:-8} GRID_SECONDS=${GRID_SECONDS:-0.08} \
  GRID_MIN_ITERS=${GRID_MIN_ITERS:-15} \
  OUT=$O/torch timeout $(( ${CALL_S:-540} - SECONDS )) bash profiler/device/torch_truth.sh > "$O/torch_stdout.txt" 2>&1
echo "torch_truth rc=$?"
cd "$O"
mv torch/calib_*.json.gz torch/kineto.tar.gz . 2>/dev/null
for f in calib_*.json.gz; do
  [ -f "$f" ] || continue
  if [ "$(stat -c %s "$f")" -gt 15000000 ]; then split -b 15000000 -d "$f" "$f.part" && rm "$f"; fi
done
tar czf torch_misc.tar.gz torch torch_stdout.txt && rm -rf torch torch_stdout.txt
ls -la "$O"
tar xzf torch_misc.tar.gz -O torch/run.log | grep -v '^  ' | tail -60
