#!/bin/sh
# cycle_validate.sh: issue 14, "without any annotation". Fits the torch-dense preset from the
# torch.profiler/Kineto fixtures (traces/torch/kineto/*/, one configuration per trace) twice:
# with the phases from SGLang's spans (the annotated route: naming profile sglang) and with
# the phases from each trace's CUDA-graph launch cycle, the spans ignored (--graph-cycle with
# the order draft,verify+accept,extend or decode+sample and --shape rows=B per trace; the
# speculative shape and captured batch sizes from the server_args.json beside each trace, the
# KV context from the fixtures' logs as in the annotated route). Two sets: the 12 traces with
# CUDA graphs (both routes on the same traces), and all 15 (the 3 eager traces at 80 rows have
# no graph launches: annotated in both). Prints, per set and route, the fit's per-phase
# report (instances, kernels per forward, host gap), and predicts the held-out grid
# (traces/torch/measured.csv) with each model through models/validate.sh.
# Then the same on specprof captures: torchbench's --mode always calibration traces of both
# presets (traces/torch/call4/calib_torch-{dense,moe}_always.json.gz, 15 configurations one
# after another in one trace each) cut into one trace per configuration with CUDA graphs by
# models/cycle_cut.sh; the cycle route gets each configuration's rows, steps and KV context
# per row (ctx_mean of calib_measured_<preset>_always.csv: what the user's program knew) and
# the captured batch sizes (--cuda-graph-bs); held-out grid traces/torch/call4/measured.csv.
# usage: sh models/cycle_validate.sh [SPECSIM]       (CPU only, about a minute)
# writes traces/torch/cycle_validation.txt (the comparison) and the validate.sh tables
# traces/torch/kineto/cycle_{graphs,all}_{annotated,cycle}.txt and
# traces/torch/call4/cycle_{torch-dense,torch-moe}_{annotated,cycle}.txt
set -u
SPECSIM=${1:-bin/specsim}
K=traces/torch/kineto
W=${CV_WORK:-build/cycle_validate}
OUT=traces/torch/cycle_validation.txt
rm -rf "$W"
mkdir -p "$W/graphs" "$W/all" "$W/fixtures" || exit 1
hdr="file,preset,mode,steps,topk,concurrency,experts,moe_topk"
echo "$hdr" > "$W/graphs/manifest.csv"
echo "$hdr" > "$W/all/manifest.csv"
: > "$W/server.log"
cyc=""
for d in "$K"/torch-dense-*/; do
  n=$(basename "$d")
  f=$(ls "$d"*.trace.json.gz | head -n 1)
  mkdir -p "$W/fixtures/$n"
  gzip -dc "$f" > "$W/fixtures/$n/trace.json" || exit 1
  cp "$d/server_args.json" "$W/fixtures/$n/"
  cat "$d/server.log" >> "$W/server.log"
  conc=${n##*-bs}
  case "$n" in
    *-spec-s*) st=${n#*-spec-s}; st=${st%%-*}; line="$n.json,torch-dense,spec,$st,1,$conc,0,0"
               order="draft,verify+accept,extend" ;;
    *) line="$n.json,torch-dense,baseline,,,$conc,0,0"; order="decode+sample" ;;
  esac
  ln -s "$(cd "$W/fixtures/$n" && pwd)/trace.json" "$W/all/$n.json"
  echo "$line" >> "$W/all/manifest.csv"
  # eager (no CUDA graphs above cuda_graph_max_bs 64): no cycle, annotated in both routes
  if [ "$conc" -le 64 ]; then
    ln -s "$(cd "$W/fixtures/$n" && pwd)/trace.json" "$W/graphs/$n.json"
    echo "$line" >> "$W/graphs/manifest.csv"
    cyc="$cyc --graph-cycle $n.json:$order --shape $n.json:rows=$conc"
  fi
done
med() { awk -v p="$1" '$1 == p && $4 ~ /%$/ { sub(/%/, "", $4); print $4; exit }' "$2"; }
mx() { awk -v p="$1" '$1 == p && $4 ~ /%$/ { sub(/%/, "", $5); print $5; exit }' "$2"; }
{
echo "# cycle_validate.sh (issue 14): torch-dense from the Kineto fixtures in $K, phases from"
echo "# SGLang's spans (annotated) or from each trace's CUDA-graph launch cycle (cycle: spans"
echo "# ignored; --graph-cycle NAME.json:draft,verify+accept,extend | decode+sample, --shape"
echo "# NAME.json:rows=B). Both: --join --ctx-log (the fixtures' logs), server_args.json beside"
echo "# each trace. Held-out grid: traces/torch/measured.csv (validate.sh)."
} > "$OUT"
# per trace of DIR (its manifest): the instances each route names (import's list: phase and
# shape words), compared as multisets, the words without ctx= (the annotated words carry each
# instance's own KV context, the cycle route one value per trace), then with it
# usage: compare_traces DIR "COMMON ARGS" "CYCLE ARGS"
compare_traces() {
  {
  echo "#"
  echo "# per trace ($1): instances (annotated / cycle), the same phase and shape words (without ctx=; with ctx=)"
  printf "# %-28s %5s %5s %-10s %-10s %s\n" trace ann cyc same_words same_ctx "cycle found"
  } >> "$OUT"
  for f in $(tail -n +2 "$1/manifest.csv" | cut -d, -f1); do
    n=${f%.json}
    # shellcheck disable=SC2086
    a=$("$SPECSIM" import "$1/$f" $2 --instances 100000 2>&1) || { echo "$a"; exit 2; }
    # shellcheck disable=SC2086
    c=$("$SPECSIM" import "$1/$f" $2 --instances 100000 $(echo "$3" |
        tr ' ' '\n' | grep -B1 "^$f:" | tr '\n' ' ' | sed "s|$f:||g") 2>&1) || { echo "$c"; exit 2; }
    echo "$a" | sed -n 's/.* us: //p' | sort > "$1/$n.ann"
    echo "$c" | sed -n 's/.* us: //p' | sort > "$1/$n.cyc"
    # phase instances only (MoE traces hold CUB's own NVTX ranges); words the fit does not
    # need from the cycle route dropped: the KV context, the draft's forwards (steps-1 either
    # way), the baseline's steps=0 topk=0, experts (given with --moe)
    for x in ann cyc; do
      grep -E '^(draft|verify|accept|extend|decode|sample) ' "$1/$n.$x" |
        sed 's/ ctx=[0-9.e+-]*//; s/ forwards=[0-9]*//; s/ steps=0 topk=0//; s/ experts=[0-9]* moe_topk=[0-9]*//' |
        sort > "$1/$n.${x}0"
    done
    s0=no; cmp -s "$1/$n.ann0" "$1/$n.cyc0" && s0=yes
    [ $s0 = no ] && s0="no:$(diff "$1/$n.ann0" "$1/$n.cyc0" | grep -c '^[<>]')"
    s1=no; cmp -s "$1/$n.ann" "$1/$n.cyc" && s1=yes
    found=$(echo "$c" | sed -n 's/^# graph launch cycle [^:]*: \([0-9]* launches, period [0-9]*\).*turned \([^;]*\); \([0-9]*\) out of.* \([0-9]*\) calls between phases.*/\1, turned \2, \3 out, \4 calls between/p')
    printf "  %-28s %5d %5d %-10s %-10s %s\n" "$n" "$(wc -l < "$1/$n.ann0")" "$(wc -l < "$1/$n.cyc0")" "$s0" "$s1" "$found" >> "$OUT"
  done
}
compare_traces "$W/graphs" "--ctx-log $W/server.log" "$cyc"
# the predictions point by point (predicted tok/s at the realized acceptance, column 16) of
# two validate.sh tables of PRESET
# usage: pred_diff PRESET TABLE_A TABLE_B LABEL
pred_diff() {
  awk -v pre="$1" -v label="$4" 'FNR == 1 { f++ } $1 == pre && NF == 18 && $18 ~ /^(yes|no)$/ {
         k = $2 " " $3 " " $4 " " $5 " " $6 " " $7
         if (f == 1) a[k] = $16; else if (k in a && a[k] > 0) {
           d = ($16 - a[k]) / a[k]; if (d < 0) d = -d; n++; s += d; if (d > m) { m = d; mk = k }
           if ($18 == "no") { nh++; if (d > mh) mh = d } } }
       END { printf "# predictions, %s: %d configurations (%d held out): mean |difference| %.3f%%, max %.3f%% (%s), max over held-out %.3f%%\n", label, n, nh, n ? 100 * s / n : 0, 100 * m, mk, 100 * mh }' "$2" "$3"
}

# fits DIR's traces (its manifest) both ways, predicts MEASURED for PRESET with each through
# validate.sh (tables TAB_annotated.txt, TAB_cycle.txt), and reports the comparison
# usage: fit_compare LABEL DIR MEASURED PRESET "COMMON ARGS" "CYCLE ARGS" TAB
fit_compare() {
  moe=$(awk -F, 'NR > 1 && $7 > 0 { print "--moe " $7 "," $8; exit }' "$2/manifest.csv")
  for route in annotated cycle; do
    args=$5
    [ "$route" = cycle ] && args="$args $6"
    files=$(tail -n +2 "$2/manifest.csv" | cut -d, -f1 | sed "s|^|$2/|")
    # shellcheck disable=SC2086
    "$SPECSIM" fit $files -o "$2-$route.json" $moe $args > "$2-$route.fit" 2>&1 ||
      { cat "$2-$route.fit"; exit 2; }
    VALIDATE_CALIB="$2" VALIDATE_MEASURED="$3" VALIDATE_PRESETS="$4" \
      VALIDATE_OUT="${7}_$route.txt" VALIDATE_WORK="$2-v-$route" \
      VALIDATE_FIT_ARGS="$args" sh models/validate.sh "$SPECSIM" > "$2-v-$route.out" 2>&1
    r=$?
    case $r in 0|3) ;; *) echo "validate.sh failed ($1 $route):"; cat "$2-v-$route.out"; exit 2 ;; esac
  done
  {
  echo "#"
  echo "# $1: $(($(wc -l < "$2/manifest.csv") - 1)) traces, joined"
  echo "# per phase: instances fitted (left out), kernel launches per forward, host gap us (+ per request)"
  printf "# %-8s %-10s %-10s %-10s %-8s %-22s %-22s\n" phase inst_ann inst_cyc kern_ann kern_cyc gap_ann gap_cyc
  for p in draft verify accept extend decode sample; do
    a=$(grep "^# phase $p: " "$2-annotated.fit" | head -n 1)
    c=$(grep "^# phase $p: " "$2-cycle.fit" | head -n 1)
    [ -n "$a$c" ] || continue
    ia=$(echo "$a" | sed -n 's/.*: \([0-9]*\) instances (\([0-9]*\) left out).*/\1(\2)/p')
    ic=$(echo "$c" | sed -n 's/.*: \([0-9]*\) instances (\([0-9]*\) left out).*/\1(\2)/p')
    ka=$(echo "$a" | sed -n 's/.*, \([0-9]*\) launches per forward.*/\1/p')
    kc=$(echo "$c" | sed -n 's/.*, \([0-9]*\) launches per forward.*/\1/p')
    ga=$(echo "$a" | sed -n 's/.*host gap \([-0-9.]*\) us + \([-0-9.]*\) us per request.*/\1+\2/p')
    gc=$(echo "$c" | sed -n 's/.*host gap \([-0-9.]*\) us + \([-0-9.]*\) us per request.*/\1+\2/p')
    printf "  %-8s %-10s %-10s %-10s %-8s %-22s %-22s\n" "$p" "$ia" "$ic" "$ka" "$kc" "$ga" "$gc"
  done
  ma=$(med "$4" "${7}_annotated.txt"); mc=$(med "$4" "${7}_cycle.txt")
  xa=$(mx "$4" "${7}_annotated.txt"); xc=$(mx "$4" "${7}_cycle.txt")
  echo "# held-out grid ($3), |error| median / max: annotated ${ma}% / ${xa}%, cycle ${mc}% / ${xc}% (tables ${7}_annotated.txt, ${7}_cycle.txt)"
  pred_diff "$4" "${7}_annotated.txt" "${7}_cycle.txt" "cycle vs annotated model"
  } >> "$OUT"
}
fit_compare "Kineto fixtures with CUDA graphs" "$W/graphs" traces/torch/measured.csv torch-dense \
  "--join --ctx-log $W/server.log" "$cyc" "$K/cycle_graphs"
fit_compare "all Kineto fixtures (the 3 eager ones annotated in both)" "$W/all" traces/torch/measured.csv \
  torch-dense "--join --ctx-log $W/server.log" "$cyc" "$K/cycle_all"

# ---- specprof captures, cut per configuration ------------------------------------------------
C=traces/torch/call4
for pre in torch-dense torch-moe; do
  d=$W/sp-$pre
  sh models/cycle_cut.sh "$C/calib_${pre}_always.json.gz" "$d" > "$d.files" || exit 2
  cp traces/torch/calib/fit.env "$d/"
  m=$C/calib_measured_${pre}_always.csv
  graphs=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
                    { print $h["cuda_graph_bs"]; exit }' "$m" | tr ';' ',')
  echo "$hdr" > "$d/manifest.csv"
  cyc2=""
  for f in $(cat "$d.files"); do
    b=$(basename "$f")
    mode=${b%%-*}; st=${b#*-s}; st=${st%%-*}; bs=${b##*-bs}; bs=${bs%.json}
    # the configuration as torchbench ran it: KV context per row, experts
    read -r ctx ex mk <<EOF2
$(awk -F, -v mo="$mode" -v s="$st" -v c="$bs" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
   $h["mode"] == mo && $h["steps"] + 0 == s + 0 && $h["concurrency"] + 0 == c + 0 {
     print $h["ctx_mean"], $h["experts"], $h["moe_topk"]; exit }' "$m")
EOF2
    [ -n "$ctx" ] || { echo "$m: no row for $b"; exit 2; }
    if [ "${CV_CTX:-}" = words ]; then   # the mean KV context per row of the trace's own ranges
      ctx=$(grep -o '"name":"\(verify\|decode\) [^"]*graph=1[^"]*"' "$f" |
            sed -n 's/.* bs=\([0-9]*\) .* ctx=\([0-9.]*\).*/\1 \2/p' | awk '{ s += $2 / $1; n++ } END { printf "%.1f", s / n }')
    fi
    if [ "$mode" = spec ]; then
      echo "$b,$pre,spec,$st,1,$bs,$ex,$mk" >> "$d/manifest.csv"
      cyc2="$cyc2 --graph-cycle $b:draft,verify+accept,extend --shape $b:rows=$bs,steps=$st,ctx=$ctx"
    else
      echo "$b,$pre,baseline,,,$bs,$ex,$mk" >> "$d/manifest.csv"
      cyc2="$cyc2 --graph-cycle $b:decode+sample --shape $b:rows=$bs,ctx=$ctx"
    fi
  done
  compare_traces "$d" "--cuda-graph-bs $graphs" "$cyc2"
  fit_compare "specprof $pre (calib_${pre}_always.json.gz cut per configuration)" "$d" \
    "$C/measured.csv" "$pre" "--join --cuda-graph-bs $graphs" "$cyc2" "$C/cycle_$pre"
  # a control: the annotated route with each range's KV context replaced by its trace's mean
  # (the cycle route has one value per trace): what is left is the phase naming's part
  mkdir -p "$d-cc"
  cp "$d/manifest.csv" "$d/fit.env" "$d-cc/"
  for f in $(tail -n +2 "$d/manifest.csv" | cut -d, -f1); do
    mc=$(grep -o '"name":"\(verify\|decode\) [^"]*graph=1[^"]*"' "$d/$f" | sed -n 's/.* ctx=\([0-9.]*\).*/\1/p' |
         awk '{ s += $1; n++ } END { printf "%.0f", s / n }')
    sed "s/\(\"name\":\"[a-z]* tokens=[0-9]* bs=[0-9]* rows=[0-9]*\) ctx=[0-9]*/\1 ctx=$mc/" "$d/$f" > "$d-cc/$f"
  done
  VALIDATE_CALIB="$d-cc" VALIDATE_MEASURED="$C/measured.csv" VALIDATE_PRESETS="$pre" \
    VALIDATE_OUT="$d-cc.txt" VALIDATE_WORK="$d-cc-v" VALIDATE_FIT_ARGS="--join --cuda-graph-bs $graphs" \
    sh models/validate.sh "$SPECSIM" > "$d-cc.out" 2>&1
  case $? in 0|3) ;; *) echo "validate.sh failed ($pre control):"; cat "$d-cc.out"; exit 2 ;; esac
  {
  echo "# control: the annotated route with each trace's mean KV context (held-out median / max $(med "$pre" "$d-cc.txt")% / $(mx "$pre" "$d-cc.txt")%)"
  pred_diff "$pre" "$d-cc.txt" "$C/cycle_${pre}_cycle.txt" "cycle vs annotated with each trace's mean KV context"
  } >> "$OUT"
done
cat "$OUT"
