#!/bin/bash
# grid.sh: the measured specbench grid of issue 4, for one device call on an H200.
# Builds bin/specbench, runs the GPU self-checks of both presets (a failure is logged
# and makes the exit status 1; the grid still runs so the device call is not lost),
# then for each preset ONE process (weights loaded
# once, CUDA graphs reused per shape) runs: spec mode, chain steps 1..6 x alpha
# {0.5,0.7,0.9} x concurrency {1,4,16,40,80}, plus the baseline at each concurrency;
# CUDA graphs for batch sizes 1,2,8,24,64 (4->8, 16->24, 40->64 pad; 80 runs eagerly);
# every point REPEATS times (repeat loop outermost), spread in measured_summary.csv.
# Each preset's grid stops cleanly before BUDGET_S seconds (default 150): the repeat loop
# is outermost, so a cut loses late repeats, not points; measured.csv is written point by
# point, so even a killed run keeps what finished.
# Writes to $OUT (default traces/validation): measured.csv, measured_summary.csv,
# device_facts.json, measured_llama8b.json, measured_kimi-tp8.json, grid.log,
# nvidia-smi.txt (7 files: the device tool brings back at most 8).
# Time (an estimate: this script has not run on a GPU yet): 95 points x REPEATS x
# (SECONDS_PER_POINT + 3 warm-up iterations of 4-40 ms) ~ 100 s per preset, bounded by
# BUDGET_S (150 s) + init; plus ~1-2 min of build and checks: ~7 min worst case.
# usage: OUT=/dir bash profiler/device/grid.sh
#        (env: REPEATS=3, SECONDS_PER_POINT=0.3, BUDGET_S=150 per preset, PRESETS,
#         GRID_CONC=1,4,16,40,80: the concurrencies, e.g. 1,4 to re-measure the noisy ones
#         with longer windows; GRID_STEPS=1,2,3,4,5,6 and GRID_ALPHA=0.5,0.7,0.9: the
#         draft lengths and acceptances, e.g. configurations beyond the grid;
#         SKIP_CHECK=1: no --check)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-traces/validation}
REPEATS=${REPEATS:-3}
SEC=${SECONDS_PER_POINT:-0.3}
PRESETS=${PRESETS:-"llama8b kimi-tp8"}
BUDGET=${BUDGET_S:-150}
GRID_CONC=${GRID_CONC:-1,4,16,40,80}
GRID_STEPS=${GRID_STEPS:-1,2,3,4,5,6}
GRID_ALPHA=${GRID_ALPHA:-0.5,0.7,0.9}
CG=1,2,8,24,64
export NCCL_NVLS_ENABLE=0        # the GPU machines require NVLink multicast off
mkdir -p "$OUT"
rm -f "$OUT/measured.csv" "$OUT/measured_summary.csv"     # specbench appends
LOG=$OUT/grid.log
. profiler/device/sb_start.sh   # the log, note(), nvidia-smi, bin/specbench
rc=0
for p in $PRESETS; do
  note "check $p"
  if [ "${SKIP_CHECK:-0}" = 1 ]; then
    note "check $p skipped (SKIP_CHECK=1)"
  elif ! timeout 180 bin/specbench --check --preset "$p" 2>&1 | tee -a "$LOG" | tail -1 | grep -q " 0 failed"; then
    note "check $p FAILED (see above); running the grid anyway, results suspect"
    rc=1
  fi
  note "grid $p"
  timeout $((BUDGET + 120)) bin/specbench --preset "$p" --mode spec,baseline --steps "$GRID_STEPS" \
    --alpha "$GRID_ALPHA" --concurrency "$GRID_CONC" --cuda-graph-bs "$CG" \
    --prompt-len 1024 --output-len 256 --warmup 3 --seconds "$SEC" --min-iters 5 \
    --repeats "$REPEATS" --seed 1 --time-budget "$BUDGET" --facts "$OUT/device_facts.json" \
    --csv "$OUT/measured.csv" --summary-csv "$OUT/measured_summary.csv" \
    --json "$OUT/measured_$p.json" 2>&1 | tee -a "$LOG" | grep -E "^# ([0-9]+ points|time budget|init|memory)"
  st=${PIPESTATUS[0]}
  note "grid $p rc=$st"
  [ "$st" = 0 ] || rc=1
done
note "done rc=$rc"
exit $rc
