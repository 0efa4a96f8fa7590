#!/bin/sh
# lite_validate.sh: the validation tables from real --mode lite captures (issue 15: the fit
# from lite captures within 0.3 points, median and max held-out |e|, of the node-level
# tables). One command once the device call's captures are in a folder:
#
#   DIR/manifest.csv       the lite captures, as traces/calib/manifest.csv (file,preset,mode,
#                          steps,topk,concurrency[,experts,moe_topk]): one row per configuration
#   DIR/<file>             each lite capture (specprof --mode lite: capture.mode "lite", no
#                          kernels; .json.gz or .json)
#   DIR/nodes/<file>       its node-level reference (specprof --mode always of the same program
#                          and configurations, short), under the SAME file name
#   DIR/lite.env           optional: VALIDATE_*=VALUE lines (# comments) for models/validate.sh,
#                          e.g. VALIDATE_MEASURED (default traces/validation/measured.csv),
#                          VALIDATE_TRUTH, VALIDATE_TARGET_MEDIAN/MAX, VALIDATE_PRESETS; and
#                          LITE_NODE_TABLE, the node-level table to compare with (default
#                          traces/validation/validation.txt)
#   DIR/fit.env, DIR/gemm_<preset>.csv   optional, as in a calibration folder
#
# usage: sh models/lite_validate.sh DIR [SPECSIM]
# writes DIR/validation_lite.txt (validate.sh's table, lite fit) and DIR/lite_vs_node.txt (per
# preset: lite and node-level held-out median and max |e|, their difference, the 0.3-point
# verdict), also printed. exit: validate.sh's (0 targets met, 3 missed, 1 inputs missing, 2
# a fit failed), or 4 when a preset is more than 0.3 points off the node-level table.
set -u
DIR=${1:?usage: sh models/lite_validate.sh DIR [SPECSIM]}
SPECSIM=${2:-bin/specsim}
BOUND_POINTS=0.3   # issue 15
die() { echo "lite_validate: $*" >&2; exit "${2:-2}"; }
[ -f "$DIR/manifest.csv" ] || die "$DIR/manifest.csv: missing (the lite captures' configurations)" 1
[ -d "$DIR/nodes" ] || die "$DIR/nodes: missing (the node-level reference captures, same file names)" 1
NODE_TABLE=traces/validation/validation.txt
if [ -f "$DIR/lite.env" ]; then
  while IFS= read -r l; do
    l=${l%%#*}
    l=$(echo "$l" | sed 's/^[ \t]*//; s/[ \t]*$//')
    [ -n "$l" ] || continue
    case "$l" in
      LITE_NODE_TABLE=*) NODE_TABLE=${l#LITE_NODE_TABLE=} ;;
      VALIDATE_[A-Z_]*=*) export "$l" ;;
      *) die "$DIR/lite.env: line \"$l\": not VALIDATE_NAME=VALUE or LITE_NODE_TABLE=PATH" 1 ;;
    esac
  done < "$DIR/lite.env"
fi
[ -f "$NODE_TABLE" ] || die "$NODE_TABLE: the node-level table to compare with is missing (LITE_NODE_TABLE)" 1
# every lite capture must say it is one (a node-level trace here would compare nothing)
for f in "$DIR"/*.json.gz "$DIR"/*.json; do
  [ -f "$f" ] || continue
  case "$f" in
    *.gz) head=$(gzip -dc "$f" 2>/dev/null | head -c 4096) ;;
    *) head=$(head -c 4096 "$f") ;;
  esac
  echo "$head" | grep -q '"mode":"lite"' || die "$f: field capture.mode: not \"lite\" (a node-level capture goes in $DIR/nodes)" 1
done
VALIDATE_CALIB="$DIR" VALIDATE_NODES="$DIR/nodes" VALIDATE_OUT="$DIR/validation_lite.txt" \
  VALIDATE_WORK="${LITE_VALIDATE_WORK:-build/lite-validate}" sh models/validate.sh "$SPECSIM"
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || exit "$rc"
awk -v node="$NODE_TABLE" -v lite="$DIR/validation_lite.txt" -v bound="$BOUND_POINTS" '
  function rows(file, arr,    l, on, w) {
    on = 0
    while ((getline l < file) > 0) {
      if (l ~ /^# preset +held +calib/) { on = 1; continue }
      if (on && l ~ /^#/) break
      if (on) { split(l, w, " "); gsub(/%/, "", w[4]); gsub(/%/, "", w[5]); arr[w[1]] = w[4] " " w[5] }
    }
    close(file)
  }
  BEGIN {
    rows(node, N); rows(lite, L); bad = 0
    print "# lite fit (models/lite_validate.sh) against the node-level table " node
    print "# held-out |e|: lite median and max, node-level median and max, difference; issue 15: within " bound " points"
    print "# preset       lite_med  lite_max  node_med  node_max    d_med    d_max verdict"
    print "# -                   %         %         %         %   points   points -"
    for (p in L) {
      split(L[p], a, " ")
      if (!(p in N)) { printf "  %-12s %8s%% %8s%% %9s %9s %8s %8s %s\n", p, a[1], a[2], "-", "-", "-", "-", "no node-level row"; continue }
      split(N[p], b, " ")
      dm = a[1] - b[1]; dx = a[2] - b[2]
      ok = (dm <= bound && dm >= -bound && dx <= bound && dx >= -bound)
      if (!ok) bad = 1
      printf "  %-12s %8.2f%% %8.2f%% %8.2f%% %8.2f%% %+8.2f %+8.2f %s\n", p, a[1], a[2], b[1], b[2], dm, dx, ok ? "within" : "OFF"
    }
    exit bad ? 4 : 0
  }' > "$DIR/lite_vs_node.txt"
cmp_rc=$?
cat "$DIR/lite_vs_node.txt"
[ "$cmp_rc" -eq 0 ] || exit 4
exit "$rc"
