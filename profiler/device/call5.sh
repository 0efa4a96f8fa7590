#!/bin/bash
# call5.sh: one device call (H200) for issues 15, 17 and 20 (2026-12-03, fifth session):
#  1. profiler/demo/corr_probe.cu, one process per variant: which way of switching CUPTI's
#     tracing off and on keeps correlation ids advancing, and what an attached-but-idle CUPTI
#     costs a 400-node graph launch (docs/profiler.md "windows");
#  2. profiler/device/faults.sh again (the full-disk check and the 32-thread buffer fixes);
#  3. profiler/device/overhead_run.sh: specbench decode c1, torchbench and the eager loop in
#     none / always / windows / windows with the API records kept on between windows, and the
#     specbench llama8b calibration subset in windows+API and always;
#  4. torchbench's calibration subsets in windows+API (dense, MoE) and always (dense).
# Results ($OUT, 8 files): corr.txt (probe + per-trace id counts), faults.tar.gz, run.log,
# rows.csv, stats.jsonl, floor.txt, calib.tar.gz (specbench), torchcal.tar.gz.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call5.sh
set -u
OUT=${OUT:-/tmp/call5}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call5.XXXXXX)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
echo "=== call5 start $(date -u +%T)" | tee -a "$OUT/run.log"
make -k -j16 bin/corr_probe bin/specprof bin/libspecprof.so bin/fault_demo bin/libfloor.so bin/specbench > $W/build.log 2>&1 \
  || { echo "BUILD FAILED"; tail -30 $W/build.log; }
tail -3 $W/build.log >> "$OUT/run.log"
echo "=== corr_probe ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
for v in kinds percbid percbid_cb apistay kindrt detach; do
  timeout 30 bin/corr_probe $v 4 400 >> "$OUT/corr.txt" 2>&1; echo "rc $v $?" >> "$OUT/corr.txt"
done
cat "$OUT/corr.txt" | tee -a "$OUT/run.log"
echo "=== faults ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
OUT=$W/faults timeout 200 bash profiler/device/faults.sh > $W/faults.stdout 2>&1
cat $W/faults/faults.txt 2>/dev/null | tee -a "$OUT/run.log"
(cd $W && tar czf "$OUT/faults.tar.gz" faults faults.stdout)
echo "=== torch calibration captures ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
SPECPROF_API_BETWEEN=1 OUT=$W/torchcal PLAN="calib:torch-dense:windows calib:torch-moe:windows" CALIB_SECONDS=0.04 \
  CALIB_MIN_ITERS=8 timeout 150 bash profiler/device/torch_truth.sh > $W/tt1.out 2>&1
OUT=$W/torchcal PLAN="calib:torch-dense:always" CALIB_SECONDS=0.04 CALIB_MIN_ITERS=8 timeout 90 \
  bash profiler/device/torch_truth.sh > $W/tt2.out 2>&1
grep -E "^===|calib_|complete|INCOMPLETE|records" $W/torchcal/run.log | head -40 | tee -a "$OUT/run.log"
for f in $W/torchcal/calib_*.json.gz; do
  python3 - "$f" >> "$OUT/corr.txt" 2>&1 <<'PY'
import gzip, json, sys
k, ids, api, aids = 0, set(), 0, set()
for line in gzip.open(sys.argv[1], "rt"):
    line = line.strip().rstrip(",")
    if not line.startswith("{"): continue
    try: e = json.loads(line)
    except ValueError: continue
    c = e.get("cat")
    if c == "kernel": k += 1; ids.add(e["args"].get("corr"))
    elif c == "api": api += 1; aids.add(e["args"].get("corr"))
print(f"{sys.argv[1].split('/')[-1]} kernels {k} distinct_corr {len(ids)} api {api} distinct_api_corr {len(aids)}")
PY
done
(cd $W && tar czf "$OUT/torchcal.tar.gz" torchcal)
echo "=== overhead ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
mkdir -p $W/ov
OUT=$W/ov RUN_LIMIT_S=${OV_LIMIT_S:-300} ROUNDS=3 SAMPLES=0 SKIP_EAGER_SMOKE=1 SMOKE_S=1 \
  CALIB_ENV=SPECPROF_API_BETWEEN=1 CALIB_ARGS="--mode windows" LOOPS="sb_decode_c1 tb eager_plain" \
  MODES_sb_decode_c1="none always win winapi" MODES_tb="none always winapi" MODES_eager_plain="none floor always win winapi" \
  SB_REPEATS=5 TB_REPEATS=4 EL_RUNS=4 bash profiler/device/overhead_run.sh > $W/ov.stdout 2>&1
cat $W/ov/run.log >> "$OUT/run.log"
cat $W/ov/corr.txt >> "$OUT/corr.txt"
for f in rows.csv stats.jsonl floor.txt calib.tar.gz; do cp $W/ov/$f "$OUT/" 2>/dev/null; done
echo "=== done ($(date -u +%T), ${SECONDS}s)" | tee -a "$OUT/run.log"
ls -la "$OUT"
