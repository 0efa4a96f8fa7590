#!/bin/bash
# call13.sh: one short device call (H200) for issue 13's plain-decode bias at 2 rows: call 9's
# grid measured torch-dense's decode graph at 2 rows 126 us slower than at 1 and 22 us slower
# than at 4 (CUDA events around the phase), which no smooth fit of the calibration rows (1, 4,
# 15, 33, 80) can know. A node-level capture (specprof --mode always) of plain decode at 1, 2, 3,
# 4 and 8 rows says which kernels do it.
# Results ($OUT): run.log; decode_rows.json.gz (the capture); decode_rows.csv (what torchbench
# measured under it); unprof.csv (the same points unprofiled, same process order).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call13.sh
set -u
OUT=${OUT:-/tmp/call13}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call13.XXXXXX)
LOG=$OUT/run.log
export PYTHONUNBUFFERED=1
make -j"$(nproc)" bin/specprof bin/libspecprof.so > $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
TB="python3 $PWD/profiler/bench/torchbench.py"
ARGS="--preset torch-dense --mode baseline --concurrency 1,2,3,4,8 --prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64 --warmup 3 --seconds 0.15 --repeats 3"
timeout 120 $TB $ARGS --csv $OUT/unprof.csv > $W/u.out 2>&1; echo "unprofiled rc=$?" | tee -a "$LOG"
timeout 150 bin/specprof -o $W/cap --quiet --mode always -- $TB $ARGS --csv $OUT/decode_rows.csv > $W/c.out 2>&1
echo "capture rc=$?" | tee -a "$LOG"
f=$(ls $W/cap/specprof.rank*.json* | head -1)
bin/specprof check "$f" 2>&1 | head -12 | tee -a "$LOG"
cp "$f" "$OUT/decode_rows.json.gz"
ls -la "$OUT" | tee -a "$LOG"
