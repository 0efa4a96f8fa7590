#!/bin/bash
# gemm_sweep.sh: one short device call: specbench --gemm-sweep for both presets, every GEMM
# shape of a rank alone at 1..64 tokens and every 8th count up to 1024 (the verify and
# extend widths of up to 128 rows x 8 tokens, 80 x 12), for `specsim fit
# --gemm-sweep` (docs/fit.md). Results to $OUT: gemm_<preset>.csv, facts_<preset>.json,
# gemm_sweep.log; commit them as traces/calib/gemm_<preset>.csv.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/gemm_sweep.sh
set -u
OUT=${OUT:-/tmp/gemm-sweep}
TOKENS=${GEMM_TOKENS:-1:64,72:1024:8}
PRESETS=${PRESETS:-llama8b kimi-tp8}
mkdir -p "$OUT"
LOG=$OUT/gemm_sweep.log
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "build"
make -j"$(nproc)" bin/specbench >> "$LOG" 2>&1 || { tail -30 "$LOG"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$LOG"
for p in $PRESETS; do
  step "gemm sweep $p, tokens $TOKENS"
  rm -f "$OUT/gemm_$p.csv"
  timeout 240 bin/specbench --preset "$p" --gemm-sweep "$TOKENS" --csv "$OUT/gemm_$p.csv" \
    --facts "$OUT/facts_$p.json" 2>&1 | tee -a "$LOG"
  echo "rc=${PIPESTATUS[0]} rows=$(($(wc -l < "$OUT/gemm_$p.csv") - 1))" | tee -a "$LOG"
done
step "done"
