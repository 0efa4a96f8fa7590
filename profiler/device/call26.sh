#!/bin/bash
# call26.sh: one short device call (<= 200 s) for issue 20: what CUPTI adds to one kernel launch
# by the kind of kernel (profiler/demo/launch_probe.cu: no parameter, 256 B / 1 KB / 4 KB of
# parameters, 64 distinct functions in turn, runtime calls around each launch), with no profiler,
# under the floor (bin/libfloor.so: kernel activity only) and under specprof --mode always,
# processes alternating, ROUNDS rounds.
# Why: call 25 measured always mode at 2.8 us a kernel and the floor at 2.0 us a kernel on
# torchbench's eager loop (H100), where specprof's calibration (an empty kernel) says 0.53 us.
# Results ($OUT): run.log; probe.csv (round,mode,kind,median_ns,p10_ns,p90_ns).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call26.sh   (RUN_LIMIT_S 200)
set -u
CALL=call26 CALL_LIMIT_S=200
. "$(dirname "$0")/preamble.sh"
make -j"$(nproc)" bin/libfloor.so bin/launch_probe >> $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
echo "round,mode,kind,median_ns,p10_ns,p90_ns" > $OUT/probe.csv
for r in $(seq 1 ${ROUNDS:-3}); do
  for m in none floor always; do
    case $m in
      none) pre="" ;;
      floor) pre="env CUDA_INJECTION64_PATH=$PWD/bin/libfloor.so FLOOR_OUT=$W/floor.txt" ;;
      always) pre="$SP -o $W/t_$r --quiet --mode always --" ;;
    esac
    timeout 60 $pre bin/launch_probe ${BATCHES:-1000} ${PER:-32} > $W/p.out 2>&1
    echo "round $r $m rc=$?: $(awk '$1=="kind"{printf "%s %s  ", $2, $3}' $W/p.out)" | tee -a "$LOG"
    awk -v r=$r -v m=$m '$1=="kind"{print r","m","$2","$3","$4","$5}' $W/p.out >> $OUT/probe.csv
    [ $m = always ] && { f=$(ls $W/t_$r/specprof.rank*.json* 2>/dev/null | head -1); [ -n "$f" ] && [ $r = 1 ] && $SP check "$f" 2>&1 | sed -n 6,7p | tee -a "$LOG"; }
  done
done
step "done"
