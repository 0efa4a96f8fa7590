#!/bin/bash
# smoke_specbench.sh: a short device run of specbench for correctness and timing: build,
# --check on both presets, --check of a tiny MoE shape under compute-sanitizer, and a
# reduced grid of both presets to time one point. Every step runs even if one fails;
# results go to $OUT (8 files at most come back from the device machine).
# usage (on the GPU machine, repo root): OUT=/tmp/x bash profiler/device/smoke_specbench.sh
set -u
OUT=${OUT:-/tmp/specbench-smoke}
mkdir -p "$OUT"
LOG=$OUT/smoke.log
SEC=${SMOKE_SECONDS:-0.25}
export NCCL_NVLS_ENABLE=0        # the machines require NVLink multicast off
step() { echo "=== $* ($(date +%T))" | tee -a "$LOG"; }
step "device"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
head -20 "$OUT/nvidia-smi.txt" | tee -a "$LOG"
nproc | tee -a "$LOG"
step "build"
sh profiler/bench/nccl_flags.sh /usr/local/cuda | tee -a "$LOG"
t0=$(date +%s)
make -j"$(nproc)" bin/specbench 2>&1 | tee -a "$LOG"
echo "build rc=${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
if [ ! -x bin/specbench ]; then     # fall back to a single-GPU build without NCCL
  rm -rf build/profiler/bench; make -j"$(nproc)" SB_NCCL=-DSB_NO_NCCL bin/specbench 2>&1 | tee -a "$LOG"
fi
[ -x bin/specbench ] || { echo "no binary" | tee -a "$LOG"; exit 1; }
step "check llama8b"
timeout 120 bin/specbench --check --preset llama8b --facts "$OUT/facts.json" 2>&1 | tee -a "$LOG"
step "check kimi-tp8"
timeout 120 bin/specbench --check --preset kimi-tp8 2>&1 | tee -a "$LOG"
step "compute-sanitizer memcheck, tiny MoE shape"
TINY="--preset kimi-tp8 --hidden 512 --inter 1024 --experts 16 --topk-experts 4 --moe-inter 512 --shared-inter 512 --vocab 4096 --draft-vocab 4096 --draft-inter 1024"
timeout 150 compute-sanitizer --tool memcheck --print-limit 20 bin/specbench --check $TINY > "$OUT/sanitizer.log" 2>&1
echo "memcheck rc=$?" | tee -a "$LOG"; tail -5 "$OUT/sanitizer.log" | tee -a "$LOG"
timeout 150 compute-sanitizer --tool racecheck --print-limit 20 bin/specbench --check $TINY >> "$OUT/sanitizer.log" 2>&1
echo "racecheck rc=$?" | tee -a "$LOG"; tail -3 "$OUT/sanitizer.log" | tee -a "$LOG"
for p in llama8b kimi-tp8; do
  step "reduced grid $p"
  timeout 150 bin/specbench --preset $p --mode spec,baseline --steps 1,3,6 --alpha 0.7 \
    --concurrency 1,4,40,80 --cuda-graph-bs 1,2,8,24,64 --repeats 1 --seconds "$SEC" \
    --warmup 3 --csv "$OUT/smoke_measured.csv" --summary-csv "$OUT/smoke_summary.csv" \
    --json "$OUT/smoke_$p.json" 2>&1 | tee -a "$LOG"
  echo "grid rc=${PIPESTATUS[0]}" | tee -a "$LOG"
done
step "done"
