#!/bin/bash
# call34.sh: the eager probe (specprof --mode lite --probe-eager N: the first N instances of
# each eager phase shape run with their stream held and an event pair around each kernel
# launch; docs/profiler.md "The eager probe") on real programs, in device commands:
#   PART=shares   do the probe's kernel times agree with CUPTI's?
#     1. torchbench's eager loop (torch-dense --disable-cuda-graph; plain decode and chain spec
#        steps 3 at 1 and 13 rows) under --mode lite --probe-eager 3 and, in another process,
#        --mode always (CUPTI's kernel records); joined on the CPU by eager_compare.py (phase
#        shape, kernel names);
#     2. the graph loop (torch-dense with graphs: its eager phases are sample, accept and the
#        spec loop's small ones) under --probe-eager 3 --probe-nodes 3, against always;
#     specprof check of each trace.
#   PART=grid     call 28's design (call16.sh: the eager loop and the graph loop, the calibration
#     subset captured in the grid's own lite process, node-level references in others) with
#     --probe-eager 3 --probe-nodes 3 in the lite process, after a smoke run of the eager probe;
#     files as call16.sh's.
#   PART=overhead what the probe costs: overhead_run.sh's tbe (the eager loop, 1 row, decode and
#     spec) and tb (graph loop, 1 and 13 rows), processes alternating none / lite / peager,
#     first run of each process dropped (overhead_tables.py).
# Files to $OUT: shares: run.log, compare.txt, tbe_probe.json.gz, tbe_always.json.gz,
#   tbg_probe.json.gz, tbg_always.json.gz; overhead: run.log, rows.csv, stats.jsonl.
# usage (GPU machine, repo root): PART=shares OUT=/dir bash profiler/device/call34.sh
set -u
cd "$(dirname "$0")/../.."
PART=${PART:-shares}
OUT=${OUT:-/tmp/call34}
mkdir -p "$OUT"
if [ "$PART" = overhead ]; then
  M="${MODES:-none lite peager}"
  MODES_tbe="$M" MODES_tb="$M" LOOPS="${LOOPS:-tbe tb}" ROUNDS=${ROUNDS:-4} SKIP_CALIB=1 \
    SKIP_EAGER_SMOKE=1 SAMPLES=0 TB_REPEATS=${TB_REPEATS:-4} RUN_LIMIT_S=${RUN_LIMIT_S:-540} \
    OUT="$OUT" bash profiler/device/overhead_run.sh
  exit $?
fi
if [ "$PART" = grid ]; then
  # call 28's design (call16.sh) with both probes on in the grid's own lite process: the
  # eager loop and the graph loop, their calibration subsets captured in every repeat, the
  # node-level references (always) in other processes; first a smoke run of the eager probe
  # on the eager loop (if it fails, the grid runs with the node probe alone). The grid's lite
  # captures hold the probes' events, the references CUPTI's records of the same points: the
  # shares comparison (eager_compare.py) is made on the CPU from them.
  LOG=$OUT/run.log; W=$(mktemp -d /tmp/call34g.XXXXXX)
  SP=$PWD/bin/specprof; TB="python3 $PWD/profiler/bench/torchbench.py"
  echo "=== smoke: the eager probe on the eager loop ($(date -u +%T))" | tee -a "$LOG"
  timeout 90 $SP -o $W/smoke --mode lite --probe-eager 2 -- $TB --preset torch-dense --disable-cuda-graph \
    --mode baseline,spec --steps 3 --concurrency 1,4 --prompt-len 1024 --output-len 256 --seed 1 --warmup 2 \
    --seconds 0.1 --repeats 1 > $W/smoke.out 2>&1
  rc=$?; echo "smoke rc $rc" | tee -a "$LOG"; tail -4 $W/smoke.out | tee -a "$LOG"
  f=$(ls $W/smoke/specprof.rank*.json* 2>/dev/null | head -1)
  n=0; [ -n "$f" ] && { $SP check "$f" 2>&1 | grep -E "^eager probe|^lite|^INCOMPLETE|^complete" | tee -a "$LOG"
                        n=$(zcat -f "$f" | grep -c '"cat":"eager_probe"'); }
  echo "smoke eager_probe events: $n" | tee -a "$LOG"
  EX="--probe-eager 3 --probe-nodes 3"
  [ $rc = 0 ] && [ "$n" -gt 0 ] || { EX="--probe-nodes 3"; echo "EAGER PROBE FAILED: the grid runs with the node probe alone" | tee -a "$LOG"; }
  RUN_LIMIT_S=$(( ${GRID_LIMIT_S:-470} - SECONDS )) LITE_EXTRA="$EX" CALIB_STEPS=${CALIB_STEPS:-2,4,5} OUT=$OUT \
    bash profiler/device/call16.sh
  exit $?
fi
W=$(mktemp -d /tmp/call34.XXXXXX)
LOG=$OUT/run.log
export PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$LOG"
step "build"
for b in bin/specprof bin/libspecprof.so; do
  [ -f $b ] && ldd $b 2>&1 | grep -q "not found" && rm -f $b
  [ -f $b ] || make -j"$(nproc)" $b >> $W/build.log 2>&1 || { echo "BUILD $b FAILED" | tee -a "$LOG"; tail -20 $W/build.log | tee -a "$LOG"; }
done
SP=$PWD/bin/specprof
TB="python3 $PWD/profiler/bench/torchbench.py"
COMMON="--preset torch-dense --mode baseline,spec --steps 3 --alpha 0.7 --concurrency 1,13 --prompt-len 1024 --output-len 256 --seed 1 --warmup 3 --seconds ${SECS:-0.2} --repeats 1"
# pair NAME EXTRA_TB_ARGS PROBE_OPTS: the same points under the probe and under always
pair() {
  local m opt f
  for m in probe always; do
    opt="--mode always"; [ $m = probe ] && opt="--mode lite $3"
    timeout ${TB_TIMEOUT_S:-150} $SP -o $W/$1$m $opt -- $TB $COMMON $2 --csv $W/$1$m.csv > $W/$1$m.out 2>&1
    echo "$1 $m rc $?" | tee -a "$LOG"
    grep -E "note from|Error|error|Traceback|timed out" $W/$1$m.out | head -5 | tee -a "$LOG"
    f=$(ls $W/$1$m/specprof.rank*.json* 2>/dev/null | head -1)
    [ -n "$f" ] && { $SP check "$f" 2>&1 | grep -E "^eager probe|^node probe|^lite|^kernels|^INCOMPLETE|^complete|^file" | tee -a "$LOG"
                     cp "$f" $OUT/$1_$m.json.gz; }
    cut -d, -f1-14 $W/$1$m.csv 2>/dev/null | tee -a "$LOG"
  done
  [ -f $OUT/$1_probe.json.gz ] && [ -f $OUT/$1_always.json.gz ] &&
    python3 profiler/device/eager_compare.py $OUT/$1_probe.json.gz $OUT/$1_always.json.gz "$1" 2>&1 | tee -a $OUT/compare.txt | tee -a "$LOG"
}
step "1. the eager loop: lite + eager probe, then always"
pair tbe "--disable-cuda-graph" "--probe-eager 3"
step "2. the graph loop: lite + both probes, then always"
pair tbg "--cuda-graph-max-bs 64" "--probe-eager 3 --probe-nodes 3"
ls -la $OUT | tee -a "$LOG"
step "done"
