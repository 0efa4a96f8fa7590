#!/bin/sh
# scalecheck.sh: `specsim scale` against the GPU. From the committed calibration traces only,
# fits one model per preset (as models/validate.sh does), scales it with `specsim scale` to
# every shape traces/scale/measured.csv holds (specbench --layers/--tp, one rank alone:
# profiler/device/scale_check.sh), predicts each measured configuration at the acceptance its
# run drew, and prints measured vs predicted tok/s with the error and the band of the
# scaling's uncertainty (the model scaled with --bound lo and hi). CPU only, ~10 s.
#
# usage: sh models/scalecheck.sh [SPECSIM]          (default bin/specsim)
# inputs (overridable): SCALECHECK_MEASURED (traces/scale/measured.csv), SCALECHECK_CALIB
#   (traces/calib), SCALECHECK_OUT (traces/scale/scale_check.txt), SCALECHECK_WORK
#   (build/scalecheck)
# exit: 0 (also when there is no measurement yet: it says so); 2 a fit, scale or run failed.
set -u
SPECSIM=${1:-bin/specsim}
MEASURED=${SCALECHECK_MEASURED:-traces/scale/measured.csv}
CALIB=${SCALECHECK_CALIB:-traces/calib}
OUT=${SCALECHECK_OUT:-traces/scale/scale_check.txt}
WORK=${SCALECHECK_WORK:-build/scalecheck}
die() { echo "scalecheck: $*" >&2; exit 2; }

[ -x "$SPECSIM" ] || die "$SPECSIM: not built (run make)"
if [ ! -f "$MEASURED" ]; then
  echo "scalecheck: no measurement yet ($MEASURED): run profiler/device/scale_check.sh on a GPU" \
       "and commit its measured.csv there; nothing to compare"
  exit 0
fi
rm -rf "$WORK"
mkdir -p "$WORK" || die "$WORK: cannot create"

# ---- 1. the measured rows, repeats folded: preset layers tp mode steps alpha conc graphs
#         prompt output  tok_s(mean) accept_len(mean) n
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { k = $(c["preset"]) " " $(c["layers"]) " " $(c["tp"]) " " $(c["mode"]) " " $(c["steps"]) " " \
        $(c["alpha"]) " " $(c["concurrency"]) " " $(c["cuda_graph_bs"]) " " $(c["prompt_len"]) " " \
        $(c["output_len"])
    if (!(k in n)) order[++m] = k
    n[k]++; t[k] += $(c["tok_s"]); a[k] += $(c["accept_len"]) }
  END { for (i = 1; i <= m; i++) { k = order[i]; printf "%s %.4f %.5f %d\n", k, t[k] / n[k], a[k] / n[k], n[k] } }' \
  "$MEASURED" > "$WORK/rows.txt" || die "$MEASURED: cannot read"
[ -s "$WORK/rows.txt" ] || die "$MEASURED: no rows"

# ---- 2. one model per preset from the calibration traces ------------------------------------
for pre in $(awk '{ print $1 }' "$WORK/rows.txt" | sort -u); do
  tr="$CALIB/calib_$pre.json.gz"
  [ -f "$tr" ] || die "$tr: no calibration trace for preset $pre"
  gzip -dc "$tr" > "$WORK/calib_$pre.json" || die "$tr: cannot decompress"
  gs=""; [ -f "$CALIB/gemm_$pre.csv" ] && gs="--gemm-sweep $CALIB/gemm_$pre.csv"
  moe=""; case $pre in kimi*) moe="--llm models/presets/kimi-k2.5.json" ;; esac
  # shellcheck disable=SC2086
  "$SPECSIM" fit "$WORK/calib_$pre.json" -o "$WORK/$pre.json" --name "$pre-fit" --quiet $moe $gs \
    > "$WORK/fit-$pre.log" 2>&1 || { cat "$WORK/fit-$pre.log" >&2; die "specsim fit failed for $pre"; }
done

# ---- 3. scale to every measured shape, at the nominal and both ends -------------------------
for shape in $(awk '{ print $1 ":" $2 ":" $3 }' "$WORK/rows.txt" | sort -u); do
  pre=${shape%%:*}; rest=${shape#*:}; L=${rest%%:*}; T=${rest#*:}
  for b in nominal lo hi; do
    bo=""; [ "$b" = nominal ] || bo="--bound $b"
    # shellcheck disable=SC2086
    "$SPECSIM" scale "$WORK/$pre.json" --from "specbench-$pre" --llm "specbench-$pre" --layers "$L" \
      --tp "$T" --ranks 1 $bo -o "$WORK/$pre-$L-$T-$b.json" > "$WORK/scale-$pre-$L-$T-$b.log" 2>&1 ||
      { cat "$WORK/scale-$pre-$L-$T-$b.log" >&2; die "specsim scale failed for $shape"; }
  done
done

# ---- 4. predict every row at the acceptance its run drew ------------------------------------
: > "$WORK/pred.txt"
while read -r pre L T mode steps alpha conc graphs plen olen tok acc n; do
  # --precision 0: the fixed run lengths the committed table was made with
  set -- run --concurrency "$conc" --ranks 1 --csv --quiet --precision 0 --cuda-graph-bs "$(echo "$graphs" | tr ';' ',')" \
    --prompt-len "${plen%%:*}" --output-len "${olen%%:*}"
  if [ "$mode" = spec ]; then set -- "$@" --baseline 0 --steps "$steps" --accept-len "$acc"
  else set -- "$@" --baseline 1 --steps 1; fi
  line="$pre $L $T $mode $steps $alpha $conc $tok $acc $n"
  for b in nominal lo hi; do
    col=tok_s; [ "$mode" = baseline ] && col=base_tok_s
    v=$("$SPECSIM" "$@" --model "$WORK/$pre-$L-$T-$b.json" 2> "$WORK/run.err" |
        awk -F, -v col="$col" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next } c { print $c; exit }')
    [ -n "$v" ] || { cat "$WORK/run.err" >&2; die "specsim run failed: $SPECSIM $* --model $WORK/$pre-$L-$T-$b.json"; }
    line="$line $v"
  done
  echo "$line" >> "$WORK/pred.txt"
done < "$WORK/rows.txt"

# ---- 5. the table ---------------------------------------------------------------------------
# the calibration shape of each preset (the control): the traced preset's layers and tp
ctl=""
for pre in $(awk '{ print $1 }' "$WORK/rows.txt" | sort -u); do
  f=models/presets/specbench-$pre.json
  l=$(sed -n 's/^ *"layers": *\([0-9]*\).*/\1/p' "$f" | head -n 1)
  t=$(sed -n 's/^ *"tp": *\([0-9]*\).*/\1/p' "$f" | head -n 1)
  ctl="$ctl $pre:$l:$t"
done
awk -v measured="$MEASURED" -v calib="$CALIB" -v ctls="$ctl" '
  function abs(x) { return x < 0 ? -x : x }
  function median(arr, k,    i, j, t) { for (i = 2; i <= k; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j + 1] = arr[j]; arr[j + 1] = t }
    return k % 2 ? arr[(k + 1) / 2] : (arr[k / 2] + arr[k / 2 + 1]) / 2 }
  BEGIN {
    nc = split(ctls, cc, " "); for (i = 1; i <= nc; i++) isctl[cc[i]] = 1
    printf "# specsim scale checked: measured %s (specbench at other shapes, one rank alone),\n", measured
    printf "# predicted by models fitted from %s (each preset at its calibration shape only),\n", calib
    printf "# scaled by specsim scale --from/--llm specbench-PRESET --layers L --tp T --ranks 1;\n"
    printf "# spec rows predicted at the accept length the run drew; low/high: the model scaled\n"
    printf "# with --bound hi/lo (every scaled term at the end of its uncertainty); control: the\n"
    printf "# calibration shape itself (scale is the identity there)\n"
    printf "#%-8s %6s %3s %-8s %5s %5s %10s %10s %8s %10s %10s %5s %7s\n", "preset", "layers", "tp", "mode", "steps", "conc", "measured", "predicted", "error", "low", "high", "in", "role"
    printf "#%-8s %6s %3s %-8s %5s %5s %10s %10s %8s %10s %10s %5s %7s\n", "-", "-", "-", "-", "-", "requests", "tok/s", "tok/s", "%", "tok/s", "tok/s", "band", "-"
  }
  { pre = $1; L = $2; T = $3; mode = $4; steps = $5; conc = $7; meas = $8; nom = $11; lo = $13; hi = $12
    role = ((pre ":" L ":" T) in isctl) ? "control" : "scaled"
    e = 100 * (nom - meas) / meas; band = hi > lo
    inb = !band ? "-" : (meas >= lo && meas <= hi) ? "yes" : "no"
    printf " %-8s %6d %3d %-8s %5d %5d %10.1f %10.1f %+8.2f %10.1f %10.1f %5s %7s\n", pre, L, T, mode, mode == "spec" ? steps : 0, conc, meas, nom, e, lo, hi, inb, role
    key = pre " " role; ne[key]++; errs[key, ne[key]] = abs(e); if (abs(e) > mx[key]) mx[key] = abs(e); if (inb == "yes") ni[key]++; if (band) nb[key]++
    keys[key] = 1 }
  END {
    printf "#\n# per preset and role: configurations, median |error|, max |error|, inside the band\n"
    for (k in keys) { split(k, kk, " "); n = ne[k]; for (i = 1; i <= n; i++) a[i] = errs[k, i]
      printf "# %-8s %-7s %3d configurations: median %.2f%%, max %.2f%%", kk[1], kk[2], n, median(a, n), mx[k]
      if (nb[k]) printf ", %d of %d inside the band", ni[k] + 0, nb[k]
      printf "\n" }
  }' "$WORK/pred.txt" > "$OUT.tmp" || die "the table failed"
mv "$OUT.tmp" "$OUT"
cat "$OUT"
