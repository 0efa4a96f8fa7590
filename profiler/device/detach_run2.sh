#!/bin/bash
# detach_run2.sh: the second device call for --between detach (after detach_run.sh showed the
# programs still dying after a detach, with the re-attach on a program thread): which detach
# breaks a program, and does finalizing CUPTI only at a blocking sync's exit (the new default,
# SPECPROF_DETACH_AT=sync) keep them alive?
#  1. corr_probe variants detach_gcap (graph made under CUPTI, replayed after detaches),
#     detach_busy (finalized at a launch's exit with the GPU busy), detach_mt (a second thread
#     launching through the detach);
#  2. overhead_run.sh, one round, detach mode only (ROUNDS/MODES overridable): specbench decode
#     c1, the eager loop, torchbench; every trace checked.
# Results ($OUT): run.log, corr.txt, rows.csv, stats.jsonl.
# usage (GPU machine, repo root): OUT=/tmp/x RUN_LIMIT_S=60 bash profiler/device/detach_run2.sh
set -u
OUT=${OUT:-/tmp/detach2}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/detach2.XXXXXX)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
echo "=== detach_run2 start $(date -u +%T) commit $(cat COMMIT 2>/dev/null || echo '?')" | tee -a "$OUT/run.log"
for v in detach_gcap detach_busy detach_mt; do
  timeout 20 bin/corr_probe $v 4 400 >> "$OUT/corr.txt" 2>&1; echo "rc $v $?" >> "$OUT/corr.txt"
done
cat "$OUT/corr.txt" | tee -a "$OUT/run.log"
mkdir -p $W/ov
OUT=$W/ov RUN_LIMIT_S=${RUN_LIMIT_S:-60} ROUNDS=${ROUNDS:-1} SKIP_CALIB=1 SKIP_EAGER_SMOKE=1 SMOKE_S=1 \
  SMOKE_ARGS="--mode windows --between detach" SAMPLES=0 CORR_ALL=1 \
  LOOPS="sb_decode_c1 eager_plain tb" MODES_sb_decode_c1="${MODES2:-detach}" MODES_tb="${MODES2:-detach}" \
  MODES_eager_plain="${MODES2:-detach}" SB_REPEATS=5 TB_REPEATS=3 EL_RUNS=4 SB_TIMEOUT_S=25 TB_TIMEOUT_S=35 EL_TIMEOUT_S=30 \
  bash profiler/device/overhead_run.sh > $W/ov.stdout 2>&1
cat $W/ov/run.log >> "$OUT/run.log"
cat $W/ov/corr.txt >> "$OUT/corr.txt"
for f in rows.csv stats.jsonl; do cp $W/ov/$f "$OUT/" 2>/dev/null; done
echo "=== done ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
