#!/bin/sh
# carry_light.sh: the device tool carries the working tree (tracked and untracked files) up to
# 64 MiB, and the committed traces are more than that (81 MB on 2026-12-04). No device script
# reads the committed trace folders below, so they can leave the tree for the length of a call:
#   sh profiler/device/carry_light.sh out    # moves them to $STASH (default /tmp/specsim-stash)
#   ... the device call ...
#   sh profiler/device/carry_light.sh back   # puts them back (refuses to overwrite)
# Prints the bytes the tree then holds (tracked and untracked files).
set -u
cd "$(dirname "$0")/../.."
STASH=${STASH:-/tmp/specsim-stash}
DIRS="traces/torch/call4 traces/torch/call6 traces/torch/call7 traces/torch/call9 traces/torch/call11
traces/torch/kineto traces/calib-steps136 traces/calib-steps258 traces/lite/specbench-call10
traces/torch/call16 traces/torch/call17 traces/torch/call18
traces/torch/call19 traces/torch/call20 traces/torch/call21 traces/torch/call22 traces/torch/call23 traces/gapprobe
traces/overhead/h100-call25 traces/torch/call28 traces/torch/call29 traces/torch/call31 traces/torch/call33
traces/torch/call34 traces/lite/specbench-call35"
case "${1:-}" in
out)
  for d in $DIRS; do
    [ -d "$d" ] || continue
    [ -e "$STASH/$d" ] && { echo "carry_light.sh: $STASH/$d exists: run 'back' first" >&2; exit 2; }
    mkdir -p "$STASH/$(dirname "$d")" && mv "$d" "$STASH/$d" || exit 2
  done ;;
back)
  for d in $DIRS; do
    [ -d "$STASH/$d" ] || continue
    [ -e "$d" ] && { echo "carry_light.sh: $d exists in the tree: not overwritten" >&2; exit 2; }
    mv "$STASH/$d" "$d" || exit 2
  done ;;
*) echo "usage: sh profiler/device/carry_light.sh out|back" >&2; exit 2 ;;
esac
(git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 du -cb 2>/dev/null | tail -1
