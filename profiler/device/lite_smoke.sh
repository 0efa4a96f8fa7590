#!/bin/bash
# lite_smoke.sh: the one short device call (H200) that tried specprof --mode lite (no CUPTI
# in the program) before lite_call.sh: a lite capture of specbench decode c1 and of
# torchbench torch-dense decode and spec at 1 row, `specprof check` of each, and a quick A/B
# (overhead_run.sh: 3 rounds alternating none/lite, specbench decode c1 and torchbench).
# Results ($OUT): run.log, sb_lite.json.gz, tb_lite.json.gz, ov/{run.log,rows.csv,stats.jsonl}
# usage (GPU machine, repo root, binaries built or carried in bin/): OUT=/tmp/x bash profiler/device/lite_smoke.sh
set -u
OUT=${OUT:-/tmp/lite_smoke}
mkdir -p "$OUT"
LOG=$OUT/run.log
W=$(mktemp -d /tmp/lite.XXXXXX)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "device"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$LOG"
step "build (only what is missing)"
for b in bin/specbench bin/libspecprof.so bin/specprof; do
  [ -f $b ] && ldd $b 2>&1 | grep -q "not found" && { echo "$b: rebuilt" | tee -a "$LOG"; rm -f $b; }
  [ -f $b ] || make -j"$(nproc)" $b >> "$LOG" 2>&1 || echo "BUILD $b FAILED" | tee -a "$LOG"
done
ldd bin/specbench | grep -E "cudart|cupti" | tee -a "$LOG"
SP=$PWD/bin/specprof; SB=$PWD/bin/specbench
COMMON="--prompt-len 1024 --output-len 256 --cuda-graph-bs 1,2,8,24,64 --seed 1"
step "specbench decode c1, lite"
timeout 60 $SP -o $W/sb --mode lite -- $SB --preset llama8b --mode baseline --concurrency 1 $COMMON --warmup 5 --seconds 2 2>&1 | tail -6 | tee -a "$LOG"
f=$(ls $W/sb/specprof.rank*.json* | head -1); $SP check "$f" 2>&1 | head -24 | tee -a "$LOG"; cp "$f" "$OUT/sb_lite.json.gz"
step "torchbench torch-dense decode and spec c1, lite"
timeout 100 $SP -o $W/tb --mode lite -- python3 profiler/bench/torchbench.py --preset torch-dense --mode baseline,spec --steps 3 \
  --alpha 0.7 --concurrency 1 --prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64 --warmup 3 --seconds 0.4 \
  --repeats 2 --csv $W/tb.csv 2>&1 | tail -6 | tee -a "$LOG"
cat $W/tb.csv | tee -a "$LOG"
f=$(ls $W/tb/specprof.rank*.json* | head -1); $SP check "$f" 2>&1 | head -30 | tee -a "$LOG"; cp "$f" "$OUT/tb_lite.json.gz"
step "A/B none vs lite (overhead_run.sh, 3 rounds)"
OUT=$OUT/ov RUN_LIMIT_S=${OV_LIMIT_S:-130} ROUNDS=3 SAMPLES=0 SKIP_CALIB=1 SKIP_EAGER_SMOKE=1 SMOKE_S=1 SMOKE_ARGS="--mode lite" \
  LOOPS="sb_decode_c1 tb" MODES_sb_decode_c1="none lite" MODES_tb="none lite" SB_REPEATS=4 TB_REPEATS=3 \
  timeout $(( ${OV_LIMIT_S:-130} + 20 )) bash profiler/device/overhead_run.sh > /dev/null 2>&1
grep -E " round [0-9]+: " "$OUT/ov/run.log" | cut -c1-220 | tee -a "$LOG"
step "done"
