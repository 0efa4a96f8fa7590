#!/bin/bash
# call29.sh: one device call (2026-12-06, eighth session): call 4's design again (issue 13's
# main torchbench table: each preset's calibration subset captured by specprof --mode always in
# its own process, the held-out grid measured unprofiled in another, the same call), now that
# the always captures carry the calibration's clean arm (profiler/pclean.c, calls 27-28): call
# 4's eager rows (80 rows, above the largest graph) came out 5-24% off, the calibration's blind
# spot among the causes (docs/profiler.md). More grid repeats than call 4's 3 (the budget cuts
# late repeats, repeats outermost), no Kineto, no windows captures.
# $OUT (at most 8 files back): run.log, device.txt, calib_torch-{dense,moe}_always.json.gz,
# calib_measured_torch-{dense,moe}_always.csv, measured.csv.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call29.sh
#   env: GRID_S (160): seconds of grid per preset; GRID_REPEATS (8); PRESETS (torch-dense torch-moe)
set -u
O=${OUT:-/tmp/call29}
mkdir -p "$O"
G=${GRID_S:-160}
PLAN="check"
for p in ${PRESETS:-torch-dense torch-moe}; do PLAN="$PLAN calib:$p:always"; done
for p in ${PRESETS:-torch-dense torch-moe}; do PLAN="$PLAN grid:$p:$G"; done
PLAN="$PLAN" \
  CALIB_SECONDS=0.04 CALIB_MIN_ITERS=8 GRID_SECONDS=0.08 GRID_MIN_ITERS=15 \
  GRID_REPEATS=${GRID_REPEATS:-8} OUT=$O bash profiler/device/torch_truth.sh > "$O/stdout.txt" 2>&1
echo "torch_truth rc=$?"
rm -f "$O/stdout.txt"
ls -la "$O"
grep -v '^  ' "$O/run.log" | grep -E "===|rc=|launch_clean|calibration|records|kept|repeats" | tail -40
