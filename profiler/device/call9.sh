#!/bin/bash
# call9.sh: one device call (H200, <= 540 s) for issues 13, 15, 18 and 20: the PyTorch ground
# truth captured in the SAME process as its held-out grid. On the H200 the host's Python speed
# moved 1.6-2.5x between processes minutes apart (docs/torchbench.md), so a capture in one
# process and a grid in another measure two hosts. Here specprof --mode lite --capture-range
# profiler-api records only the windows torchbench opens with torch.cuda.profiler.start/stop
# (--capture: the calibration points), every other point runs with the interposer passing
# calls straight through, and repeats are outermost: capture and grid interleave in time.
#  0. build specprof; a smoke of the capture range (one captured point, `specprof check`);
#  1. node-level references (specprof --mode always, separate processes, this call): torchbench
#     dense's calibration subset with graphs and without (the fit takes each graph launch's node
#     shares and the eager kernels' GPU times from them: docs/fit.md "Lite captures");
#  2. torchbench dense with CUDA graphs (eager above 64 rows): the held-out grid of
#     torch_truth.sh (steps 1..6, alphas 0.5 and 0.8, ten batch sizes, baselines) in one lite
#     process, the calibration subset (steps 2 and 5, baselines; 1, 4, 15, 33, 80 rows) captured;
#  3. the same with --disable-cuda-graph (the eager loop);
#  4. what recording costs, in one process: each point twice per repeat, its window captured
#     and not, the order alternating (--capture-ab; the two windows of a repeat draw the same
#     acceptances): the eager loop at 1 row (decode; spec steps 3, alpha 0.7), three
#     processes; then the graph loop at 1 and 13 rows, one process.
# Results ($OUT, 6 files): run.log; csv.tar.gz (grid_dense.csv, grid_eager.csv, ab_eager_N.csv,
# ab_graph.csv, the references' calib_measured csvs, every process's stdout);
# lite_dense.json.gz, lite_eager.json.gz (the in-grid lite captures); ref_dense.json.gz,
# ref_eager.json.gz (the node-level references).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/call9.sh   (RUN_LIMIT_S 530)
set -u
OUT=${OUT:-/tmp/call9}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call9.XXXXXX)
LOG=$OUT/run.log
LIMIT=${RUN_LIMIT_S:-530}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
left() { echo $(( LIMIT - SECONDS )); }
step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$LOG"
nproc | tee -a "$LOG"
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" 2>&1 | tee -a "$LOG"
git log --oneline -1 2>/dev/null | tee -a "$LOG"

step "build"
make -j"$(nproc)" bin/specprof bin/libspecprof.so > $W/build.log 2>&1 || { echo "BUILD FAILED" | tee -a "$LOG"; tail -30 $W/build.log | tee -a "$LOG"; }
SP=$PWD/bin/specprof
TB="python3 $PWD/profiler/bench/torchbench.py"
COMMON="--prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64"
LITE="$SP --quiet --mode lite --capture-range profiler-api"
CALIB="spec:2:1,spec:2:4,spec:2:15,spec:2:33,spec:2:80,spec:5:1,spec:5:4,spec:5:15,spec:5:33,spec:5:80"
CALIB="$CALIB,baseline:1,baseline:4,baseline:15,baseline:33,baseline:80"
GRID="--mode spec,baseline --steps 1,2,3,4,5,6 --alpha 0.5,0.8 --concurrency 1,2,4,7,9,15,24,33,50,80"

trace_of() { ls "$1"/specprof.rank*.json* 2>/dev/null | head -1; }
keep() {   # keep DIR NAME: the process's trace to $OUT/NAME, and its check in the log
  local f; f=$(trace_of "$1")
  if [ -z "$f" ]; then echo "NO TRACE in $1" | tee -a "$LOG"; return; fi
  $SP check "$f" 2>&1 | head -24 | tee -a "$LOG"
  case "$f" in *.gz) cp "$f" "$OUT/$2" ;; *) gzip -6 -c "$f" > "$OUT/$2" ;; esac
  ls -la "$OUT/$2" | tee -a "$LOG"
}

step "smoke: one captured point of two (lite, capture range)"
timeout 90 $LITE -o $W/smoke -- $TB --preset torch-dense --mode baseline --concurrency 1,4 $COMMON --warmup 2 \
  --seconds 0.2 --repeats 1 --capture baseline:1 --csv $W/smoke.csv > $W/smoke.out 2>&1
echo "rc=$?" | tee -a "$LOG"
cat $W/smoke.csv 2>/dev/null | cut -d, -f1-12 | tee -a "$LOG"
f=$(trace_of $W/smoke); [ -n "$f" ] && $SP check "$f" 2>&1 | head -24 | tee -a "$LOG"
grep -v "^#" $W/smoke.out | tail -5 | tee -a "$LOG"

step "node-level references (always): dense graphs, dense eager"
OUT=$W/ref SP=$SP PLAN="calib:torch-dense:always" CALIB_SECONDS=0.04 CALIB_MIN_ITERS=8 timeout 100 \
  bash profiler/device/torch_truth.sh > $W/ref.out 2>&1
OUT=$W/refe SP=$SP TB_EXTRA="--disable-cuda-graph" TAG_SUFFIX=_eager PLAN="calib:torch-dense:always" CALIB_SECONDS=0.08 \
  CALIB_MIN_ITERS=8 timeout 100 bash profiler/device/torch_truth.sh > $W/refe.out 2>&1
grep -E "^===|^capture|^calib|^WARNING|^INCOMPLETE|^complete|NO TRACE|^-rw" $W/ref/run.log $W/refe/run.log | tee -a "$LOG"
cp $W/ref/calib_torch-dense_always.json.gz "$OUT/ref_dense.json.gz" 2>/dev/null
cp $W/refe/calib_torch-dense_always_eager.json.gz "$OUT/ref_eager.json.gz" 2>/dev/null
mkdir -p $W/pack
cp $W/ref/calib_measured_*.csv $W/refe/calib_measured_*.csv $W/pack/ 2>/dev/null

step "torchbench dense, graphs: grid and captured calibration in one lite process"
b=$(( $(left) > 330 ? 80 : 60 ))
timeout $(( b + 40 )) $LITE -o $W/p1 -- $TB --preset torch-dense $GRID $COMMON --warmup 1 --seconds 0.08 --min-iters 15 \
  --repeats 3 --discard-first --time-budget $b --capture "$CALIB" --csv $W/pack/grid_dense.csv > $W/pack/p1.out 2>&1
echo "rc=$?" | tee -a "$LOG"; grep "^#" $W/pack/p1.out | tail -4 | tee -a "$LOG"
keep $W/p1 lite_dense.json.gz

step "torchbench dense, eager loop: grid and captured calibration in one lite process"
b=$(( $(left) > 250 ? 85 : 60 ))
timeout $(( b + 40 )) $LITE -o $W/p2 -- $TB --preset torch-dense --disable-cuda-graph $GRID $COMMON --warmup 1 --seconds 0.08 \
  --min-iters 10 --repeats 3 --discard-first --time-budget $b --capture "$CALIB" --csv $W/pack/grid_eager.csv > $W/pack/p2.out 2>&1
echo "rc=$?" | tee -a "$LOG"; grep "^#" $W/pack/p2.out | tail -4 | tee -a "$LOG"
keep $W/p2 lite_eager.json.gz

step "what recording costs, in one process: the eager loop at 1 row (3 processes)"
for i in 1 2 3; do
  [ $(left) -lt 60 ] && { echo "no time for eager A/B process $i" | tee -a "$LOG"; break; }
  timeout 60 $LITE -o $W/ab$i -- $TB --preset torch-dense --disable-cuda-graph --mode baseline,spec --steps 3 --alpha 0.7 \
    --concurrency 1 $COMMON --warmup 3 --seconds 0.4 --repeats 7 --capture-ab --csv $W/pack/ab_eager_$i.csv \
    > $W/pack/ab_eager_$i.out 2>&1
  echo "eager A/B $i rc=$? rows $(($(wc -l < $W/pack/ab_eager_$i.csv 2>/dev/null || echo 1) - 1))" | tee -a "$LOG"
done
f=$(trace_of $W/ab1); [ -n "$f" ] && $SP check "$f" 2>&1 | grep -iE "records|bytes|lite|range" | head -12 | tee -a "$LOG"

step "what recording costs, in one process: the graph loop at 1 and 13 rows"
if [ $(left) -gt 50 ]; then
  timeout $(( $(left) - 10 )) $LITE -o $W/abg -- $TB --preset torch-dense --mode baseline,spec --steps 3 --alpha 0.7 \
    --concurrency 1,13 $COMMON --warmup 3 --seconds 0.4 --repeats 6 --capture-ab --time-budget $(( $(left) - 30 )) \
    --csv $W/pack/ab_graph.csv > $W/pack/ab_graph.out 2>&1
  echo "graph A/B rc=$?" | tee -a "$LOG"
fi
for d in p1 p2 ab1 abg; do f=$(trace_of $W/$d); [ -n "$f" ] && ls -la "$f" | tee -a "$LOG"; done

step "pack"
(cd $W/pack && tar czf "$OUT/csv.tar.gz" .)
ls -la "$OUT" | tee -a "$LOG"
step "done"
