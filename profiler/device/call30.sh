#!/bin/bash
# call30.sh: one short device call (<= 200 s) for issue 20: does CUPTI's cost per launch depend
# on what the host does between launches? specprof's calibration (and its clean arm) time launches
# back to back and read 0.14-0.63 us of CUPTI a launch, where an eager PyTorch loop, which runs
# ~15 us of Python between two launches, loses 2.8-3.2 us a kernel under specprof (calls 25, 29).
# profiler/demo/launch_probe.cu's per-launch kinds: each (back to back), spin (15 us of CPU work
# touching no memory between launches), sweep (15 us reading and writing an 8 MB buffer), drv and
# drvsweep (the driver's cuLaunchKernel, as the calibration launches, back to back and swept), beside
# the batch kinds of call 26; with no profiler, under the floor (kernel activity only) and under
# specprof --mode always, processes alternating, ROUNDS rounds; the always captures' calibration
# (in-process and clean arm) beside them.
# Results ($OUT): run.log; probe.csv (round,mode,kind,median_ns,p10_ns,p90_ns); calib.csv
# (round,launch_off_us,launch_on_us,launch_clean_us).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call30.sh   (RUN_LIMIT_S 200)
set -u
CALL=call30 CALL_LIMIT_S=200
. "$(dirname "$0")/preamble.sh"
make -j"$(nproc)" bin/libfloor.so bin/launch_probe >> $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
echo "round,mode,kind,median_ns,p10_ns,p90_ns" > $OUT/probe.csv
echo "round,launch_off_us,launch_on_us,launch_clean_us" > $OUT/calib.csv
for r in $(seq 1 ${ROUNDS:-4}); do
  for m in none always floor; do
    [ "$(left)" -lt 20 ] && { step "round $r $m skipped (time)"; continue; }
    case $m in
      none) pre="" ;;
      floor) pre="env CUDA_INJECTION64_PATH=$PWD/bin/libfloor.so FLOOR_OUT=$W/floor.txt" ;;
      always) pre="$SP -o $W/t_$r --quiet --mode always --" ;;
    esac
    timeout 60 $pre bin/launch_probe ${BATCHES:-300} ${PER:-32} ${GAP_US:-15} > $W/p.out 2>&1
    echo "round $r $m rc=$?: $(awk '$1=="kind"{printf "%s %s  ", $2, $3}' $W/p.out)" | tee -a "$LOG"
    awk -v r=$r -v m=$m '$1=="kind"{print r","m","$2","$3","$4","$5}' $W/p.out >> $OUT/probe.csv
    if [ $m = always ]; then
      f=$(ls $W/t_$r/specprof.rank*.json* 2>/dev/null | head -1)
      [ -n "$f" ] && zcat -f "$f" | grep -o '"calibration":{"ok":true[^}]*}' | tail -1 |
        awk -v r=$r '{ match($0, /"launch_off_us":[0-9.]+/); a = substr($0, RSTART + 16, RLENGTH - 16)
          match($0, /"launch_on_us":[0-9.]+/); b = substr($0, RSTART + 15, RLENGTH - 15)
          match($0, /"launch_clean_us":[0-9.]+/); c = substr($0, RSTART + 18, RLENGTH - 18)
          print r "," a "," b "," c }' | tee -a $OUT/calib.csv | tee -a "$LOG"
    fi
  done
done
step "done"
