#!/bin/bash
# call24.sh: one device call (<= 590 s) for issues 13, 15 and 20: does a lite capture slow the
# host now and then, where the mean cost is ~0.1-1% (traces/overhead/h200-lite)?
# Why: the lite fits of calls 17-23 draw host stalls (eager verify instances 2-9x their median
# launch rate, ~6% of call 23's 80-row verify instances) that their held-out 80-row rows did not
# show (call 23's steps 1 at 80 rows, 24 windows, none slow: predicted 12-13% slow), and the
# grids' captured windows (range-on) were slow more often than the others (range-off) in calls
# 17, 19, 21, 22, 23 (1.5-3.6x) - but those were other configurations. Here the same
# configurations are measured three ways, alternating: captured and not captured inside one lite
# process (torchbench --capture-ab: every point twice a repeat, the order alternating), and in a
# process with no profiler at all.
# Points: torchbench torch-dense, CUDA graphs up to 64 rows (SGLang's list), spec steps 1, 2, 5 at
# alpha 0.7 and plain decode, at 33 rows (a graph replay) and 80 (eager); 0.1 s windows.
# Results ($OUT): run.log; ab_1.csv, ab_2.csv (lite processes, profiler range-on / range-off);
# none_1.csv, none_2.csv (unprofiled processes, profiler none); lite_1.json.gz, lite_2.json.gz (the
# captures). Tables: python3 profiler/device/call24_tables.py DIR
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call24.sh   (RUN_LIMIT_S 560)
set -u
CALL=call24 CALL_LIMIT_S=560
. "$(dirname "$0")/preamble.sh"
ARGS="--preset torch-dense --prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64
  --mode spec,baseline --steps 1,2,5 --alpha 0.7 --concurrency 33,80 --warmup 1 --seconds 0.1
  --min-iters 8 --repeats 200 --discard-first"
for i in 1 2; do
  b=$(( ($(left) - 40) / (2 * (3 - i)) )); [ $b -gt 95 ] && b=95
  step "round $i: lite process, every point captured and not ($b s)"
  timeout $(( b + 60 )) $SP --quiet --mode lite --capture-range profiler-api -o $W/ab$i -- \
    $TB $ARGS --time-budget $b --capture-ab --csv $OUT/ab_$i.csv > $W/ab$i.out 2>&1
  echo "rc=$? rows $(( $(wc -l < $OUT/ab_$i.csv) - 1 ))" | tee -a "$LOG"; tail -2 $W/ab$i.out | tee -a "$LOG"
  f=$(ls $W/ab$i/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then $SP check "$f" 2>&1 | sed -n 1,6p | tee -a "$LOG"; cp "$f" $OUT/lite_$i.json.gz; fi
  b=$(( ($(left) - 30) / (2 * (3 - i) - 1) )); [ $b -gt 95 ] && b=95
  step "round $i: unprofiled process ($b s)"
  timeout $(( b + 60 )) $TB $ARGS --time-budget $b --csv $OUT/none_$i.csv > $W/none$i.out 2>&1
  echo "rc=$? rows $(( $(wc -l < $OUT/none_$i.csv) - 1 ))" | tee -a "$LOG"; tail -2 $W/none$i.out | tee -a "$LOG"
done
step "done"
ls -la "$OUT" | tee -a "$LOG"
