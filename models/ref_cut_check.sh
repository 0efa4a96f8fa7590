#!/bin/sh
# ref_cut_check.sh: how much of the node-level reference a lite fit needs (docs/profiler.md,
# "Not done": a node-level window at the end of a capture sees only the configurations running
# then). specbench's committed calibration (traces/calib) turned into the lite captures it
# stands for (specsim lite-from), fitted with --nodes references cut to chosen configurations
# (models/ref_cut.awk: the records inside their NVTX spans) and validated as make validate does,
# against the whole capture as reference. CPU only, ~1 min. Writes $REF_CUT_OUT (default
# traces/validation/ref_cut.txt).
# usage: sh models/ref_cut_check.sh [SPECSIM]
set -u
SPECSIM=${1:-bin/specsim}
OUT=${REF_CUT_OUT:-traces/validation/ref_cut.txt}
WORK=${REF_CUT_WORK:-build/ref-cut}
die() { echo "ref_cut_check: $1" >&2; exit "${2:-2}"; }
[ -x "$SPECSIM" ] || die "$SPECSIM: not built (run make)" 1
rm -rf "$WORK" && mkdir -p "$WORK/lite" || die "$WORK: cannot create"
for f in traces/calib/*.json.gz; do
  "$SPECSIM" lite-from "$f" "$WORK/lite/$(basename "$f")" > "$WORK/lite-from.log" 2>&1 || die "$f: lite-from failed"
done
cp traces/calib/manifest.csv traces/calib/gemm_*.csv "$WORK/lite/"
# ROUTE KEEP: KEEP the steps:bs of the configurations the reference keeps ("all": the capture)
: > "$WORK/rows.txt"
for route in "all all" "one-size-per-structure 2:16,5:16,0:16,2:80,5:80,0:80" \
             "one-configuration 5:16,0:16"; do
  set -- $route
  ref=traces/calib
  if [ "$2" != all ]; then
    ref="$WORK/ref-$1"
    mkdir -p "$ref"
    for f in traces/calib/*.json.gz; do
      gzip -dc "$f" > "$WORK/full.json" || die "$f: cannot read"
      awk -v keep="$2" -f models/ref_cut.awk "$WORK/full.json" "$WORK/full.json" | gzip > "$ref/$(basename "$f")"
    done
  fi
  VALIDATE_CALIB="$WORK/lite" VALIDATE_NODES="$ref" VALIDATE_OUT="$WORK/$1.txt" VALIDATE_WORK="$WORK/work-$1" \
    sh models/validate.sh "$SPECSIM" > "$WORK/$1.log" 2>&1
  rc=$?
  if [ -f "$WORK/$1.txt" ]; then
    awk -v r="$1" -v k="$2" '/^# preset +held +calib/ { on = 1; next } on && /^#/ { exit }
      on { printf "  %-24s %-34s %-10s %8s %8s\n", r, k, $1, $4, $5 }' "$WORK/$1.txt" >> "$WORK/rows.txt"
  else   # the fit refused: its message
    msg=$(grep -v "^make validate" "$WORK/$1.log" | tail -1 | cut -c1-300)
    printf "  %-24s %-34s refused (exit %d): %s\n" "$1" "$2" "$rc" "$msg" >> "$WORK/rows.txt"
  fi
done
{
  echo "# lite fit against node-level references cut to chosen configurations (models/ref_cut_check.sh):"
  echo "# specbench's calibration (traces/calib) as lite-equivalents, the reference the same capture cut"
  echo "# to the NVTX spans of the configurations steps:bs kept (0: the baseline), held out against"
  echo "# traces/validation/measured.csv as make validate does. Where the reference lacks a shape, the fit"
  echo "# fills from the nearest of the same structure (graph or eager, forwards) and refuses where none is."
  echo "# route                    kept (steps:bs)                    preset     median|e|  max|e|"
  cat "$WORK/rows.txt"
} > "$OUT"
cat "$OUT"
