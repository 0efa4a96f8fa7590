#!/bin/bash
# hf_grid.sh: one device call (H200) for the unprofiled part of the Hugging Face ground truth
# (issue 21): transformers' assisted generation (profiler/bench/hf_assisted.py grid), K 0..8 x
# two acceptance levels, every configuration once as warm-up, then rounds in alternating order
# (at least 3, more while the budget lasts), and inside each round the helper's cost A/B
# (annotate on/off, adjacent pairs at K 0 and 4), then its cost per forward. The captures it is
# compared with are traces/hf/hf_k2.json.gz and hf_k6.json.gz (hf_truth.sh). No build needed.
# Results to $OUT: hf_grid.csv hf_cost.csv run.log env.txt, and all of them in hf_grid.tgz.
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/hf_grid.sh
#   env: HF_NEW=64 (new tokens per generate), HF_LEVELS=0.9,0.6, HF_BUDGET_S=195 (no round
#        starts that would end past this many s of the python process), HF_TIMEOUT_S=245 (hard
#        limit of the python process), HF_ARGS (more hf_assisted.py options)
set -u
OUT=${OUT:-/tmp/hf-grid}
mkdir -p "$OUT"
LOG=$OUT/run.log
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1   # the machines' rule
export PYTHONUNBUFFERED=1
NEW=${HF_NEW:-64}; LEVELS=${HF_LEVELS:-0.9,0.6}; BUDGET=${HF_BUDGET_S:-195}; TMO=${HF_TIMEOUT_S:-245}
XA=${HF_ARGS:-}
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }

step "device"
{ timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm --format=csv
  timeout 30 python3 -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch",
torch.__version__, "transformers", transformers.__version__, "cudnn", torch.backends.cudnn.version(),
"cudnn_sdp", torch.backends.cuda.cudnn_sdp_enabled(), "flash_sdp", torch.backends.cuda.flash_sdp_enabled(),
"gpu", torch.cuda.get_device_name())'
  nproc | sed 's/^/cpus /'; uptime; grep -m1 'model name' /proc/cpuinfo; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt" | tee -a "$LOG"

step "grid K 0..8 x a $LEVELS, new tokens $NEW, with the helper's cost pairs"
timeout -k 5 "$TMO" python3 profiler/bench/hf_assisted.py grid --levels "$LEVELS" --repeats 3 \
  --max-repeats 12 --budget-s "$BUDGET" --new-tokens "$NEW" $XA \
  --csv "$OUT/hf_grid.csv" --cost-csv "$OUT/hf_cost.csv" 2>&1 | tee -a "$LOG"
echo "rc ${PIPESTATUS[0]}" | tee -a "$LOG"
step "done"
(cd "$OUT" && tar czf hf_grid.tgz hf_grid.csv hf_cost.csv run.log env.txt 2>/dev/null)
ls -la "$OUT"
