#!/bin/bash
# torch_truth.sh: one device call (H200) for the PyTorch ground truth (issues 13 and 14):
# builds specprof, runs torchbench's --check, captures the calibration subset of each
# preset under specprof (one trace per preset), measures the held-out grid UNPROFILED, and
# writes the Kineto fixtures (torch.profiler with SGLang's span names, server_args.json,
# SGLang-format server logs) of one preset's calibration configurations.
# Results to $OUT (the device tool brings back at most 8 files):
#   run.log                     everything printed (check, sizes, timings per step)
#   calib_torch-dense[_MODE].json.gz  specprof trace of the dense preset's calibration subset
#   calib_torch-moe[_MODE].json.gz    the same for the MoE preset
#   calib_measured_P[_MODE].csv what torchbench measured while being captured
#   measured.csv                the held-out grid, unprofiled (every repeat one row)
#   kineto.tar.gz               kineto/<point>/{<id>-TP-0-DECODE.trace.json.gz,server_args.json,
#                               server.log} and kineto/measured.csv (each point unprofiled
#                               and then under torch.profiler: Kineto's own cost)
#   device.txt                  nvidia-smi (torch's version: the first line of each run)
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/torch_truth.sh
#   env: SMOKE=1: a small subset of everything (finds GPU-only bugs in ~1 min);
#        DEADLINE_S (140): a grid step without its own budget gets what is left until
#        then (repeats outermost, so a cut loses late repeats, not points);
#        GRID_SECONDS (0.04) window per grid point, GRID_REPEATS (3); CALIB_SECONDS (0.03);
#        PRESETS ("torch-dense torch-moe"); KINETO_PRESET (torch-dense); CALIB_WARMUP (2);
#        CALIB_MIN_ITERS, GRID_MIN_ITERS (5): iterations a measured window has at least;
#        TB_EXTRA: more torchbench options everywhere (e.g. --disable-cuda-graph), TAG_SUFFIX
#        appended to the calibration files' names;
#        PLAN: the steps, in order (default "check calib:P... kineto:K grid:P..."):
#        check, calib:P[:MODE] (specprof --mode MODE; without: its default, windows; the
#        trace is calib_P[_MODE].json.gz), kineto:P, grid:P[:S] (S seconds; without: what is left until
#        DEADLINE_S), e.g. PLAN="check calib:torch-dense grid:torch-dense:24".
# Time (H200, 2026-12-03, traces/torch/run.log): build 1 s, check 9 s, calibration 6 s
# (dense) and 8 s (MoE) at 0.02 s windows, the dense grid 24 s for 130 points x 3 repeats
# at 0.03 s windows (0.06 s a run, graph captures 2.9 s); Kineto of 4 points 8 s (smoke).
# The defaults (0.04 s grid windows, 15 Kineto points, both grids) take ~2.5 min.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/torch_truth}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/torch_truth.XXXXXX)
LOG=$OUT/run.log
: > "$LOG"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
TB=${TB:-"python3 profiler/bench/torchbench.py"}
SP=${SP:-bin/specprof}
PRESETS=${PRESETS:-"torch-dense torch-moe"}
SMOKE=${SMOKE:-0}
# The calibration subset: chain steps 2 and 5 at alpha 0.7, five batch sizes: 1 (a captured
# size), 4 (captured), 15 (pads to 16), 33 (pads to 40), 80 (above the largest graph, 64:
# eager); and the baselines at the same concurrencies. Every other point of the grid is
# predicted from these.
CALIB_STEPS=${CALIB_STEPS:-2,5}
CALIB_CONC=${CALIB_CONC:-1,4,15,33,80}
# The held-out grid: steps 1..6, alphas 0.5 and 0.8, ten batch sizes (1, 2, 4, 7, 24 exact;
# 9 -> 10, 15 -> 16, 33 -> 40, 50 -> 52 padded; 80 eager), baselines at each.
GRID_STEPS=1,2,3,4,5,6
GRID_ALPHA=0.5,0.8
GRID_CONC=1,2,4,7,9,15,24,33,50,80
GRID_SECONDS=${GRID_SECONDS:-0.04}
GRID_REPEATS=${GRID_REPEATS:-3}
CALIB_SECONDS=${CALIB_SECONDS:-0.03}
CALIB_WARMUP=${CALIB_WARMUP:-2}
CALIB_MIN_ITERS=${CALIB_MIN_ITERS:-5}
GRID_MIN_ITERS=${GRID_MIN_ITERS:-5}
DEADLINE_S=${DEADLINE_S:-140}
KINETO_PRESET=${KINETO_PRESET:-torch-dense}
KSTEPS=5
if [ "$SMOKE" = 1 ]; then
  CALIB_STEPS=2; CALIB_CONC=4,80
  GRID_STEPS=1,5; GRID_ALPHA=0.7; GRID_CONC=1,15,80; GRID_REPEATS=2; DEADLINE_S=90
  GRID_SECONDS=0.1
fi
COMMON="--prompt-len 1024 --output-len 256 --seed 1 --cuda-graph-max-bs 64 ${TB_EXTRA:-}"

step "device"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nproc; } > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt" | tee -a "$LOG"

step "build specprof"
make -j"$(nproc)" bin/specprof bin/libspecprof.so >> "$LOG" 2>&1 || echo "BUILD FAILED" | tee -a "$LOG"
ls -la bin 2>&1 | tee -a "$LOG"

do_check() {
  step "check"
  timeout 60 $TB --check --preset "$(echo $PRESETS | tr ' ' ',')" 2>&1 | tee -a "$LOG"
}

do_calib() {   # do_calib PRESET [MODE]   (MODE: specprof's --mode; none: its default, windows)
  local p=$1 m=${2:-} f tag=$1
  [ -n "$m" ] && tag=${p}_$m
  tag=$tag${TAG_SUFFIX:-}
  step "calibration capture $p (specprof ${m:-default mode})"
  rm -rf "$W/calib_$tag"
  timeout 90 $SP -o "$W/calib_$tag" --quiet ${m:+--mode $m} -- $TB --preset "$p" --mode spec,baseline \
    --steps $CALIB_STEPS --alpha 0.7 --concurrency $CALIB_CONC $COMMON --warmup "$CALIB_WARMUP" \
    --seconds "$CALIB_SECONDS" --min-iters "$CALIB_MIN_ITERS" --repeats 1 --csv "$W/calib_measured_$tag.csv" 2>&1 | tee -a "$LOG"
  f=$(ls "$W/calib_$tag"/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then
    ls -la "$f" | tee -a "$LOG"
    $SP check "$f" 2>&1 | head -30 | tee -a "$LOG"
    case "$f" in *.gz) cp "$f" "$OUT/calib_$tag.json.gz" ;; *) gzip -6 -c "$f" > "$OUT/calib_$tag.json.gz" ;; esac
    ls -la "$OUT/calib_$tag.json.gz" | tee -a "$LOG"
  else echo "NO TRACE for $tag" | tee -a "$LOG"; fi
  cp "$W/calib_measured_$tag.csv" "$OUT/" 2>/dev/null
}

# Kineto fixtures: the calibration configurations of one preset, each first measured
# unprofiled and then KSTEPS iterations under torch.profiler (CPU+CUDA, no stacks), with
# SGLang's span names (record_function), roofline words, server_args.json and the log.
do_kineto() {   # do_kineto PRESET
  local p=$1
  step "kineto fixtures $p"
  mkdir -p "$W/kineto"
  timeout 50 $TB --preset "$p" --mode spec,baseline --steps $CALIB_STEPS --alpha 0.7 \
    --concurrency $CALIB_CONC $COMMON --warmup 2 --seconds 0.05 --min-iters 6 --spans sglang \
    --roofline --torch-profile "$W/kineto" --profile-steps $KSTEPS --decode-log-interval 5 \
    --csv "$W/kineto/measured.csv" 2>&1 | tee -a "$LOG"
  du -a "$W/kineto" | tee -a "$LOG"
  (cd "$W" && tar czf "$OUT/kineto.tar.gz" kineto)
  ls -la "$OUT/kineto.tar.gz" | tee -a "$LOG"
}

# The held-out grid, unprofiled: one process per preset (weights loaded once, graphs
# captured before each point and reused), repeats outermost so that a configuration's
# repeats are apart in time and a cut by the budget loses late repeats, not points; the
# first point of each process is run once more before the grid and dropped (clocks).
do_grid() {   # do_grid PRESET [BUDGET_S]   (no budget: what is left until DEADLINE_S)
  local p=$1 budget=${2:-}
  [ -n "$budget" ] || budget=$(( DEADLINE_S - SECONDS - 4 ))
  [ "$budget" -lt 5 ] && { step "grid $p skipped (no time left)"; return; }
  step "grid $p (unprofiled, budget ${budget}s)"
  timeout $((budget + 15)) $TB --preset "$p" --mode spec,baseline --steps $GRID_STEPS \
    --alpha $GRID_ALPHA --concurrency $GRID_CONC $COMMON --warmup 1 --seconds "$GRID_SECONDS" \
    --min-iters "$GRID_MIN_ITERS" --repeats "$GRID_REPEATS" --discard-first --time-budget "$budget" \
    --csv "$OUT/measured.csv" > "$W/grid_$p.out" 2>&1
  echo "rc=$?" | tee -a "$LOG"
  grep '^#' "$W/grid_$p.out" | tee -a "$LOG"
  tail -3 "$W/grid_$p.out" | tee -a "$LOG"
}

# PLAN: the steps in order; grid:P:S gives preset P's grid S seconds, grid:P what is left.
if [ -z "${PLAN:-}" ]; then
  PLAN="check"
  for p in $PRESETS; do PLAN="$PLAN calib:$p"; done
  PLAN="$PLAN kineto:$KINETO_PRESET"
  for p in $PRESETS; do PLAN="$PLAN grid:$p"; done
fi
echo "plan: $PLAN (deadline ${DEADLINE_S}s)" | tee -a "$LOG"
for s in $PLAN; do
  IFS=: read -r what arg budget <<EOS
$s
EOS
  case "$what" in
    check) do_check ;;
    calib) do_calib "$arg" "$budget" ;;
    kineto) do_kineto "$arg" ;;
    grid) do_grid "$arg" "$budget" ;;
    *) echo "PLAN: step $s: unknown" | tee -a "$LOG" ;;
  esac
done
step "done"
ls -la "$OUT" | tee -a "$LOG"
