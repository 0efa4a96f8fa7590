#!/bin/bash
# node_probe.sh: per-node times of a CUDA graph without CUPTI (profiler/demo/node_probe.cu's
# header: an instrumented clone with an event node after each work node, against CUPTI's
# kernel records of the original graph, taken last). One process per size; each prints the
# spans of the original and instrumented replays, the host cost of launching each, per-node
# times from both, and whether every kernel node could be named without CUPTI.
# Results: $OUT/node_probe.txt.   usage (GPU machine, repo root): OUT=/dir bash profiler/device/node_probe.sh
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/node_probe}
mkdir -p "$OUT"
F="$OUT/node_probe.txt"
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$F" 2>&1
timeout 180 make -j8 bin/node_probe >> "$F" 2>&1 || { echo "BUILD FAILED" >> "$F"; tail -20 "$F"; exit 1; }
for n in ${SIZES:-400 100 1000}; do
  echo "### nodes $n" >> "$F"
  timeout 120 bin/node_probe "$n" "${REPLAYS:-200}" >> "$F" 2>&1; echo "rc $n $?" >> "$F"
done
grep -E "^(### |rc |sum |device )" "$F"
