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
# Then the same question on torchbench: its plain decode at 80 rows (eager, above the largest
# graph: host-bound), unprofiled and under specprof --mode always, alternating, ROUNDS rounds:
# what a kernel costs captured against the calibration's arms, back to back and swept (the
# calibration's swept arms, pcalib_ptx.h, new with this call).
# Results ($OUT): run.log; probe.csv (round,mode,kind,median_ns,p10_ns,p90_ns); calib.csv
# (round,what,launch_off_us,launch_on_us,launch_clean_us,launch_off_swept_us,launch_on_swept_us,
# launch_clean_swept_us); torch.csv (torchbench's rows; the last column, run, says none-R or always-R).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call30.sh   (RUN_LIMIT_S 200)
set -u
CALL=call30 CALL_LIMIT_S=200
. "$(dirname "$0")/preamble.sh"
make -j"$(nproc)" bin/libfloor.so bin/launch_probe >> $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
echo "round,mode,kind,median_ns,p10_ns,p90_ns" > $OUT/probe.csv
echo "round,what,launch_off_us,launch_on_us,launch_clean_us,launch_off_swept_us,launch_on_swept_us,launch_clean_swept_us" > $OUT/calib.csv
calib_row() {   # calib_row ROUND WHAT TRACE_DIR
  local f
  f=$(ls $3/specprof.rank*.json* 2>/dev/null | head -1)
  [ -n "$f" ] || { echo "$1 $2: no trace" | tee -a "$LOG"; return; }
  zcat -f "$f" | grep -o '"calibration":{"ok":true[^}]*}' | tail -1 | awk -v r=$1 -v w=$2 '
    function num(k,   m) { if (match($0, "\"" k "\":[-0-9.]+")) return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3); return "" }
    { print r "," w "," num("launch_off_us") "," num("launch_on_us") "," num("launch_clean_us") "," num("launch_off_swept_us") "," num("launch_on_swept_us") "," num("launch_clean_swept_us") }' |
    tee -a $OUT/calib.csv | tee -a "$LOG"
}
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
    [ $m = always ] && calib_row $r probe $W/t_$r
  done
done
step "torchbench plain decode at 80 rows (eager)"
TBARGS="--preset torch-dense --mode baseline --concurrency 80 --prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64 --warmup 3 --seconds 0.3 --min-iters 20 --repeats 3"
for r in $(seq 1 ${ROUNDS:-4}); do
  for m in none always; do
    [ "$(left)" -lt 25 ] && { step "torch round $r $m skipped (time)"; continue; }
    case $m in
      none) pre="" ;;
      always) pre="$SP -o $W/tb_$r --quiet --mode always --" ;;
    esac
    timeout 60 $pre $TB $TBARGS --csv $W/tb_${r}_$m.csv > $W/tb.out 2>&1
    echo "torch round $r $m rc=$?: iter_us $(awk -F, 'NR>1{printf "%s ", $11}' $W/tb_${r}_$m.csv 2>/dev/null)" | tee -a "$LOG"
    [ -f $OUT/torch.csv ] || head -1 $W/tb_${r}_$m.csv 2>/dev/null | sed "s/\$/,run/" > $OUT/torch.csv
    tail -n +2 $W/tb_${r}_$m.csv 2>/dev/null | sed "s/\$/,$m-$r/" >> $OUT/torch.csv
    [ $m = always ] && calib_row $r torch $W/tb_$r
  done
done
[ -f $W/tb_1/specprof.rank0.json.gz ] && $SP check $W/tb_1/specprof.rank0.json.gz 2>&1 | grep -i "calib\|records" | tee -a "$LOG"
step "done"
