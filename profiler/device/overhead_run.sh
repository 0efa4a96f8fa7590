#!/bin/bash
# overhead_run.sh: one device call (H200) for issues 15 and 20: what specprof costs on the
# loops of the issues, alternating processes mode by mode, against a bare CUPTI subscriber
# (bin/libfloor.so) on the eager loop:
#   sb_decode_c1  specbench llama8b plain decode at concurrency 1 (CUDA graphs; host waits each launch)
#   sb_spec_c16   specbench llama8b chain steps 3, alpha 0.7, concurrency 16
#   tbe           torchbench torch-dense with --disable-cuda-graph (the eager loop), 1 row, plain decode
#                 and spec: rows tbe_decode_c1, tbe_spec_c1
#   tb            profiler/bench/torchbench.py torch-dense (PyTorch ground truth), one process
#                 measuring plain decode and spec (steps 3, alpha 0.7) at concurrency 1 and 13:
#                 rows tb_decode_c1, tb_decode_c13, tb_spec_c1, tb_spec_c13
#   eager_plain   profiler/bench/eager_loop.py, batch 1, plain decode (PyTorch eager)
#   eager_spec    the same with a 2-layer draft proposing 4 tokens
# and the calibration subset captured in specprof's default mode (capture_run.sh).
# Every process makes several timed runs (repeats); its first is dropped when the tables are
# made (profiler/device/overhead_tables.py, on the CPU). Results to $OUT (8 files at most):
#   run.log      everything printed            rows.csv   loop,mode,round,run,tok_s (every run)
#   stats.jsonl  specprof check --json of every trace (records, bytes, windows, attaches)
#   floor.txt    libfloor's record counts       calib.tar.gz   the calibration subset, windows (calib/) and always (calib_always/)
#   corr.txt     per trace: kernels, distinct correlation ids, API records (a stuck id is a CUPTI fault)
#   samples.tar.gz  one default-mode trace of each loop
# usage (GPU machine, repo root): OUT=/tmp/x RUN_LIMIT_S=400 bash profiler/device/overhead_run.sh
#   env: ROUNDS (default 3, cut by RUN_LIMIT_S), SKIP_CALIB=1, LOOPS (default
#   "sb_decode_c1 sb_spec_c16 tb eager_plain eager_spec"), MODES (only these modes),
#   SB_REPEATS, TB_REPEATS (default 4), EL_RUNS (default 4): timed runs per process;
#   SKIP_EAGER_SMOKE=1
# modes: none; floor (bin/libfloor.so: kernel activity only); attached (bin/libfloor.so with
# FLOOR_KERNEL=0: CUPTI subscribed, nothing enabled: what any attached CUPTI costs); specprof (the default, --mode
# always since call 4); win (--mode windows, CUPTI attached between them); nograph (--between
# none, the same); detach (--mode windows --between detach, experimental: crashed programs in
# calls 3-4); winapi or apion (--mode windows with SPECPROF_API_BETWEEN=1: API records and
# launch callbacks stay on between windows, experimental); nocal (--no-calibrate); always
# (--mode always); always_drv (the same with SPECPROF_API_DOMAIN=driver: the driver API only,
# experimental, call 25); lite (--mode lite: no CUPTI, runtime interposed, graph launches timed by
# CUDA events); probe (lite with --probe-nodes PROBE_N, default 5); peager (lite with --probe-eager
# PEAGER_N, default 3); pboth (both probes). MODES_<loop> overrides a loop's mode list (e.g. MODES_sb_decode_c1="none
# apion nocal"). CALIB_ENV: environment for the windowed calibration capture (e.g.
# SPECPROF_API_BETWEEN=1), CALIB_ARGS its specprof options (e.g. --mode windows); SAMPLES=0: no
# samples.tar.gz, SAMPLE_MODE (default specprof): the mode whose round-1 traces go into it;
# CORR_ALL=1: corr.txt for every round's traces, not round 1's only; SMOKE_ARGS: specprof
# options of the smoke run; SB_TIMEOUT_S, TB_TIMEOUT_S, EL_TIMEOUT_S (60, 90, 60): per
# process. Binaries built on the CPU box are used when present in bin/.
set -u
OUT=${OUT:-/tmp/overhead}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/overhead.XXXXXX)
LOG=$OUT/run.log
LIMIT=${RUN_LIMIT_S:-400}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
left() { echo $(( LIMIT - SECONDS )); }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv 2>&1 | tee -a "$LOG"
step "build (only what is missing)"
for b in bin/specbench bin/libfloor.so bin/libspecprof.so bin/specprof; do
  # a binary built elsewhere that does not find its libraries here is built again
  [ -f $b ] && ldd $b 2>&1 | grep -q "not found" && { echo "$b: $(ldd $b | grep 'not found' | head -2): rebuilt" | tee -a "$LOG"; rm -f $b; }
  [ -f $b ] || make -j"$(nproc)" $b >> "$LOG" 2>&1 || echo "BUILD $b FAILED" | tee -a "$LOG"
done
ls -la bin | tee -a "$LOG"
SP=$PWD/bin/specprof; SB=$PWD/bin/specbench; FLOOR=$PWD/bin/libfloor.so
EL="python3 $PWD/profiler/bench/eager_loop.py"
TB="python3 $PWD/profiler/bench/torchbench.py"
COMMON="--prompt-len 1024 --output-len 256 --cuda-graph-bs 1,2,8,24,64 --seed 1"
echo "loop,mode,round,run,tok_s" > "$OUT/rows.csv"
: > "$OUT/stats.jsonl"
: > "$OUT/floor.txt"
: > "$OUT/corr.txt"
mkdir -p $W/t $W/samples

# kernels, distinct correlation ids and API records of a trace (CUPTI 13.0.1 gave every
# kernel after a window's re-enabling one id in the old windows mode: docs/profiler.md)
corr_of() {
  python3 - "$1" "$2" >> "$OUT/corr.txt" 2>&1 <<'EOF'
import gzip, json, sys
path, label = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    op = gzip.open if f.read(2) == b"\x1f\x8b" else open   # a cut .json.gz.part is gzip too
k, ids, api, apiids, win = 0, set(), 0, set(), 0
with op(path, "rt") as f:
    for line in f:
        line = line.strip().rstrip(",")
        if not line.startswith("{"):
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        c = e.get("cat")
        if c == "kernel":
            k += 1; ids.add(e["args"].get("corr"))
        elif c == "api":
            api += 1; apiids.add(e["args"].get("corr"))
        elif c == "window":
            win += 1
print(f"{label} kernels {k} distinct_corr {len(ids)} api {api} distinct_api_corr {len(apiids)} windows {win}")
EOF
}

# one process of LOOP under MODE; its runs go to rows.csv
run_one() {
  local loop=$1 mode=$2 round=$3 pre="" tdir=$W/t/$1.$2.$3
  case $mode in
    none) pre="" ;;
    floor) pre="env CUDA_INJECTION64_PATH=$FLOOR FLOOR_OUT=$OUT/floor.txt" ;;
    attached) pre="env CUDA_INJECTION64_PATH=$FLOOR FLOOR_KERNEL=0 FLOOR_OUT=$OUT/floor.txt" ;;
    specprof) pre="$SP -o $tdir --quiet --" ;;
    nograph) pre="$SP -o $tdir --quiet --mode windows --between none --" ;;
    detach) pre="$SP -o $tdir --quiet --mode windows --between detach --" ;;
    apion|winapi) pre="env SPECPROF_API_BETWEEN=1 $SP -o $tdir --quiet --mode windows --" ;;
    win) pre="$SP -o $tdir --quiet --mode windows --" ;;
    nocal) pre="$SP -o $tdir --quiet --no-calibrate --" ;;
    always) pre="$SP -o $tdir --quiet --mode always --" ;;
    always_drv) pre="env SPECPROF_API_DOMAIN=driver $SP -o $tdir --quiet --mode always --" ;;
    lite) pre="$SP -o $tdir --quiet --mode lite --" ;;
    probe) pre="$SP -o $tdir --quiet --mode lite --probe-nodes ${PROBE_N:-5} --" ;;
    peager) pre="$SP -o $tdir --quiet --mode lite --probe-eager ${PEAGER_N:-3} --" ;;
    pboth) pre="$SP -o $tdir --quiet --mode lite --probe-nodes ${PROBE_N:-5} --probe-eager ${PEAGER_N:-3} --" ;;
  esac
  # PIN_<loop>=CPUS: the program runs under taskset -c CPUS (every mode alike; the profiler's
  # threads inside the program too, so give it two CPUs or more)
  local pinv="PIN_$loop"; [ -n "${!pinv:-}" ] && pre="taskset -c ${!pinv} $pre"
  [ "$mode" = floor ] || [ "$mode" = attached ] && echo "$loop $mode $round" >> "$OUT/floor.txt"
  local t0=$SECONDS
  case $loop in
    eager_plain|eager_spec)
      local spec=0; [ $loop = eager_spec ] && spec=4
      timeout ${EL_TIMEOUT_S:-60} $pre $EL --spec-tokens $spec --runs ${EL_RUNS:-4} --tokens 64 > $W/p.out 2>&1
      awk -v l=$loop -v m=$mode -v r=$round '$1=="run"{print l","m","r","$2","$8}' $W/p.out >> "$OUT/rows.csv" ;;
    sb_decode_c1|sb_spec_c16)
      local args="--mode baseline --concurrency 1"
      [ $loop = sb_spec_c16 ] && args="--mode spec --steps 3 --alpha 0.7 --concurrency 16"
      rm -f $W/sb.csv
      timeout ${SB_TIMEOUT_S:-60} $pre $SB --preset llama8b $args $COMMON --warmup 10 --seconds 1 --repeats ${SB_REPEATS:-4} --csv $W/sb.csv > $W/p.out 2>&1
      awk -F, -v l=$loop -v m=$mode -v r=$round 'NR==1{for(i=1;i<=NF;i++){if($i=="tok_s")c=i; if($i=="rep")q=i}} NR>1{print l","m","r","$q","$c}' \
        $W/sb.csv >> "$OUT/rows.csv" 2>/dev/null ;;
    tb)
      rm -f $W/tb.csv
      timeout ${TB_TIMEOUT_S:-90} $pre $TB --preset torch-dense --mode baseline,spec --steps 3 --alpha 0.7 --concurrency 1,13 \
        --prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64 --warmup 3 --seconds 0.4 --repeats ${TB_REPEATS:-4} \
        --csv $W/tb.csv > $W/p.out 2>&1
      awk -F, -v m=$mode -v r=$round 'NR==1{for(i=1;i<=NF;i++){if($i=="tok_s")c=i; if($i=="rep")q=i; if($i=="mode")o=i; if($i=="concurrency")n=i}}
        NR>1{l=($o=="baseline"?"tb_decode_c":"tb_spec_c")$n; print l","m","r","$q","$c}' $W/tb.csv >> "$OUT/rows.csv" 2>/dev/null
      [ $round = 1 ] && [ $mode = none ] && head -3 $W/tb.csv >> "$LOG" ;;
    tbe)   # the eager loop: torchbench dense with CUDA graphs off, 1 row, plain decode and spec
      rm -f $W/tb.csv
      timeout ${TB_TIMEOUT_S:-90} $pre $TB --preset torch-dense --mode baseline,spec --steps 3 --alpha 0.7 --concurrency 1 \
        --disable-cuda-graph --prompt-len 1024 --output-len 256 --seed 1 --warmup 3 --seconds 0.4 --repeats ${TB_REPEATS:-4} \
        --csv $W/tb.csv > $W/p.out 2>&1
      awk -F, -v m=$mode -v r=$round 'NR==1{for(i=1;i<=NF;i++){if($i=="tok_s")c=i; if($i=="rep")q=i; if($i=="mode")o=i; if($i=="concurrency")n=i}}
        NR>1{l=($o=="baseline"?"tbe_decode_c":"tbe_spec_c")$n; print l","m","r","$q","$c}' $W/tb.csv >> "$OUT/rows.csv" 2>/dev/null ;;
  esac
  local pat="^$loop,$mode,$round,"; [ $loop = tb ] && pat="^tb_[a-z]*_c[0-9]*,$mode,$round,"
  [ $loop = tbe ] && pat="^tbe_[a-z]*_c[0-9]*,$mode,$round,"
  local n=$(grep -c "$pat" "$OUT/rows.csv")
  echo "$loop $mode round $round: $n runs in $((SECONDS - t0)) s: $(grep "$pat" "$OUT/rows.csv" | cut -d, -f1,5 | tr '\n' ' ')" | tee -a "$LOG"
  [ "$n" -gt 0 ] || tail -5 $W/p.out | tee -a "$LOG"
  # what specprof said (notes, a killed command) and any crash, for the profiled modes
  [ "$mode" = none ] || grep -E "note from|killed by|timed out|Aborted|corrupt|Segmentation|error" $W/p.out | head -6 | tee -a "$LOG"
  local f=$(ls $tdir/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then
    $SP check --json "$f" 2>/dev/null | sed "s/^{/{\"loop\":\"$loop\",\"mode\":\"$mode\",\"round\":$round,\"size\":$(stat -c %s "$f"),/" >> "$OUT/stats.jsonl"
    { [ $round = 1 ] || [ "${CORR_ALL:-0}" = 1 ]; } && corr_of "$f" "$loop.$mode.$round"
    [ $mode = "${SAMPLE_MODE:-specprof}" ] && [ $round = 1 ] && cp "$f" $W/samples/$loop.$(basename "$f")
    rm -rf $tdir
  fi
}

step "smoke: default mode on a short specbench run"
timeout 40 $SP -o $W/smoke ${SMOKE_ARGS:-} -- $SB --preset llama8b --mode baseline --concurrency 1 $COMMON --warmup 5 --seconds ${SMOKE_S:-2} 2>&1 | tail -4 | tee -a "$LOG"
$SP check $W/smoke/specprof.rank*.json* 2>&1 | head -14 | tee -a "$LOG"
for f in $W/smoke/specprof.rank*.json*; do corr_of "$f" smoke; done
EAGER_OK=1
[ "${SKIP_EAGER_SMOKE:-0}" = 1 ] || {
timeout 60 $EL --runs 2 --tokens 16 > $W/e1.out 2>&1
tail -2 $W/e1.out | tee -a "$LOG"
grep -q "^run 1 " $W/e1.out || { EAGER_OK=0; echo "EAGER LOOP FAILED: skipped" | tee -a "$LOG"; }
}

[ "${SKIP_CALIB:-0}" = 1 ] || {
step "calibration subset in the default mode (capture_run.sh)"
mkdir -p $W/calib
env ${CALIB_ENV:-} OUT=$W/calib SPECPROF_ARGS="${CALIB_ARGS:-}" SKIP_BUILD=1 SKIP_CHECK=1 SKIP_OVERHEAD=1 SKIP_SMOKE=1 timeout 100 bash profiler/device/capture_run.sh > $W/calib/stdout.log 2>&1
grep -E "^capture|^calibration|^CUPTI|^kernels|^INCOMPLETE|^WARNING|^#.*trace" $W/calib/run.log | tee -a "$LOG"
for f in $W/calib/calib_*.json*; do [ -f "$f" ] && corr_of "$f" "calib.$(basename $f)"; done
# the same subset node-level (--mode always) in the same session: mode against mode, not session against session
mkdir -p $W/calib_always
OUT=$W/calib_always SKIP_BUILD=1 SKIP_CHECK=1 SKIP_OVERHEAD=1 SKIP_SMOKE=1 SPECPROF_ARGS="--mode always" timeout 100 \
  bash profiler/device/capture_run.sh > $W/calib_always/stdout.log 2>&1
grep -E "^capture|^kernels|^INCOMPLETE|^WARNING" $W/calib_always/run.log | tee -a "$LOG"
(cd $W && tar czf "$OUT/calib.tar.gz" calib calib_always)
}

LOOPS=${LOOPS:-sb_decode_c1 sb_spec_c16 tb eager_plain eager_spec}
for round in $(seq 1 ${ROUNDS:-3}); do
  step "round $round"
  for loop in $LOOPS; do
    case $loop in
      eager_plain) [ $EAGER_OK = 1 ] || continue; modes="none specprof floor always"; cost=9 ;;
      eager_spec) [ $EAGER_OK = 1 ] || continue; modes="none specprof"; cost=9 ;;
      sb_decode_c1) modes="none specprof apion"; cost=8 ;;
      tb) modes="none specprof"; cost=16 ;;
      tbe) modes="none specprof"; cost=14 ;;
      *) modes="none specprof"; cost=8 ;;
    esac
    ov="MODES_$loop"; [ -n "${!ov:-}" ] && modes=${!ov}
    [ -n "${MODES:-}" ] && modes=$(for m in $modes; do case " $MODES " in *" $m "*) printf '%s ' $m ;; esac; done)
    for mode in $modes; do
      [ "$(left)" -gt $cost ] || { echo "time: skipped $loop $mode round $round" | tee -a "$LOG"; continue; }
      run_one $loop $mode $round
    done
  done
done
[ "${SAMPLES:-1}" = 1 ] && (cd $W && tar czf "$OUT/samples.tar.gz" samples)
step "done"
ls -la "$OUT" | tee -a "$LOG"
