#!/bin/bash
# overhead_run.sh: one device call (H200) for issues 15 and 20: what specprof costs, by mode,
# on four loops, alternating processes, against a bare CUPTI subscriber (bin/libfloor.so):
#   eager_plain   profiler/bench/eager_loop.py, batch 1, plain decode (PyTorch eager)
#   eager_spec    the same with a 2-layer draft proposing 4 tokens
#   sb_decode_c1  specbench llama8b plain decode at concurrency 1 (CUDA graphs; host waits each launch)
#   sb_spec_c16   specbench llama8b chain steps 3, alpha 0.7, concurrency 16
# and the calibration subset captured in specprof's default mode (capture_run.sh).
# Every process runs several timed runs; its first is dropped when the tables are made
# (profiler/device/overhead_tables.py, on the CPU). Results to $OUT (8 files at most):
#   run.log      everything printed            rows.csv   loop,mode,round,run,tok_s (every run)
#   stats.jsonl  specprof check --json of every trace (records, bytes, windows, calibration)
#   floor.txt    libfloor's record counts       calib.tar.gz   the calibration capture (traces/calib-windowed)
#   samples.tar.gz  one default-mode trace of each loop
# usage (GPU machine, repo root): OUT=/tmp/x RUN_LIMIT_S=330 bash profiler/device/overhead_run.sh
#   env: ROUNDS (default 3), SKIP_CALIB=1, LOOPS (default "eager_plain eager_spec sb_decode_c1 sb_spec_c16")
# modes: none; floor (bin/libfloor.so: kernel activity only), floor_api / floor_cb (plus every
# runtime API record / an empty callback on every runtime API); specprof (the default);
# nograph (--between none: the default since call 1, kept for old tables); always (--mode always).
# A call takes ~400 s with ROUNDS=3 (call 1: 325 s for 2 rounds of the old mode list).
set -u
OUT=${OUT:-/tmp/overhead}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/overhead.XXXXXX)
LOG=$OUT/run.log
LIMIT=${RUN_LIMIT_S:-330}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
left() { echo $(( LIMIT - SECONDS )); }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv 2>&1 | tee -a "$LOG"
step "build"
make -j"$(nproc)" bin/specbench bin/libfloor.so >> "$LOG" 2>&1 || echo "BUILD specbench/libfloor FAILED" | tee -a "$LOG"
if ! make -j"$(nproc)" bin/libspecprof.so bin/specprof >> "$LOG" 2>&1; then
  echo "build of libspecprof.so/specprof failed here (zlib headers?): using the ones built on the CPU box" | tee -a "$LOG"
  cp prebuilt/libspecprof.so prebuilt/specprof bin/ 2>&1 | tee -a "$LOG"
fi
ls -la bin | tee -a "$LOG"
SP=$PWD/bin/specprof; SB=$PWD/bin/specbench; FLOOR=$PWD/bin/libfloor.so
EL="python3 $PWD/profiler/bench/eager_loop.py"
COMMON="--prompt-len 1024 --output-len 256 --cuda-graph-bs 1,2,8,24,64 --seed 1"
echo "loop,mode,round,run,tok_s" > "$OUT/rows.csv"
: > "$OUT/stats.jsonl"
: > "$OUT/floor.txt"
mkdir -p $W/t $W/samples

# one process of LOOP under MODE; its runs go to rows.csv
run_one() {
  local loop=$1 mode=$2 round=$3 pre="" tdir=$W/t/$1.$2.$3
  case $mode in
    none) pre="" ;;
    floor) pre="env CUDA_INJECTION64_PATH=$FLOOR FLOOR_OUT=$OUT/floor.txt" ;;
    floor_api) pre="env CUDA_INJECTION64_PATH=$FLOOR FLOOR_OUT=$OUT/floor.txt FLOOR_API=1" ;;
    floor_cb) pre="env CUDA_INJECTION64_PATH=$FLOOR FLOOR_OUT=$OUT/floor.txt FLOOR_CB=1" ;;
    specprof) pre="$SP -o $tdir --quiet --" ;;
    nograph) pre="$SP -o $tdir --quiet --between none --" ;;
    graph) pre="$SP -o $tdir --quiet --between graph --" ;;
    always) pre="$SP -o $tdir --quiet --mode always --" ;;
  esac
  [ "${mode#floor}" != "$mode" ] && echo "$loop $mode $round" >> "$OUT/floor.txt"
  local t0=$SECONDS
  case $loop in
    eager_plain|eager_spec)
      local spec=0; [ $loop = eager_spec ] && spec=4
      timeout 60 $pre $EL --spec-tokens $spec --runs 4 --tokens 64 > $W/p.out 2>&1
      awk -v l=$loop -v m=$mode -v r=$round '$1=="run"{print l","m","r","$2","$8}' $W/p.out >> "$OUT/rows.csv" ;;
    sb_decode_c1|sb_spec_c16)
      local args="--mode baseline --concurrency 1"
      [ $loop = sb_spec_c16 ] && args="--mode spec --steps 3 --alpha 0.7 --concurrency 16"
      rm -f $W/sb.csv
      timeout 60 $pre $SB --preset llama8b $args $COMMON --warmup 10 --seconds 1 --repeats 4 --csv $W/sb.csv > $W/p.out 2>&1
      awk -F, -v l=$loop -v m=$mode -v r=$round 'NR==1{for(i=1;i<=NF;i++){if($i=="tok_s")c=i; if($i=="rep")q=i}} NR>1{print l","m","r","$q","$c}' \
        $W/sb.csv >> "$OUT/rows.csv" 2>/dev/null ;;
  esac
  local n=$(grep -c "^$loop,$mode,$round," "$OUT/rows.csv")
  echo "$loop $mode round $round: $n runs in $((SECONDS - t0)) s: $(grep "^$loop,$mode,$round," "$OUT/rows.csv" | cut -d, -f5 | tr '\n' ' ')" | tee -a "$LOG"
  [ "$n" -gt 0 ] || tail -5 $W/p.out | tee -a "$LOG"
  local f=$(ls $tdir/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then
    $SP check --json "$f" 2>/dev/null | sed "s/^{/{\"loop\":\"$loop\",\"mode\":\"$mode\",\"round\":$round,\"size\":$(stat -c %s "$f"),/" >> "$OUT/stats.jsonl"
    [ $mode = specprof ] && [ $round = 1 ] && cp "$f" $W/samples/$loop.$(basename "$f")
    rm -rf $tdir
  fi
}

step "smoke: default mode on a short specbench run and the eager loop"
$SP -o $W/smoke -- $SB --preset llama8b --mode baseline --concurrency 1 $COMMON --warmup 5 --seconds 0.5 2>&1 | tail -4 | tee -a "$LOG"
$SP check $W/smoke/specprof.rank*.json* 2>&1 | head -30 | tee -a "$LOG"
EAGER_OK=1
timeout 60 $EL --spec-tokens 4 --runs 2 --tokens 16 > $W/e1.out 2>&1
timeout 60 $SP -o $W/smoke_e --quiet -- $EL --runs 2 --tokens 16 > $W/e2.out 2>&1
tail -4 $W/e1.out $W/e2.out | tee -a "$LOG"
grep -q "^run 1 " $W/e1.out && grep -q "^run 1 " $W/e2.out || { EAGER_OK=0; echo "EAGER LOOP FAILED: skipped" | tee -a "$LOG"; }
$SP check $W/smoke_e/specprof.rank*.json* 2>&1 | head -30 | tee -a "$LOG"

[ "${SKIP_CALIB:-0}" = 1 ] || {
step "calibration subset in the default mode (capture_run.sh)"
mkdir -p $W/calib
OUT=$W/calib SKIP_BUILD=1 SKIP_CHECK=1 SKIP_OVERHEAD=1 SKIP_SMOKE=1 timeout 120 bash profiler/device/capture_run.sh > $W/calib/stdout.log 2>&1
tail -40 $W/calib/run.log | tee -a "$LOG"
(cd $W && tar czf "$OUT/calib.tar.gz" calib)
}

LOOPS=${LOOPS:-eager_plain eager_spec sb_decode_c1 sb_spec_c16}
for round in $(seq 1 ${ROUNDS:-3}); do
  step "round $round"
  for loop in $LOOPS; do
    case $loop in
      eager_plain) [ $EAGER_OK = 1 ] || continue; modes="none floor specprof always floor_api floor_cb"; cost=8 ;;
      eager_spec) [ $EAGER_OK = 1 ] || continue; modes="none specprof"; cost=8 ;;
      *) modes="none specprof floor always"; cost=7 ;;
    esac
    for mode in $modes; do
      [ "$(left)" -gt $cost ] || { echo "time: skipped $loop $mode round $round" | tee -a "$LOG"; continue; }
      run_one $loop $mode $round
    done
  done
done
(cd $W && tar czf "$OUT/samples.tar.gz" samples)
step "done"
ls -la "$OUT" | tee -a "$LOG"
