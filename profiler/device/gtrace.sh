#!/bin/bash
# gtrace.sh: one device call (H200) for issue 15 (2026-12-04, "gtrace"): where the ~70 us
# that CUPTI adds to a 400-node graph launch between windows comes from, and what graph-level
# records (CUPTI_ACTIVITY_KIND_GRAPH_TRACE) cost and carry. profiler/demo/corr_probe.cu, one
# process per variant (its header says what each does), each under `timeout`; the key ones
# again at 50 nodes (fixed against per-node cost).
# Results ($OUT): probe.txt (every variant's output and exit status), env.txt (driver, CUPTI).
# usage (GPU machine, repo root): OUT=/tmp/x bash profiler/device/gtrace.sh
set -u
OUT=${OUT:-/tmp/gtrace}
mkdir -p "$OUT"
NODES=${NODES:-400}
VARIANTS=${VARIANTS:-"none regonly subonly kernel_once percbid_cb execs unsub kernelkind ctxkind hwtrace gtrace gtrace_on gtrace_mix gtrace_both"}
VARIANTS50=${VARIANTS50:-"none subonly kernel_once percbid_cb execs gtrace gtrace_on gtrace_mix"}
PROBE=${PROBE:-bin/corr_probe}
echo "=== gtrace start $(date -u +%T)" | tee "$OUT/env.txt"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; grep -h "define CUPTI_API_VERSION " \
    /usr/local/cuda/extras/CUPTI/include/cupti_version.h /usr/local/cuda/include/cupti_version.h 2>/dev/null; } >> "$OUT/env.txt" 2>&1
if [ "$PROBE" = bin/corr_probe ]; then
  timeout 120 make -j8 bin/corr_probe > "$OUT/build.txt" 2>&1 || { echo "BUILD FAILED"; tail -20 "$OUT/build.txt"; }
  [ -n "${NO_BUILD_TXT:-}" ] && { cat "$OUT/build.txt" >> "$OUT/env.txt"; rm -f "$OUT/build.txt"; }
fi
echo "=== built ${SECONDS}s" | tee -a "$OUT/env.txt"
for v in $VARIANTS; do
  echo "### $v nodes $NODES" >> "$OUT/probe.txt"
  timeout 40 $PROBE $v 4 $NODES >> "$OUT/probe.txt" 2>&1; echo "rc $v $NODES $?" >> "$OUT/probe.txt"
done
for v in $VARIANTS50; do
  echo "### $v nodes 50" >> "$OUT/probe.txt"
  timeout 40 $PROBE $v 4 50 >> "$OUT/probe.txt" 2>&1; echo "rc $v 50 $?" >> "$OUT/probe.txt"
done
echo "=== done ${SECONDS}s $(date -u +%T)" | tee -a "$OUT/env.txt"
grep -E "^(### |rc |round )" "$OUT/probe.txt" | cut -c1-200
