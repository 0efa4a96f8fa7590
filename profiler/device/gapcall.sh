#!/bin/bash
# gapcall.sh: one device call (~3 min) for issue 13: the GPU idle between a forward's kernels,
# eager against a CUDA graph, unprofiled and under specprof --mode always
# (profiler/bench/gapprobe.py: torchbench's target and draft forwards, each replayed from a
# graph and launched eagerly behind a spin kernel, and launched eagerly on an idle stream).
# Processes alternate unprofiled / profiled, N_PROC of each.
# Results ($OUT): run.log; gap.csv (every timed forward); gap_always.json.gz (the first profiled
# process's trace: CUPTI's view of the same forwards).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/gapcall.sh
set -u
OUT=${OUT:-/tmp/gapcall}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/gapcall.XXXXXX)
LOG=$OUT/run.log
N_PROC=${N_PROC:-3}
export PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
make -j"$(nproc)" bin/specprof bin/libspecprof.so > $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
SP=$PWD/bin/specprof
GP="python3 $PWD/profiler/bench/gapprobe.py --csv $OUT/gap.csv"
for i in $(seq 1 "$N_PROC"); do
  step "process $i: unprofiled"
  timeout 150 $GP --tag none$i 2>&1 | tee -a "$LOG"
  step "process $i: specprof --mode always"
  rm -rf "$W/sp$i"
  timeout 150 $SP -o "$W/sp$i" --quiet -- $GP --tag always$i 2>&1 | tee -a "$LOG"
  f=$(ls "$W/sp$i"/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then
    $SP check "$f" 2>&1 | sed -n 1,6p | tee -a "$LOG"
    [ "$i" = 1 ] && cp "$f" "$OUT/gap_always.json.gz"
  else
    echo "NO TRACE in $W/sp$i" | tee -a "$LOG"
  fi
done
# SB=1: specbench's llama8b (C, its own kernels) at 40 rows (graph 64) and 80 rows (eager),
# steps 2 and plain decode, unprofiled and under specprof always, alternating: what CUPTI adds
# to its eager and graph phases (verify_us, decode_us) in one call
if [ "${SB:-0}" = 1 ]; then
  step "specbench build"
  make -j"$(nproc)" bin/specbench > $W/sbbuild.log 2>&1 || tail -20 $W/sbbuild.log | tee -a "$LOG"
  SBA="--preset llama8b --mode spec,baseline --steps 2 --alpha 0.7 --concurrency 40,80 --prompt-len 1024
       --output-len 256 --cuda-graph-bs 1,2,8,24,64 --seed 1 --warmup 3 --seconds 0.3 --min-iters 6 --repeats 2"
  for i in $(seq 1 "$N_PROC"); do
    step "specbench $i: unprofiled"
    timeout 120 bin/specbench $SBA --csv $W/sb_none$i.csv > $W/sb_none$i.out 2>&1 || tail -5 $W/sb_none$i.out | tee -a "$LOG"
    step "specbench $i: specprof --mode always"
    rm -rf "$W/sbp$i"
    timeout 120 $SP -o "$W/sbp$i" --quiet -- bin/specbench $SBA --csv $W/sb_always$i.csv > $W/sb_always$i.out 2>&1 || tail -5 $W/sb_always$i.out | tee -a "$LOG"
  done
  # one table: the first file's header with a tag column, each run's rows tagged by its file
  files=""
  for f in $W/sb_none*.csv $W/sb_always*.csv; do [ -f "$f" ] && files="$files $f"; done
  awk -F, 'FNR == 1 { if (NR == 1) print "tag," $0; next }
           { t = FILENAME; sub(/.*\//, "", t); sub(/\.csv$/, "", t); print t "," $0 }' \
    $files < /dev/null > "$OUT/specbench.csv"
  awk -F, 'NR > 1 { print $1, $3, $8, $15, $18, $12 }' "$OUT/specbench.csv" | tee -a "$LOG"
fi
step "done"
ls -l "$OUT" | tee -a "$LOG"
