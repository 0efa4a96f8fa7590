#!/bin/bash
# scale_check.sh: one device call measuring specbench at model shapes the calibration traces
# do not have, to check `specsim scale` against the GPU (docs/scale.md, "Checked against
# the H200"): kimi-tp8 at its traced 12 layers (the control), at 6 and 24 layers, and one
# rank of TP=4 at 6 layers; llama8b at its 32 layers (the control), at 16 layers, and one
# rank of TP=2. Every shape runs in its own process (--gpus 1: one rank's compute, no
# all-reduce, as the calibration did): spec (chain steps 3, alpha 0.7) and the baseline at
# concurrency 1 and 16, CUDA graphs 1,2,8,24,64, prompt 1024, output 256, 2 repeats of
# 0.4 s windows after 3 warm-up iterations, seed 1.
# Writes $OUT/measured.csv (specbench --csv rows: preset, mode, ..., accept_len, ...,
# layers, tp, ...), $OUT/scale_check.log, $OUT/device_facts.json, $OUT/nvidia-smi.txt. Then
# commit measured.csv as traces/scale/measured.csv: `make validate` runs
# models/scalecheck.sh, which predicts every row from the calibration traces on CPU.
# Time (estimated; not run yet): build ~1 min, then 7 shapes x (init and graph capture
# ~5-10 s + 8 runs x ~0.5 s) ~ 1.5 min, each shape cut at SHAPE_BUDGET_S (20 s) by
# specbench --time-budget; under 3 minutes of GPU time.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/scale_check.sh
#        (env: SHAPES to run a subset, e.g. SHAPES="kimi-tp8:6:8 llama8b:16:1")
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/scale_check}
BUDGET=${SHAPE_BUDGET_S:-20}
# preset:layers:tp (the first of each preset is its calibration shape: the control)
SHAPES=${SHAPES:-"kimi-tp8:12:8 kimi-tp8:6:8 kimi-tp8:24:8 kimi-tp8:6:4 llama8b:32:1 llama8b:16:1 llama8b:32:2"}
export NCCL_NVLS_ENABLE=0        # the GPU machines require NVLink multicast off
mkdir -p "$OUT"
rm -f "$OUT/measured.csv"        # specbench appends
LOG=$OUT/scale_check.log
. profiler/device/sb_start.sh   # the log, note(), nvidia-smi, bin/specbench
rc=0
for s in $SHAPES; do
  IFS=: read -r preset layers tp <<EOF
$s
EOF
  note "shape $preset layers $layers tp $tp"
  timeout $((BUDGET + 90)) bin/specbench --preset "$preset" --layers "$layers" --tp "$tp" --gpus 1 \
    --mode spec,baseline --steps 3 --alpha 0.7 --concurrency 1,16 --cuda-graph-bs 1,2,8,24,64 \
    --prompt-len 1024 --output-len 256 --warmup 3 --seconds 0.4 --min-iters 5 --repeats 2 \
    --seed 1 --time-budget "$BUDGET" --facts "$OUT/device_facts.json" --csv "$OUT/measured.csv" \
    2>&1 | tee -a "$LOG" | grep -E "^# ([0-9]+ points|time budget|init|memory|preset)"
  st=${PIPESTATUS[0]}
  note "shape $preset:$layers:$tp rc=$st"
  [ "$st" = 0 ] || rc=1
done
rows=$(($(wc -l < "$OUT/measured.csv" 2>/dev/null || echo 1) - 1))
note "done rc=$rc rows=$rows"
exit $rc
