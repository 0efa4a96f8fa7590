#!/bin/bash
# gtrace2.sh: the second device call (H200) for issue 15 (2026-12-04, "gtrace"), after
# gtrace.sh showed that CUPTI merely initialized (cuptiActivityRegisterCallbacks alone, no
# subscriber, no kind) costs a 400-node graph launch what a closed window does:
#  1. corr_probe again: the graph-level variants (they died by SIGSEGV in gtrace.sh, output
#     lost to buffering: now line-buffered, with a backtrace), GRAPH_TRACE switched on before
#     the first CUDA call (gtrace_early) and before the graph is made (gtrace_post), tsonly,
#     events (graph-level timing by cudaEventRecord, no CUPTI), and none/regonly/subonly again;
#  2. profiler/device/overhead_run.sh on specbench decode c1 (none, attached = libfloor with
#     nothing enabled, floor = kernel activity always on, win = specprof --mode windows) and
#     torchbench (none, attached), alternating processes, first run of each dropped later.
# Results ($OUT, 7 files): probe.txt env.txt ov/{run.log,rows.csv,stats.jsonl,floor.txt,corr.txt}
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/gtrace2.sh
set -u
OUT=${OUT:-/tmp/gtrace2}
mkdir -p "$OUT/ov"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
NO_BUILD_TXT=1 OUT=$OUT VARIANTS="${VARIANTS:-gtrace_early gtrace_post gtrace_on gtrace gtrace_mix gtrace_both tsonly events none regonly subonly none regonly subonly}" \
  VARIANTS50="${VARIANTS50:-gtrace_early events}" timeout ${PROBE_LIMIT_S:-150} bash profiler/device/gtrace.sh
echo "=== probe done ${SECONDS}s" | tee -a "$OUT/env.txt"
OUT=$OUT/ov RUN_LIMIT_S=${OV_LIMIT_S:-290} ROUNDS=${ROUNDS:-4} SAMPLES=0 SKIP_CALIB=1 SKIP_EAGER_SMOKE=1 SMOKE_S=1 \
  LOOPS="${LOOPS:-sb_decode_c1 tb}" MODES_sb_decode_c1="${MODES_SB:-none attached floor win}" MODES_tb="${MODES_TB:-none attached}" \
  SB_REPEATS=${SB_REPEATS:-5} TB_REPEATS=${TB_REPEATS:-4} timeout $(( ${OV_LIMIT_S:-290} + 40 )) bash profiler/device/overhead_run.sh > /dev/null 2>&1
echo "=== overhead done ${SECONDS}s" | tee -a "$OUT/env.txt"
grep -E " round [0-9]+: " "$OUT/ov/run.log" | cut -c1-160
ls -la "$OUT" "$OUT/ov"
