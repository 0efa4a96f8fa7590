#!/bin/sh
# fit_split_check.sh: regenerates everything the fit's output reaches (issue 12: models/fit.c
# split into stage files, behaviour unchanged byte for byte) and, given a reference folder,
# diffs against it. Workload: five `make validate` runs, one `make report`, three printed fits;
# 2-5 minutes on 2 shared cores (measured; each run prints its times). docs/validation.md.
#
# usage: sh models/fit_split_check.sh OUTDIR [REFDIR]   (SPECSIM=bin/specsim by default)
#   OUTDIR  (outside the repository) gets:
#     val-<name>/validation.txt, val-<name>/<preset>.json, val-<name>/fit-<preset>.log,
#         val-<name>/pred.tsv       for the five validation tables: grid (traces/validation),
#         beyond, steps136, steps258, steps258-beyond (docs/validation.md's VALIDATE_* settings)
#     committed.diff                the regenerated tables against the committed ones
#     fit-<set>-<preset>.out        `specsim fit` printed output (stdout+stderr, not --quiet)
#         and .json, the model, on each calibration trace set
#     report/                       `make report`'s model.json, fit/ data, data/*.csv, index.md
#   REFDIR  an earlier OUTDIR (e.g. from the commit before the split): every file compared
#           with diff -r; exit 1 on any difference.
set -u
OUT=${1:?usage: sh models/fit_split_check.sh OUTDIR [REFDIR]}
REF=${2:-}
SPECSIM=${SPECSIM:-bin/specsim}
[ -x "$SPECSIM" ] || { echo "$SPECSIM: not built (run make)" >&2; exit 2; }
rm -rf "$OUT" && mkdir -p "$OUT" || exit 2
T0=$(date +%s)

# val NAME ENV...: one make validate under the given VALIDATE_* settings
val() {
  n=$1; shift
  d=$OUT/val-$n
  mkdir -p "$d"
  env "$@" VALIDATE_OUT="$d/validation.txt" VALIDATE_WORK="$OUT/work-$n" \
    sh models/validate.sh "$SPECSIM" > "$d/stdout" 2> "$d/stderr"
  echo "$?" > "$d/rc"
  # the table's lines name VALIDATE_WORK in the trailer only; keep what the fit made
  cp "$OUT/work-$n"/*.json "$OUT/work-$n"/fit-*.log "$OUT/work-$n"/pred.tsv "$d"/ 2>/dev/null
  for f in "$d"/*; do sed -i "s#$OUT/work-$n#WORK#g; s#$OUT/#OUT/#g" "$f"; done
  rm -rf "$OUT/work-$n"
}
val grid
val beyond VALIDATE_MEASURED=traces/validation/beyond/measured.csv
val steps136 VALIDATE_CALIB=traces/calib-steps136 VALIDATE_SWEEP=traces/calib
val steps258 VALIDATE_PRESETS=llama8b VALIDATE_CALIB=traces/calib-steps258 VALIDATE_SWEEP=traces/calib
val steps258-beyond VALIDATE_PRESETS=llama8b VALIDATE_CALIB=traces/calib-steps258 \
  VALIDATE_SWEEP=traces/calib VALIDATE_MEASURED=traces/validation/beyond/measured.csv
T1=$(date +%s)

# the regenerated tables against the committed ones (informative; the verdict is the REFDIR diff)
{
  for p in grid:traces/validation/validation.txt beyond:traces/validation/beyond/validation.txt \
           steps136:traces/calib-steps136/validation.txt steps258:traces/calib-steps258/validation.txt \
           steps258-beyond:traces/calib-steps258/validation_beyond.txt; do
    echo "== ${p#*:}"; diff "${p#*:}" "$OUT/val-${p%%:*}/validation.txt"
  done
} > "$OUT/committed.diff" 2>&1

# specsim fit's printed output on each calibration trace set, per preset (the flags validate.sh
# gives: --moe from the manifest or --llm for kimi/glm, the set's GEMM sweep from traces/calib)
for set in calib calib-steps136 calib-steps258; do
  for tr in traces/$set/calib_*.json.gz; do
    [ -f "$tr" ] || continue
    pre=$(basename "$tr" .json.gz); pre=${pre#calib_}
    u=$OUT/tmp-$set-$pre.json
    gzip -dc "$tr" > "$u"
    extra=""
    case "$pre" in kimi*) extra="--llm models/presets/kimi-k2.5.json" ;; glm*) extra="--llm models/presets/glm-5.json" ;; esac
    [ -f "traces/calib/gemm_$pre.csv" ] && extra="$extra --gemm-sweep traces/calib/gemm_$pre.csv"
    # shellcheck disable=SC2086
    "$SPECSIM" fit "$u" -o "$OUT/fit-$set-$pre.json" --name "$pre-fit" $extra \
      > "$OUT/fit-$set-$pre.out" 2>&1
    echo "rc $?" >> "$OUT/fit-$set-$pre.out"
    sed -i "s#$OUT/##g" "$OUT/fit-$set-$pre.out" "$OUT/fit-$set-$pre.json"
    rm -f "$u"
  done
done
T2=$(date +%s)

# make report: the model it fits, the fit plots' data, the sweeps' tables and the page
REPORT_DIR="$OUT/report" sh plots/report.sh "$SPECSIM" > "$OUT/report.stdout" 2> "$OUT/report.stderr"
echo "rc $?" >> "$OUT/report.stdout"
sed -i "s/^report \[ *[0-9]*s\]/report [Ns]/; s#$OUT/##g" "$OUT/report.stderr"
sed -i 's/made by `make report` in [0-9]* s/made by `make report` in N s/' "$OUT/report/index.md"
find "$OUT/report" \( -name '*.png' -o -name '*.svg' \) -delete   # images: gnuplot's bytes, from the data kept
grep -rl "$OUT" "$OUT/report" 2>/dev/null | while read -r f; do sed -i "s#$OUT/##g" "$f"; done
T3=$(date +%s)
echo "fit_split_check: validate $((T1 - T0)) s, fits $((T2 - T1)) s, report $((T3 - T2)) s; in $OUT"

if [ -n "$REF" ]; then
  if diff -r "$REF" "$OUT" > "$OUT.diff" 2>&1; then
    echo "fit_split_check: identical to $REF ($(find "$OUT" -type f | wc -l) files)"
  else
    echo "fit_split_check: DIFFERS from $REF (diff -r in $OUT.diff):"; head -n 40 "$OUT.diff"; exit 1
  fi
fi
