#!/bin/sh
# lay_call16.sh: lays out what one run of call16.sh brought back ($OUT, fetched here) as a
# validation folder beside traces/torch/call16 and call17, and makes its tables.
#   sh profiler/device/lay_call16.sh FETCHED traces/torch/callNN [TEMPLATE]
# FETCHED holds run.log, grid_dense.csv, grid_eager.csv, lite_dense.json.gz, lite_eager.json.gz,
# ref_dense.json.gz, ref_eager.json.gz (refs.tar.gz when there). TEMPLATE (default
# traces/torch/call16 on an H200, call17 on an H100: run.log's device line decides) gives the
# manifests, nodes.csv, lite.env and fit.env (its GEMM sweep csvs too: the H200's; CALIB_STEPS=2,4,5
# as call16.sh ran with it rewrites the manifests' speculative rows). Then runs
# models/lite_validate.sh on the graph and eager folders (their validation_lite.txt,
# validation_node.txt, lite_vs_node.txt). Add the folder to the Makefile's LITE_DIRS and to
# carry_light.sh's DIRS by hand, and write its README.md from the tables.
# PRESET and SKIP_EAGER as call16.sh ran with them: the files' and manifests' preset (torch-moe:
# 64 experts, top-8, in the manifests' experts and moe_topk columns), no eager folders.
set -eu
SRC=${1:?usage: lay_call16.sh FETCHED DEST [TEMPLATE]}
DEST=${2:?usage: lay_call16.sh FETCHED DEST [TEMPLATE]}
SPECSIM=${SPECSIM:-bin/specsim}
if [ -n "${3:-}" ]; then T=$3
elif grep -q "H100" "$SRC/run.log"; then T=traces/torch/call17
else T=traces/torch/call16; fi
PRESET=${PRESET:-torch-dense}
SKIP_EAGER=${SKIP_EAGER:-0}
case "$PRESET" in
  torch-dense) EK=0,0 ;;
  torch-moe) EK=64,8 ;;
  *) echo "lay_call16.sh: PRESET=$PRESET: torch-dense or torch-moe" >&2; exit 1 ;;
esac
need="run.log grid_dense.csv lite_dense.json.gz ref_dense.json.gz"
[ "$SKIP_EAGER" = 1 ] || need="$need grid_eager.csv lite_eager.json.gz ref_eager.json.gz"
for f in $need; do
  [ -s "$SRC/$f" ] || { echo "lay_call16.sh: $SRC/$f: missing or empty" >&2; exit 1; }
done
[ -e "$DEST" ] && { echo "lay_call16.sh: $DEST exists: not overwritten" >&2; exit 1; }
tn=$(basename "$T"); dn=$(basename "$DEST")
mkdir -p "$DEST"
cp "$SRC/run.log" "$SRC/grid_dense.csv" "$DEST/"
[ "$SKIP_EAGER" = 1 ] || cp "$SRC/grid_eager.csv" "$DEST/"
[ -f "$SRC/refs.tar.gz" ] && cp "$SRC/refs.tar.gz" "$DEST/"
# folder trace
lay() {
  mkdir -p "$DEST/$1"
  cp "$SRC/$3" "$DEST/$1/$2"
  for f in manifest.csv nodes.csv lite.env fit.env; do
    [ -f "$T/$1/$f" ] && sed "s#traces/torch/$tn/#$DEST/#g; s#torch-dense#$PRESET#g" "$T/$1/$f" > "$DEST/$1/$f"
  done
  for g in "$T/$1"/gemm_*.csv; do [ -f "$g" ] && cp "$g" "$DEST/$1/"; done
  return 0
}
lay always calib_${PRESET}_always.json.gz ref_dense.json.gz
lay lite calib_${PRESET}_lite.json.gz lite_dense.json.gz
if [ "$SKIP_EAGER" != 1 ]; then
  lay always_eager calib_${PRESET}_always_eager.json.gz ref_eager.json.gz
  lay lite_eager calib_${PRESET}_lite_eager.json.gz lite_eager.json.gz
fi
# the manifests' MoE shape (the template's are dense: 0,0)
for m in "$DEST"/*/manifest.csv; do
  awk -F, -v OFS=, -v ek="$EK" 'NR > 1 { sub(/,[0-9]+,[0-9]+$/, "," ek) } { print }' "$m" > "$m.tmp" && mv "$m.tmp" "$m"
done
sed -i "1s#.*#\# specsim fit's environment for $dn (call16.sh run again, template $tn; models/validate.sh reads it):#" \
  "$DEST"/*/fit.env
# CALIB_STEPS (as call16.sh ran with it; default the template's 2,5): the manifests' speculative
# rows, one per calibration draft length at each of the template's batch sizes
if [ -n "${CALIB_STEPS:-}" ]; then
  for m in "$DEST"/*/manifest.csv; do
    awk -F, -v OFS=, -v steps="$CALIB_STEPS" 'NR == 1 { print; next }
      $3 == "spec" && !first { first = $4 }
      $3 == "spec" && $4 == first { n = split(steps, s, ","); for (i = 1; i <= n; i++) { $4 = s[i]; print }; next }
      $3 == "spec" { next }
      { print }' "$m" > "$m.tmp" && mv "$m.tmp" "$m"
  done
fi
rc=0
dirs="lite"; [ "$SKIP_EAGER" = 1 ] || dirs="lite lite_eager"
for d in $dirs; do
  LITE_VALIDATE_WORK=build/lv-$dn-$d sh models/lite_validate.sh "$DEST/$d" "$SPECSIM" || rc=$?
done
exit $rc
