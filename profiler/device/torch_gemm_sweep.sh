#!/bin/bash
# torch_gemm_sweep.sh: one short device call (run in call8.sh, 2026-12-04: traces/torch/gemm/): torchbench's GEMM shapes timed
# through torch (profiler/bench/torch_gemm_sweep.py), both presets, 1..64 tokens and every
# 8th count to 1024, for `specsim fit --gemm-sweep`. It replaces the stand-in
# traces/torch/call4/always/gemm_torch-dense.csv (specbench's llama8b sweep, same shapes,
# specbench's cuBLAS: traces/torch/gemm_from_llama8b.sh) and gives torch-moe one. Then compare
# its sums with call 4's capture (docs/torchbench.md: 0.967-1.015x for the stand-in) and
# re-run make validate. Expect ~1 min (dense) and a few (MoE: 8 routings a point).
# Results to $OUT: gemm_<preset>.csv, smi_<preset>.csv, torch_gemm_sweep.log; commit the CSVs
# as traces/torch/call4/always/gemm_<preset>.csv (and call6/always for torch-dense).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/torch_gemm_sweep.sh
set -u
OUT=${OUT:-/tmp/torch-gemm-sweep}
TOKENS=${GEMM_TOKENS:-1:64,72:1024:8}
PRESETS=${PRESETS:-torch-dense torch-moe}
REST=${GEMM_REST:-2}
mkdir -p "$OUT"
LOG=$OUT/torch_gemm_sweep.log
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))" | tee -a "$LOG"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$LOG"
for p in $PRESETS; do
  step "torch gemm sweep $p, tokens $TOKENS, rest $REST"
  rm -f "$OUT/gemm_$p.csv"
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,noheader,nounits -lms 50 > "$OUT/smi_$p.csv" 2>/dev/null &
  smi=$!
  timeout 540 python3 profiler/bench/torch_gemm_sweep.py --preset "$p" --tokens "$TOKENS" \
    --rest "$REST" --csv "$OUT/gemm_$p.csv" 2>&1 | tee -a "$LOG"
  echo "rc=${PIPESTATUS[0]} rows=$(($(wc -l < "$OUT/gemm_$p.csv") - 1))" | tee -a "$LOG"
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
done
step "done"
