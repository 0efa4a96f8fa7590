#!/bin/bash
# gemm_sweep.sh: one short device call: specbench --gemm-sweep for both presets, every GEMM
# shape of a rank alone at 1..64 tokens and every 8th count up to 1024 (the verify and
# extend widths of up to 128 rows x 8 tokens, 80 x 12), for `specsim fit
# --gemm-sweep` (docs/fit.md). The GPU idles GEMM_REST (default 2) x each point's time after
# it: back to back, large GEMMs hold the H200 at its power limit and run at ~1540 MHz where
# a forward runs at 1980 (profiler/device/gemm_rest.sh, docs/specbench.md). Results to $OUT:
# gemm_<preset>.csv, facts_<preset>.json, smi_<preset>.csv (SM clock, power and throttle
# reasons every 50 ms), gemm_sweep.log; commit them as traces/calib/gemm_<preset>.csv.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/gemm_sweep.sh
set -u
OUT=${OUT:-/tmp/gemm-sweep}
TOKENS=${GEMM_TOKENS:-1:64,72:1024:8}
PRESETS=${PRESETS:-llama8b kimi-tp8}
REST=${GEMM_REST:-2}
mkdir -p "$OUT"
LOG=$OUT/gemm_sweep.log
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "build"
make -j"$(nproc)" bin/specbench >> "$LOG" 2>&1 || { tail -30 "$LOG"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$LOG"
for p in $PRESETS; do
  step "gemm sweep $p, tokens $TOKENS, --gemm-rest $REST"
  rm -f "$OUT/gemm_$p.csv"
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,noheader,nounits -lms 50 > "$OUT/smi_$p.csv" 2>/dev/null &
  smi=$!
  timeout 420 bin/specbench --preset "$p" --gemm-sweep "$TOKENS" --gemm-rest "$REST" \
    --csv "$OUT/gemm_$p.csv" --facts "$OUT/facts_$p.json" 2>&1 | tee -a "$LOG"
  echo "rc=${PIPESTATUS[0]} rows=$(($(wc -l < "$OUT/gemm_$p.csv") - 1))" | tee -a "$LOG"
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
done
step "done"
