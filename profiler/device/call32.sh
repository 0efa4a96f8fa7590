#!/bin/bash
# call32.sh: the captured-graph-size rule (docs/fit.md "Captured graph sizes") out of sample,
# in one device call. make validate's specbench grid runs at the calibration's concurrencies
# (1, 4, 16, 40, 80), so its held-out rows at a padded size share their real rows with the
# calibration cells the size's factor came from. Here, on one GPU: specbench llama8b's
# calibration subset captured as traces/calib's was (capture_run.sh: chain steps 2 and 5 at
# alpha 0.7, concurrency 1, 4, 16, 40, 80, graphs 1,2,8,24,64), then a grid of concurrencies
# the calibration never ran: 6 (padded to 8), 12 and 20 (to 24), 32 and 56 (to 64), with
# 16 and 40 again (the calibration's own rows), steps 1..6 at alpha 0.7 and the baseline.
# Locally afterwards: fit the capture, predict the grid with and without the rule
# (FIT_GRAPH_SIZES=0), into traces/validation/call32/ with a README there.
# Run 2026-12-07 on an H100 (traces/validation/call32/, README there).
# Time (estimated from capture_run.sh's and grid.sh's earlier calls): build ~1-2 min, the
# capture ~1 min, the grid (5-7 concurrencies x 7 points x 3 repeats of 0.3 s) ~1.5 min.
# Files to $OUT (4): calib_llama8b.json.gz, calib_measured.csv, run.log (capture_run.sh),
# grid.tar.gz (grid.sh's outputs: measured.csv, measured_summary.csv, grid.log, ...).
# usage (GPU machine, repo root): OUT=/dir bash profiler/device/call32.sh
#   env: GRID_CONC (default 6,12,16,20,32,40,56), REPEATS (3)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/call32}
mkdir -p "$OUT"
CALIB_PRESETS=llama8b SKIP_OVERHEAD=1 SKIP_SMOKE=1 SKIP_CHECK=1 OUT="$OUT" \
  bash profiler/device/capture_run.sh > "$OUT/capture.stdout" 2>&1
tail -5 "$OUT/capture.stdout"
G=$(mktemp -d /tmp/call32grid.XXXXXX)
PRESETS=llama8b GRID_CONC=${GRID_CONC:-6,12,16,20,32,40,56} GRID_ALPHA=0.7 REPEATS=${REPEATS:-3} \
  SKIP_CHECK=1 OUT="$G" bash profiler/device/grid.sh
rc=$?
(cd "$G" && tar czf "$OUT/grid.tar.gz" .)
rm -f "$OUT/capture.stdout"
ls -la "$OUT"
exit $rc
