#!/bin/sh
# kineto_validate.sh: issue 14's comparison. Fits the torch-dense preset twice from the same
# configurations, once from torch.profiler/Kineto captures with SGLang's span names
# (traces/torch/kineto/*/: importer kineto, naming profile sglang, joined into one trace)
# and once from specprof captures of those configurations (the calibration trace
# traces/torch/calib restricted to them by a phase map), and predicts the held-out grid
# (traces/torch/measured.csv, unprofiled) with each through models/validate.sh.
# Prints both verdicts and the difference of the median |error|. Exit 0 when the Kineto
# model is not worse by more than a point; KINETO_HOST_EVENT_US changes the profiler cost
# taken out of the Kineto traces (models/timport.c).
# usage: sh models/kineto_validate.sh [SPECSIM]     (CPU only, about a minute)
# writes traces/torch/kineto/validation_kineto.txt, validation_specprof_same.txt
set -u
SPECSIM=${1:-bin/specsim}
K=traces/torch/kineto
W=${KV_WORK:-build/kineto_validate}
rm -rf "$W"
mkdir -p "$W/kineto" "$W/specprof" || exit 1
# the Kineto captures, one per configuration, with their manifest (flat names for validate.sh)
echo "file,preset,mode,steps,topk,concurrency,experts,moe_topk" > "$W/kineto/manifest.csv"
cp /dev/null "$W/server.log"
confs=""
for d in "$K"/torch-dense-*/; do
  n=$(basename "$d")
  f=$(ls "$d"*.trace.json.gz | head -n 1)
  ln -s "$(cd "$d" && pwd)/$(basename "$f")" "$W/kineto/$n.json.gz"
  conc=${n##*-bs}
  case "$n" in
    *-spec-s*) st=${n#*-spec-s}; st=${st%%-*}; echo "$n.json.gz,torch-dense,spec,$st,1,$conc,0,0" >> "$W/kineto/manifest.csv"
               confs="$confs spec:$st:$conc" ;;
    *) echo "$n.json.gz,torch-dense,baseline,,,$conc,0,0" >> "$W/kineto/manifest.csv"; confs="$confs baseline::$conc" ;;
  esac
  cat "$d/server.log" >> "$W/server.log"
done
args=$(ls "$K"/torch-dense-spec-*/server_args.json | head -n 1)
shape=$(awk 'BEGIN{RS=","} /speculative_num_steps/{gsub(/[^0-9]/,"");s=$0} /speculative_eagle_topk/{gsub(/[^0-9]/,"");k=$0}
             /speculative_num_draft_tokens/{gsub(/[^0-9]/,"");d=$0} END{print s","k","d}' "$args")
graphs=$(tr -d ' \n' < "$args" | sed -n 's/.*"cuda_graph_bs":\[\([0-9,]*\)\].*/\1/p')
# the specprof calibration trace, restricted to the same configurations by a phase map:
# the specprof words of those batch sizes and steps, nothing else
cp "traces/torch/calib/calib_torch-dense.json.gz" "$W/specprof/"
echo "file,preset,mode,steps,topk,concurrency,experts,moe_topk" > "$W/specprof/manifest.csv"
: > "$W/s.map"
for c in $confs; do
  mode=${c%%:*}; r=${c#*:}; st=${r%%:*}; conc=${r#*:}
  if [ "$mode" = spec ]; then
    echo "calib_torch-dense.json.gz,torch-dense,spec,$st,1,$conc,0,0" >> "$W/specprof/manifest.csv"
    for p in draft verify accept extend; do
      echo "$p=$p tokens={tokens} bs=$conc rows={rows} ctx={ctx} graph={graph} steps=$st topk=1*" >> "$W/s.map"
    done
  else
    echo "calib_torch-dense.json.gz,torch-dense,baseline,,,$conc,0,0" >> "$W/specprof/manifest.csv"
    for p in decode sample; do
      echo "$p=$p tokens={tokens} bs=$conc rows={rows} ctx={ctx} graph={graph} steps=0 topk=0*" >> "$W/s.map"
    done
  fi
done
echo "steps=${shape%%,*}" >> "$W/s.map"; echo "topk=1" >> "$W/s.map"; echo "draft_tokens=${shape##*,}" >> "$W/s.map"
echo "# Kineto captures: $confs; shape $shape; CUDA-graph sizes $graphs"
VALIDATE_CALIB="$W/kineto" VALIDATE_MEASURED=traces/torch/measured.csv VALIDATE_PRESETS=torch-dense \
  VALIDATE_OUT="$K/validation_kineto.txt" VALIDATE_WORK="$W/vk" \
  VALIDATE_FIT_ARGS="--join --spec-shape $shape --cuda-graph-bs $graphs --ctx-log $W/server.log" \
  sh models/validate.sh "$SPECSIM" > "$W/vk.out" 2>&1
rk=$?
VALIDATE_CALIB="$W/specprof" VALIDATE_MEASURED=traces/torch/measured.csv VALIDATE_PRESETS=torch-dense \
  VALIDATE_OUT="$K/validation_specprof_same.txt" VALIDATE_WORK="$W/vs" \
  VALIDATE_FIT_ARGS="--phase-map $W/s.map" sh models/validate.sh "$SPECSIM" > "$W/vs.out" 2>&1
rs=$?
for r in "k:$rk" "s:$rs"; do
  case "${r#*:}" in 0|3) ;; *) echo "validate.sh failed (${r%%:*}):"; cat "$W/v${r%%:*}.out"; exit 2 ;; esac
done
mk=$(awk '$1 == "torch-dense" && $4 ~ /%$/ { sub(/%/, "", $4); print $4; exit }' "$K/validation_kineto.txt")
ms=$(awk '$1 == "torch-dense" && $4 ~ /%$/ { sub(/%/, "", $4); print $4; exit }' "$K/validation_specprof_same.txt")
echo "# held-out median |error|: from Kineto captures ${mk}%, from specprof captures of the same configurations ${ms}%"
# issue 14: the Kineto model within 1 point of the specprof model's median; a Kineto model
# that is better by more than a point is reported as such (the check is that it is not worse)
awk -v a="$mk" -v b="$ms" 'BEGIN { d = a - b
  printf "# difference %+.2f points (Kineto %s): within 1 point: %s; not worse by more than 1 point: %s\n", d,
    d < 0 ? "better" : "worse", (d <= 1 && d >= -1) ? "yes" : "no", d <= 1 ? "yes" : "NO"
  exit !(d <= 1) }'
