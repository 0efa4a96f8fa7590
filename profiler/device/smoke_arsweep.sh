#!/bin/bash
# smoke_arsweep.sh: one short device call on a one-GPU machine: arsweep on a 1-rank
# communicator (eager and in a CUDA graph, every size checked), and specprof's overhead
# on the worst case for it, a decode loop whose host waits for the GPU before each graph
# launch (llama8b baseline, concurrency 1), alternating with and without specprof.
# Results to $OUT: arsweep_1gpu.csv, overhead_decode.csv, smoke_arsweep.log.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/smoke_arsweep.sh
set -u
OUT=${OUT:-/tmp/smoke-arsweep}
mkdir -p "$OUT"
LOG=$OUT/smoke_arsweep.log
export NCCL_NVLS_ENABLE=0
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "build"
make -j"$(nproc)" bin/arsweep bin/specbench bin/libspecprof.so bin/specprof >> "$LOG" 2>&1
ls -la bin | tee -a "$LOG"
step "arsweep, 1 GPU, 1 KB..256 MB, eager and graph"
timeout 120 bin/arsweep --gpus 1 --graph --csv "$OUT/arsweep_1gpu.csv" 2>&1 | tee -a "$LOG"
echo "arsweep rc=${PIPESTATUS[0]}" | tee -a "$LOG"
step "specprof overhead on a host-bound graph loop (baseline decode, concurrency 1)"
echo "run,profiled,tok_s" > "$OUT/overhead_decode.csv"
W=$(mktemp -d /tmp/ov.XXXXXX)
for i in 1 2; do
  for prof in 0 1; do
    rm -rf $W/ov $W/ov.csv
    pre=""; [ $prof = 1 ] && pre="bin/specprof -o $W/ov --quiet --"
    timeout 100 $pre bin/specbench --preset llama8b --mode baseline --concurrency 1 \
      --cuda-graph-bs 1,2,8,24,64 --prompt-len 1024 --output-len 256 --warmup 10 --seconds 3 \
      --csv $W/ov.csv > $W/ov.out 2>&1
    t=$(awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="tok_s") c=i} NR==2{print $c}' $W/ov.csv 2>/dev/null)
    echo "$i,$prof,$t" | tee -a "$OUT/overhead_decode.csv" "$LOG"
  done
done
step "done"
