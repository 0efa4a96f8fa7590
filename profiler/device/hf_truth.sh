#!/bin/bash
# hf_truth.sh: one device call (H200) for the Hugging Face ground truth (issue 21): builds
# specprof and libspecprof.so; runs the Python helper's checks (tests/torch_annotate_check.py
# model: the hook path of torch >= 2.1); captures transformers' assisted generation
# (profiler/bench/hf_assisted.py capture) under specprof --torch-annotate at two draft lengths,
# one acceptance level, in a signal window after warm-up; then, unprofiled, the grid K 0..8 x
# two acceptance levels, alternating, >= 3 rounds after the warm-up, and the helper's cost
# (annotate on/off, alternating). Results to $OUT (8 files at most come back):
#   hf_grid.csv  hf_cost.csv  hf_capture.csv  hf_k${K1}.json.gz  hf_k${K2}.json.gz  checks.txt  run.log
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/hf_truth.sh
#   env: HF_K1=2 HF_K2=6 HF_LEVEL=0.9 (captures), HF_LEVELS=0.9,0.6 (grid), HF_END_S=200 (the grid
#        starts no round that would end past this many seconds of the script; 3 rounds always),
#        HF_NEW=96 (new tokens per generate), HF_ARGS (more hf_assisted.py options, e.g. for a
#        CPU dry run with small models: "--device cpu --vocab 2000 --hidden 128 ...")
set -u
OUT=${OUT:-/tmp/hf-truth}
mkdir -p "$OUT"
LOG=$OUT/run.log
CHK=$OUT/checks.txt
W=$(mktemp -d /tmp/hf-truth.XXXXXX)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1   # the machines' rule
export PYTHONUNBUFFERED=1
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }
K1=${HF_K1:-2}; K2=${HF_K2:-6}; LEVEL=${HF_LEVEL:-0.9}; LEVELS=${HF_LEVELS:-0.9,0.6}
END_S=${HF_END_S:-200}; NEW=${HF_NEW:-96}; XA=${HF_ARGS:-}
B=profiler/bench/hf_assisted.py
: > "$CHK"

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee -a "$LOG"
python3 -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch", torch.__version__,
"transformers", transformers.__version__, "gpu", torch.cuda.get_device_name())' 2>&1 | tee -a "$LOG"
nproc | sed 's/^/cpus /' | tee -a "$LOG"

step "build"
make -j"$(nproc)" bin/libspecprof.so >> "$LOG" 2>&1
make bin/specprof >> "$LOG" 2>&1 || cc -O2 -std=c11 -D_GNU_SOURCE -Iprofiler/core -Imodels -o bin/specprof \
    profiler/specprof.c profiler/core/*.c models/bounds.c models/ofile.c -lz -lpthread -ldl -lm >> "$LOG" 2>&1
ls -la bin | tee -a "$LOG"
SP=bin/specprof

step "helper checks (torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null))"
for m in builder model; do
  echo "## torch_annotate_check.py $m" >> "$CHK"
  timeout 60 python3 tests/torch_annotate_check.py $m >> "$CHK" 2>&1; echo "## rc $?" >> "$CHK"
done
tail -22 "$CHK" | tee -a "$LOG"

# Captures: warm-up (not recorded), then SIGUSR1 from the program opens the window, 2 x (plain,
# K) generates, SIGUSR2 closes it. Models named by build order: target first, then the draft.
: > "$OUT/hf_capture.csv"
for K in $K1 $K2; do
  step "capture K=$K a=$LEVEL"
  rm -rf $W/cap$K
  timeout 100 $SP -o $W/cap$K --signal-start --signal-stop --flush-ms 100 \
    --torch-annotate 'LlamaForCausalLM#1=target,LlamaForCausalLM#2=draft' -- \
    python3 $B capture --k $K --level $LEVEL --repeats 2 --new-tokens $NEW $XA --csv $W/cap$K.csv 2>&1 | tee -a "$LOG"
  if [ -s "$OUT/hf_capture.csv" ]; then grep -v '^#\|^K,' $W/cap$K.csv >> "$OUT/hf_capture.csv" 2>/dev/null
  else cat $W/cap$K.csv >> "$OUT/hf_capture.csv" 2>/dev/null; fi
  f=$(ls $W/cap$K/specprof.rank*.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then
    echo "## specprof check (K=$K)" >> "$CHK"
    $SP check "$f" 2>&1 | head -45 >> "$CHK"
    grep -o '"name":"[a-z_]* tokens=[0-9]* bs=[0-9]* rows=[0-9]* ctx=[0-9]* graph=0"' "$f" | head -12 >> "$CHK"
    ls -la "$f" | tee -a "$LOG"
    case "$f" in   # specprof writes gzip already (a second gzip made the call-4 files unreadable)
      *.gz) cp "$f" "$OUT/hf_k$K.json.gz" ;;
      *) gzip -9 -c "$f" > "$OUT/hf_k$K.json.gz" ;;
    esac
    ls -la "$OUT/hf_k$K.json.gz" | tee -a "$LOG"
  else echo "NO TRACE for K=$K" | tee -a "$LOG" "$CHK"; fi
done

# The unprofiled grid and the helper's cost, one process (its first generate of each
# configuration is the warm-up). The grid's budget counts from the process's start.
step "grid K 0..8 x a $LEVELS, then cost"
left=$(( END_S - SECONDS - 25 )); [ $left -lt 60 ] && left=60
timeout 300 python3 $B grid --levels $LEVELS --repeats 3 --budget-s $left --new-tokens $NEW $XA \
  --csv "$OUT/hf_grid.csv" --cost-csv "$OUT/hf_cost.csv" 2>&1 | tee -a "$LOG"
step "done"
