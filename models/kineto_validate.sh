#!/bin/sh
# kineto_validate.sh: issue 14's comparison. Fits the torch-dense preset twice from the same
# configurations, once from torch.profiler/Kineto captures with SGLang's span names
# ($KV_KINETO/*/: importer kineto, naming profile sglang with each capture's own
# server_args.json, joined into one trace) and once from specprof captures of those
# configurations (the calibration trace of $KV_CALIB, with its fit.env, restricted to them
# by a phase map), and predicts the held-out grid ($KV_MEASURED, unprofiled) with each
# through models/validate.sh. Prints both verdicts and the difference of the median |error|.
# Exit 0 when the Kineto model is not worse by more than a point; KINETO_HOST_EVENT_US
# changes the profiler cost taken out of the Kineto traces (models/timport.c).
# Defaults: H200 call 4, where the Kineto fixtures, the always-mode specprof captures and the
# grid come from one device call (traces/torch/call4).
# usage: sh models/kineto_validate.sh [SPECSIM]     (CPU only, a minute or two)
# writes $KV_KINETO/validation_kineto.txt, validation_specprof_same.txt
set -u
SPECSIM=${1:-bin/specsim}
K=${KV_KINETO:-traces/torch/call4/kineto}
CAL=${KV_CALIB:-traces/torch/call4/always}
MEAS=${KV_MEASURED:-traces/torch/call4/measured.csv}
W=${KV_WORK:-build/kineto_validate}
rm -rf "$W"
mkdir -p "$W/kineto" "$W/specprof" "$W/fixtures" || exit 1
# the Kineto captures, decompressed beside their server_args.json; validate.sh reads them
# through symbolic links in one folder (the fit looks for server_args.json beside the file
# a link points to), with a manifest of the configurations
echo "file,preset,mode,steps,topk,concurrency,experts,moe_topk" > "$W/kineto/manifest.csv"
: > "$W/server.log"
confs=""
graphs=""
for d in "$K"/torch-dense-*/; do
  n=$(basename "$d")
  f=$(ls "$d"*.trace.json.gz | head -n 1)
  mkdir -p "$W/fixtures/$n"
  gzip -dc "$f" > "$W/fixtures/$n/trace.json" || exit 1
  cp "$d/server_args.json" "$W/fixtures/$n/"
  ln -s "$(cd "$W/fixtures/$n" && pwd)/trace.json" "$W/kineto/$n.json"
  conc=${n##*-bs}
  case "$n" in
    *-spec-s*) st=${n#*-spec-s}; st=${st%%-*}; echo "$n.json,torch-dense,spec,$st,1,$conc,0,0" >> "$W/kineto/manifest.csv"
               confs="$confs spec:$st:$conc" ;;
    *) echo "$n.json,torch-dense,baseline,,,$conc,0,0" >> "$W/kineto/manifest.csv"; confs="$confs baseline::$conc" ;;
  esac
  cat "$d/server.log" >> "$W/server.log"
  [ -n "$graphs" ] || graphs=$(tr -d ' \n' < "$d/server_args.json" | sed -n 's/.*"cuda_graph_bs":\[\([0-9,]*\)\].*/\1/p')
done
# the specprof calibration trace, restricted to the same configurations by a phase map:
# the specprof words of those batch sizes and steps, nothing else
ctr=$(awk -F, '$2 == "torch-dense" { print $1; exit }' "$CAL/manifest.csv")
[ -n "$ctr" ] && [ -f "$CAL/$ctr" ] || { echo "$CAL/manifest.csv: no torch-dense trace"; exit 1; }
cp "$CAL/$ctr" "$W/specprof/" || exit 1
# the fit's environment measured for these captures (CUPTI's GPU cost per kernel), as make
# validate fits them; the Kineto captures take the same: their graph phases' GPU time (fitted
# with no CUPTI cost out) exceeds the same call's unprofiled grid by 0.12-0.31 us per kernel
# (verify, 8 graph cells; decode 0.08 at 1 row), as specprof's 0.11-0.17 (docs/importers.md)
[ -f "$CAL/fit.env" ] && cp "$CAL/fit.env" "$W/specprof/" && cp "$CAL/fit.env" "$W/kineto/"
echo "file,preset,mode,steps,topk,concurrency,experts,moe_topk" > "$W/specprof/manifest.csv"
: > "$W/s.map"
for c in $confs; do
  mode=${c%%:*}; r=${c#*:}; st=${r%%:*}; conc=${r#*:}
  if [ "$mode" = spec ]; then
    echo "$ctr,torch-dense,spec,$st,1,$conc,0,0" >> "$W/specprof/manifest.csv"
    for p in draft verify accept extend; do
      echo "$p=$p tokens={tokens} bs=$conc rows={rows} ctx={ctx} graph={graph} steps=$st topk=1 forwards={forwards}*" >> "$W/s.map"
      echo "$p=$p tokens={tokens} bs=$conc rows={rows} ctx={ctx} graph={graph} steps=$st topk=1" >> "$W/s.map"
    done
  else
    echo "$ctr,torch-dense,baseline,,,$conc,0,0" >> "$W/specprof/manifest.csv"
    for p in decode sample; do
      echo "$p=$p tokens={tokens} bs=$conc rows={rows} ctx={ctx} graph={graph} steps=0 topk=0*" >> "$W/s.map"
    done
  fi
done
# when the captures are the calibration subset itself, the specprof model is validate.sh's own
sfit="--phase-map $W/s.map"
tail -n +2 "$W/specprof/manifest.csv" | cut -d, -f2-6 | sort > "$W/kconfs"
tail -n +2 "$CAL/manifest.csv" | cut -d, -f2-6 | grep '^torch-dense,' | sort > "$W/cconfs"
if cmp -s "$W/kconfs" "$W/cconfs"; then
  sfit=""
  grep -e '^file,' -e ',torch-dense,' "$CAL/manifest.csv" > "$W/specprof/manifest.csv"
fi
echo "# Kineto captures:$confs; CUDA-graph sizes $graphs"
echo "# specprof model: ${sfit:-the whole calibration trace (the same configurations)}"
VALIDATE_CALIB="$W/kineto" VALIDATE_MEASURED="$MEAS" VALIDATE_PRESETS=torch-dense \
  VALIDATE_OUT="$K/validation_kineto.txt" VALIDATE_WORK="$W/vk" \
  VALIDATE_FIT_ARGS="--join --ctx-log $W/server.log" \
  sh models/validate.sh "$SPECSIM" > "$W/vk.out" 2>&1
rk=$?
VALIDATE_CALIB="$W/specprof" VALIDATE_MEASURED="$MEAS" VALIDATE_PRESETS=torch-dense \
  VALIDATE_OUT="$K/validation_specprof_same.txt" VALIDATE_WORK="$W/vs" \
  VALIDATE_FIT_ARGS="$sfit" sh models/validate.sh "$SPECSIM" > "$W/vs.out" 2>&1
rs=$?
for r in "k:$rk" "s:$rs"; do
  case "${r#*:}" in 0|3) ;; *) echo "validate.sh failed (${r%%:*}):"; cat "$W/v${r%%:*}.out"; exit 2 ;; esac
done
med() { awk '$1 == "torch-dense" && $4 ~ /%$/ { sub(/%/, "", $4); print $4; exit }' "$1"; }
mk=$(med "$K/validation_kineto.txt")
ms=$(med "$K/validation_specprof_same.txt")
echo "# held-out median |error|: from Kineto captures ${mk}%, from specprof captures of the same configurations ${ms}%"
# issue 14: the Kineto model within 1 point of the specprof model's median; a Kineto model
# that is better by more than a point is reported as such (the check is that it is not worse)
awk -v a="$mk" -v b="$ms" 'BEGIN { d = a - b
  printf "# difference %+.2f points (Kineto %s): within 1 point: %s; not worse by more than 1 point: %s\n", d,
    d < 0 ? "better" : "worse", (d <= 1 && d >= -1) ? "yes" : "no", d <= 1 ? "yes" : "NO"
  exit !(d <= 1) }'
