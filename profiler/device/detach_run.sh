#!/bin/bash
# detach_run.sh: one device call (H200) for issues 15 and 20: does `specprof --mode windows
# --between detach` (CUPTI detached between windows, attached again on a program thread at
# its next NVTX range start) keep the programs alive, their correlation ids healthy, and
# what does it cost?
#  1. profiler/demo/corr_probe.cu, variants detach (re-attach on the main thread, the way
#     that worked in call 5), detach_v2 (with cuptiSubscribe_v2) and detach_thread (re-attach
#     from a second thread while the main thread launches: what specprof did before);
#  2. profiler/device/overhead_run.sh: specbench llama8b decode c1, torchbench torch-dense
#     (decode and spec, c1 and c13) and the eager loop (plain), alternating none / detach
#     processes, ROUNDS rounds, every detach trace checked (`specprof check --json` into
#     stats.jsonl, distinct correlation ids into corr.txt), a smoke run in detach mode first.
# Results ($OUT, at most 8 files): run.log, corr.txt (probe + every trace's id counts),
# rows.csv (loop,mode,round,run,tok_s), stats.jsonl, samples.tar.gz (round 1's detach traces).
# Tables on the CPU: python3 profiler/device/overhead_tables.py RESULTS OUT --profiled detach
# usage (GPU machine, repo root): OUT=/tmp/x RUN_LIMIT_S=235 bash profiler/device/detach_run.sh
set -u
OUT=${OUT:-/tmp/detach}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/detach.XXXXXX)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
echo "=== detach_run start $(date -u +%T) commit $(cat COMMIT 2>/dev/null || echo '?')" | tee -a "$OUT/run.log"
# binaries built on the CPU box are carried and used as they are; make builds what is missing
# (or does not find its libraries here)
for b in bin/specprof bin/libspecprof.so bin/specbench bin/corr_probe; do
  [ -f $b ] && ldd $b 2>&1 | grep -q "not found" && { echo "$b: $(ldd $b | grep 'not found' | head -2): rebuilt" | tee -a "$OUT/run.log"; rm -f $b; }
  [ -f $b ] || timeout 150 make -k -j16 $b >> $W/build.log 2>&1 || echo "BUILD $b FAILED" | tee -a "$OUT/run.log"
done
tail -3 $W/build.log 2>/dev/null >> "$OUT/run.log"
ls -la bin | tee -a "$OUT/run.log"
echo "=== corr_probe ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
for v in detach detach_v2 detach_thread; do
  timeout 30 bin/corr_probe $v 4 400 >> "$OUT/corr.txt" 2>&1; echo "rc $v $?" >> "$OUT/corr.txt"
done
cat "$OUT/corr.txt" | tee -a "$OUT/run.log"
echo "=== overhead ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
mkdir -p $W/ov
OUT=$W/ov RUN_LIMIT_S=${RUN_LIMIT_S:-235} ROUNDS=${ROUNDS:-3} SKIP_CALIB=1 SKIP_EAGER_SMOKE=1 SMOKE_S=1 \
  SMOKE_ARGS="--mode windows --between detach" SAMPLES=1 SAMPLE_MODE=detach CORR_ALL=1 \
  LOOPS="sb_decode_c1 tb eager_plain" MODES_sb_decode_c1="none detach" MODES_tb="none detach" \
  MODES_eager_plain="none detach" SB_REPEATS=5 TB_REPEATS=4 EL_RUNS=4 SB_TIMEOUT_S=30 TB_TIMEOUT_S=45 EL_TIMEOUT_S=40 \
  bash profiler/device/overhead_run.sh > $W/ov.stdout 2>&1
cat $W/ov/run.log >> "$OUT/run.log"
cat $W/ov/corr.txt >> "$OUT/corr.txt"
for f in rows.csv stats.jsonl samples.tar.gz; do cp $W/ov/$f "$OUT/" 2>/dev/null; done
echo "=== done ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
ls -la "$OUT"
