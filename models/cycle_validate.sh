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
# usage: sh models/cycle_validate.sh [SPECSIM]       (CPU only, a few minutes)
# writes traces/torch/kineto/cycle_validation.txt (the comparison) and the four validate.sh
# tables traces/torch/kineto/cycle_{graphs,all}_{annotated,cycle}.txt
set -u
SPECSIM=${1:-bin/specsim}
K=traces/torch/kineto
W=${CV_WORK:-build/cycle_validate}
OUT=$K/cycle_validation.txt
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
med() { awk '$1 == "torch-dense" && $4 ~ /%$/ { sub(/%/, "", $4); print $4; exit }' "$1"; }
mx() { awk '$1 == "torch-dense" && $4 ~ /%$/ { sub(/%/, "", $5); print $5; exit }' "$1"; }
{
echo "# cycle_validate.sh (issue 14): torch-dense from the Kineto fixtures in $K, phases from"
echo "# SGLang's spans (annotated) or from each trace's CUDA-graph launch cycle (cycle: spans"
echo "# ignored; --graph-cycle NAME.json:draft,verify+accept,extend | decode+sample, --shape"
echo "# NAME.json:rows=B). Both: --join --ctx-log (the fixtures' logs), server_args.json beside"
echo "# each trace. Held-out grid: traces/torch/measured.csv (validate.sh)."
} > "$OUT"
# per trace: the instances each route names (import's list: phase and shape words), compared
# as multisets, the words without ctx= (the baseline fixtures' spans carry g_sk=, the cycle
# route takes the log's mean), then with it
{
echo "#"
echo "# per trace: instances (annotated / cycle), the same phase and shape words (without ctx=; with ctx=)"
printf "# %-28s %5s %5s %-10s %-10s %s\n" trace ann cyc same_words same_ctx "cycle found"
} >> "$OUT"
for f in $(tail -n +2 "$W/graphs/manifest.csv" | cut -d, -f1); do
  n=${f%.json}
  a=$("$SPECSIM" import "$W/graphs/$f" --ctx-log "$W/server.log" --instances 100000 2>&1) || { echo "$a"; exit 2; }
  c=$("$SPECSIM" import "$W/graphs/$f" --ctx-log "$W/server.log" --instances 100000 $(echo "$cyc" |
      tr ' ' '\n' | grep -B1 "^$f:" | tr '\n' ' ' | sed "s|$f:||g") 2>&1) || { echo "$c"; exit 2; }
  echo "$a" | sed -n 's/.* us: //p' | sort > "$W/$n.ann"
  echo "$c" | sed -n 's/.* us: //p' | sort > "$W/$n.cyc"
  sed 's/ ctx=[0-9.e+-]*//' "$W/$n.ann" | sort > "$W/$n.ann0"
  sed 's/ ctx=[0-9.e+-]*//' "$W/$n.cyc" | sort > "$W/$n.cyc0"
  s0=no; cmp -s "$W/$n.ann0" "$W/$n.cyc0" && s0=yes
  s1=no; cmp -s "$W/$n.ann" "$W/$n.cyc" && s1=yes
  found=$(echo "$c" | sed -n 's/^# graph launch cycle [^:]*: \([0-9]* launches, period [0-9]*\).*turned \([^;]*\);.*/\1, turned \2/p')
  printf "  %-28s %5d %5d %-10s %-10s %s\n" "$n" "$(wc -l < "$W/$n.ann")" "$(wc -l < "$W/$n.cyc")" "$s0" "$s1" "$found" >> "$OUT"
done
for set in graphs all; do
  for route in annotated cycle; do
    args="--join --ctx-log $W/server.log"
    [ "$route" = cycle ] && args="$args$cyc"
    files=$(tail -n +2 "$W/$set/manifest.csv" | cut -d, -f1 | sed "s|^|$W/$set/|")
    # shellcheck disable=SC2086
    "$SPECSIM" fit $files -o "$W/$set-$route.json" $args > "$W/$set-$route.fit" 2>&1 ||
      { cat "$W/$set-$route.fit"; exit 2; }
    VALIDATE_CALIB="$W/$set" VALIDATE_MEASURED=traces/torch/measured.csv VALIDATE_PRESETS=torch-dense \
      VALIDATE_OUT="$K/cycle_${set}_$route.txt" VALIDATE_WORK="$W/v-$set-$route" \
      VALIDATE_FIT_ARGS="$args" sh models/validate.sh "$SPECSIM" > "$W/v-$set-$route.out" 2>&1
    r=$?
    case $r in 0|3) ;; *) echo "validate.sh failed ($set $route):"; cat "$W/v-$set-$route.out"; exit 2 ;; esac
  done
  {
  echo "#"
  echo "# set $set: $(($(wc -l < "$W/$set/manifest.csv") - 1)) traces"
  echo "# per phase: instances fitted (left out), kernel launches per forward, host gap us (+ per request)"
  printf "# %-8s %-10s %-10s %-10s %-8s %-22s %-22s\n" phase inst_ann inst_cyc kern_ann kern_cyc gap_ann gap_cyc
  for p in draft verify accept extend decode sample; do
    a=$(grep "^# phase $p: " "$W/$set-annotated.fit" | head -n 1)
    c=$(grep "^# phase $p: " "$W/$set-cycle.fit" | head -n 1)
    [ -n "$a$c" ] || continue
    ia=$(echo "$a" | sed -n 's/.*: \([0-9]*\) instances (\([0-9]*\) left out).*/\1(\2)/p')
    ic=$(echo "$c" | sed -n 's/.*: \([0-9]*\) instances (\([0-9]*\) left out).*/\1(\2)/p')
    ka=$(echo "$a" | sed -n 's/.*, \([0-9]*\) launches per forward.*/\1/p')
    kc=$(echo "$c" | sed -n 's/.*, \([0-9]*\) launches per forward.*/\1/p')
    ga=$(echo "$a" | sed -n 's/.*host gap \([-0-9.]*\) us + \([-0-9.]*\) us per request.*/\1+\2/p')
    gc=$(echo "$c" | sed -n 's/.*host gap \([-0-9.]*\) us + \([-0-9.]*\) us per request.*/\1+\2/p')
    printf "  %-8s %-10s %-10s %-10s %-8s %-22s %-22s\n" "$p" "$ia" "$ic" "$ka" "$kc" "$ga" "$gc"
  done
  ma=$(med "$K/cycle_${set}_annotated.txt"); mc=$(med "$K/cycle_${set}_cycle.txt")
  xa=$(mx "$K/cycle_${set}_annotated.txt"); xc=$(mx "$K/cycle_${set}_cycle.txt")
  echo "# held-out grid, |error| median / max: annotated ${ma}% / ${xa}%, cycle ${mc}% / ${xc}% (tables $K/cycle_${set}_annotated.txt, $K/cycle_${set}_cycle.txt)"
  # the predictions point by point (predicted tok/s at the realized acceptance, column 16)
  awk 'FNR == 1 { f++ } $1 == "torch-dense" && NF == 18 && $18 ~ /^(yes|no)$/ {
         k = $2 " " $3 " " $4 " " $5 " " $6 " " $7
         if (f == 1) a[k] = $16; else if (k in a && a[k] > 0) {
           d = ($16 - a[k]) / a[k]; if (d < 0) d = -d; n++; s += d; if (d > m) { m = d; mk = k }
           if ($18 == "no") { nh++; if (d > mh) mh = d } } }
       END { printf "# predictions, cycle vs annotated model: %d configurations (%d held out): mean |difference| %.3f%%, max %.3f%% (%s), max over held-out %.3f%%\n", n, nh, n ? 100 * s / n : 0, 100 * m, mk, 100 * mh }' \
    "$K/cycle_${set}_annotated.txt" "$K/cycle_${set}_cycle.txt"
  } >> "$OUT"
done
cat "$OUT"
