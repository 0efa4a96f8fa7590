#!/bin/bash
# beyond.sh: one device call measuring configurations outside the validation grid, to test
# predictions beyond it (docs/validation.md): draft lengths longer than any the grid or the
# calibration has (llama8b steps 7 and 8, kimi-tp8 steps 7: its attention kernel takes at
# most 64 query vectors, 8 heads x 8 tokens), acceptances 0.6 and 0.8 (the grid has 0.5, 0.7,
# 0.9) and concurrencies 2, 8, 32, 56 (the grid has 1, 4, 16, 40, 80), with the baselines,
# 3 repeats of 1 s windows. Writes $OUT/measured.csv (both presets), grid logs, facts.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/beyond.sh
set -u
OUT=${OUT:-/tmp/beyond}
mkdir -p "$OUT"
rc=0
for p in llama8b kimi-tp8; do
  steps=7,8; [ "$p" = kimi-tp8 ] && steps=7
  OUT="$OUT/$p" PRESETS=$p GRID_STEPS=$steps GRID_ALPHA=0.6,0.8 GRID_CONC=2,8,32,56 \
    REPEATS=3 SECONDS_PER_POINT=1.0 BUDGET_S=200 SKIP_CHECK=1 \
    bash profiler/device/grid.sh || rc=1
done
{ head -1 "$OUT/llama8b/measured.csv"; tail -n +2 -q "$OUT/llama8b/measured.csv" "$OUT/kimi-tp8/measured.csv"; } > "$OUT/measured.csv"
{ head -1 "$OUT/llama8b/measured_summary.csv"; tail -n +2 -q "$OUT/llama8b/measured_summary.csv" "$OUT/kimi-tp8/measured_summary.csv"; } > "$OUT/measured_summary.csv"
cat "$OUT/llama8b/grid.log" "$OUT/kimi-tp8/grid.log" > "$OUT/grid.log"
cp "$OUT/llama8b/device_facts.json" "$OUT/device_facts.json"
rm -rf "$OUT/llama8b" "$OUT/kimi-tp8"
echo "rc=$rc rows=$(($(wc -l < "$OUT/measured.csv") - 1))"
exit $rc
