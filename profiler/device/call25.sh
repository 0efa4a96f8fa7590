#!/bin/bash
# call25.sh: one device call (<= 480 s) for issues 20 and 13: what specprof's always mode costs
# an eager PyTorch loop when CUPTI follows the driver API only (SPECPROF_API_DOMAIN=driver: no
# runtime-API callback or record; the runtime's launches reach the driver's cuLaunchKernel, whose
# records specprof keeps), against the default (runtime and driver API), the floor (a bare CUPTI
# subscriber with kernel activity only, bin/libfloor.so) and no profiler.
# Why: an always-mode capture of the eager loop reads its host 13-17% slower than a lite one
# (docs/profiler.md: eager launch 29.8 against 24.8 us a kernel on call 16), which the fit's
# per-launch calibration (the driver's cuLaunchKernel on/off, 0.5-1.8 us) does not take out; the
# earlier calls measured that following ANY runtime API costs the loop ~25-31% (CUPTI's per-call
# instrumentation of the runtime's ~10 calls a kernel), kernel activity alone less.
# Loops: torchbench dense, CUDA graphs off, 1 row, plain decode and spec steps 3 at alpha 0.7
# (0.4 s repeats); processes alternating mode by mode, ROUNDS rounds; then specbench llama8b
# decode at concurrency 1 (nvcc's static runtime) once per profiled mode, for the trace's health.
# MODES (default "none always drv floor") and ROUNDS (4) choose the processes (call 27: MODES="none
# always" ROUNDS=3, after the calibration's clean arm, pclean.h).
# Results ($OUT): run.log; rows.csv (loop,mode,round,rep,tok_s); tbe_always.json.gz,
# tbe_drv.json.gz (round 1's captures); checks.txt (specprof check of every capture).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call25.sh   (RUN_LIMIT_S 480)
set -u
CALL=call25 CALL_LIMIT_S=480
. "$(dirname "$0")/preamble.sh"
make -j"$(nproc)" bin/libfloor.so bin/specbench >> $W/build.log 2>&1 || tail -20 $W/build.log | tee -a "$LOG"
FLOOR=$PWD/bin/libfloor.so
ROUNDS=${ROUNDS:-4}
echo "loop,mode,round,rep,tok_s" > $OUT/rows.csv
: > $OUT/checks.txt
ARGS="--preset torch-dense --disable-cuda-graph --mode baseline,spec --steps 3 --alpha 0.7 --concurrency 1
  --prompt-len 1024 --output-len 256 --seed 1 --warmup 3 --seconds 0.4 --repeats 3"
run_one() {   # mode round
  local mode=$1 r=$2 pre="" d=$W/t_${1}_$2
  case $mode in
    none) pre="" ;;
    floor) pre="env CUDA_INJECTION64_PATH=$FLOOR FLOOR_OUT=$W/floor.txt" ;;
    always) pre="$SP -o $d --quiet --mode always --" ;;
    drv) pre="env SPECPROF_API_DOMAIN=driver $SP -o $d --quiet --mode always --" ;;
  esac
  rm -f $W/tb.csv
  timeout 90 $pre $TB $ARGS --csv $W/tb.csv > $W/p_${mode}_$r.out 2>&1
  local rc=$?
  awk -F, -v m=$mode -v r=$r 'NR==1{for(i=1;i<=NF;i++){if($i=="tok_s")c=i; if($i=="rep")q=i; if($i=="mode")o=i}}
    NR>1{print ($o=="baseline"?"tbe_decode":"tbe_spec")","m","r","$q","$c}' $W/tb.csv >> $OUT/rows.csv 2>/dev/null
  echo "$mode round $r rc=$rc: $(grep ",$mode,$r," $OUT/rows.csv | cut -d, -f1,5 | tr '\n' ' ')" | tee -a "$LOG"
  [ $rc = 0 ] || tail -5 $W/p_${mode}_$r.out | tee -a "$LOG"
  local f=$(ls $d/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then
    { echo "== tbe $mode round $r: $(stat -c %s "$f") bytes"; $SP check "$f" 2>&1 | head -30; } >> $OUT/checks.txt
    [ $r = 1 ] && cp "$f" $OUT/tbe_$mode.json.gz
  fi
  rm -rf $d
}
for r in $(seq 1 $ROUNDS); do
  [ $(left) -lt 90 ] && { echo "time: stopping before round $r" | tee -a "$LOG"; break; }
  step "round $r"
  for m in ${MODES:-none always drv floor}; do run_one $m $r; done
done
step "specbench decode c1 (static runtime): always and driver-only"
for m in always drv; do
  [ $(left) -lt 30 ] && break
  pre="$SP -o $W/sb_$m --quiet --mode always --"; [ $m = drv ] && pre="env SPECPROF_API_DOMAIN=driver $pre"
  timeout 60 $pre bin/specbench --preset llama8b --mode baseline --concurrency 1 --prompt-len 1024:1024 \
    --output-len 256:256 --warmup 10 --seconds 1 --repeats 2 --csv $W/sb_$m.csv > $W/sb_$m.out 2>&1
  echo "specbench $m rc=$?: $(awk -F, 'NR==1{for(i=1;i<=NF;i++)if($i=="tok_s")c=i} NR>1{printf "%s ", $c}' $W/sb_$m.csv 2>/dev/null)" | tee -a "$LOG"
  f=$(ls $W/sb_$m/specprof.rank*.json* 2>/dev/null | head -1)
  [ -n "$f" ] && { echo "== specbench $m"; $SP check "$f" 2>&1 | head -30; } >> $OUT/checks.txt
done
step "done"
ls -la "$OUT" | tee -a "$LOG"
