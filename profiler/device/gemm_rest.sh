#!/bin/bash
# gemm_rest.sh: one device call: does the GEMM sweep time large GEMMs at the clocks of a
# forward? The llama8b sweep twice, back to back (--gemm-rest 0, as committed before) and
# with the GPU idling twice each point's time after it (--gemm-rest 2), and a forward-like
# run (spec, steps 8, concurrency 80: verify GEMMs at 720 tokens), each with nvidia-smi
# sampling SM clock, power and throttle reasons every 50 ms (docs/specbench.md).
# Results to $OUT: gemm_llama8b_rest0.csv, gemm_llama8b_rest2.csv, smi_*.csv, run.csv,
# gemm_rest.log.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/gemm_rest.sh
set -u
OUT=${OUT:-/tmp/gemm-rest}
TOKENS=${GEMM_TOKENS:-1:64,72:1024:8}
mkdir -p "$OUT"
LOG=$OUT/gemm_rest.log
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
smi_start() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,noheader,nounits -lms 50 > "$OUT/smi_$1.csv" 2>/dev/null &
  SMI=$!
}
smi_stop() { kill "$SMI" 2>/dev/null; wait "$SMI" 2>/dev/null; }
step "build"
make -j"$(nproc)" bin/specbench >> "$LOG" 2>&1 || { tail -30 "$LOG"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,power.draw --format=csv | tee -a "$LOG"
for rest in 0 2; do
  step "gemm sweep llama8b, tokens $TOKENS, --gemm-rest $rest"
  rm -f "$OUT/gemm_llama8b_rest$rest.csv"
  smi_start "sweep_rest$rest"
  timeout 150 bin/specbench --preset llama8b --gemm-sweep "$TOKENS" --gemm-rest "$rest" \
    --csv "$OUT/gemm_llama8b_rest$rest.csv" 2>&1 | tee -a "$LOG"
  echo "rc=${PIPESTATUS[0]}" | tee -a "$LOG"
  smi_stop
  sleep 2
done
step "forward: llama8b spec steps 8 concurrency 80, 3 x 1 s"
smi_start "forward"
timeout 120 bin/specbench --preset llama8b --mode spec --steps 8 --alpha 0.7 --concurrency 80 \
  --cuda-graph-bs 1,2,8,24,64 --repeats 3 --seconds 1 --csv "$OUT/run.csv" 2>&1 | tail -5 | tee -a "$LOG"
smi_stop
step "done"
