#!/bin/sh
# validate.sh: `make validate`. From the committed calibration traces only, fits one model
# per preset (specsim fit), predicts every configuration of the measured grid with the
# simulator (specsim run) and prints measured vs predicted tok/s with the error, and per
# preset the median and max absolute error over the configurations NOT in the calibration
# subset (docs/validation.md); then the predictions' 80% intervals and the share of measured
# runs inside them (models/coverage.awk). CPU only; a few hundred configurations in well
# under a minute.
#
# usage: sh models/validate.sh [SPECSIM]          (default bin/specsim)
# inputs (overridable for tests):
#   VALIDATE_CALIB     traces/calib: *.json, *.json.gz, *.json.part, manifest.csv, and
#                      gemm_<preset>.csv (a GEMM sweep, specbench --gemm-sweep; optional)
#   VALIDATE_SWEEP     where gemm_<preset>.csv is looked for (default: VALIDATE_CALIB)
#   VALIDATE_MEASURED  traces/validation/measured.csv (profiler/device/grid.sh)
#   VALIDATE_OUT       traces/validation/validation.txt (the table, also printed)
#   VALIDATE_WORK      build/validate (decompressed traces, fitted models, logs)
#   VALIDATE_PRESETS   only these presets of the measured grid (space-separated; default all)
#   VALIDATE_TRUTH     the ground truth's name in the coverage table (default specbench)
#   VALIDATE_COVERAGE  LO:HI, the coverage target in percent (default 70:90)
#   VALIDATE_ARGS      extra specsim run knobs for every prediction, e.g. the what-ifs of
#                      issue 7: "--ranks 4 --link h200x4-p2p-off.json" (docs/multigpu.md)
#   VALIDATE_FIT_ARGS  extra specsim fit options for every model, e.g. the naming options of
#                      Kineto captures: "--join --spec-shape 2,1,3" (models/kineto_validate.sh)
#   VALIDATE_NODES     node-level reference captures (specprof --mode always) for lite
#                      calibration captures (capture.mode lite, docs/fit.md "Lite captures"):
#                      a folder (each calibration trace FILE is fitted with --nodes
#                      $VALIDATE_NODES/FILE, same file name) or a CSV with columns file,nodes
#                      (nodes: paths separated by ';', or - for none: the capture is fitted from its own
#                      node and eager probes, docs/fit.md 1c); models/lite_validate.sh
#   VALIDATE_TARGET_MEDIAN, VALIDATE_TARGET_MAX   the error targets in % (default 3 and 8, issue
#                      5's; torchbench's are 2 and 6, issue 13's)
#   VALIDATE_HOST_PROBE, VALIDATE_HOST_REF   a host-speed column of the measured grid (e.g.
#                      torchbench's probe_py_us: a fixed piece of Python timed beside each
#                      window) and the CSV files (space-separated) of the same column measured
#                      while the calibration was captured: the verdict then predicts each configuration at the host
#                      speed its runs had, --host-scale = mean probe of its repeats / median
#                      probe of the preset's calibration rows (as it predicts at the acceptance
#                      the runs drew); the nominal column stays at the traced host
# $VALIDATE_CALIB/fit.env, when present: FIT_*=VALUE lines (# comments) set for `specsim fit`,
# e.g. the profiler's GPU cost per kernel measured for that program (FIT_CUPTI_KERNEL_US).
# A preset with calibration traces but no measured row is listed as "no measured grid" and
# is not a miss.
# exit: 0 targets met (errors and coverage); 1 inputs missing; 2 a fit or a simulation failed;
# 3 targets missed.
set -u
SPECSIM=${1:-bin/specsim}
CALIB=${VALIDATE_CALIB:-traces/calib}
SWEEP=${VALIDATE_SWEEP:-$CALIB}
MEASURED=${VALIDATE_MEASURED:-traces/validation/measured.csv}
OUT=${VALIDATE_OUT:-traces/validation/validation.txt}
WORK=${VALIDATE_WORK:-build/validate}
# issue 5's acceptance: per preset, over configurations not in the calibration subset
TARGET_MEDIAN_PCT=${VALIDATE_TARGET_MEDIAN:-3}
TARGET_MAX_PCT=${VALIDATE_TARGET_MAX:-8}
# issue 18's: the share of held-out measurements inside their 80% prediction interval
TARGET_COVERAGE_LO=70
TARGET_COVERAGE_HI=90
# the ground truth the measured grid comes from, named in the coverage table
TRUTH=${VALIDATE_TRUTH:-specbench}

die() { echo "make validate: $1" >&2; exit "${2:-2}"; }
case "${VALIDATE_COVERAGE:-}" in
  "") ;;
  *:*) TARGET_COVERAGE_LO=${VALIDATE_COVERAGE%%:*}; TARGET_COVERAGE_HI=${VALIDATE_COVERAGE##*:} ;;
  *) die "VALIDATE_COVERAGE=$VALIDATE_COVERAGE: expected LO:HI (percent)" 1 ;;
esac

[ -x "$SPECSIM" ] || die "$SPECSIM: not built (run make)" 1
missing=""
[ -f "$MEASURED" ] || missing="$missing
  $MEASURED: the measured grid (run profiler/device/grid.sh on a GPU, issue 4)"
ntr=$(ls "$CALIB"/*.json "$CALIB"/*.json.gz "$CALIB"/*.json.part 2>/dev/null | wc -l)
[ "$ntr" -gt 0 ] || missing="$missing
  $CALIB/*.json[.gz]: specprof captures of the calibration subset (issue 4)"
if [ -n "$missing" ]; then
  echo "make validate: cannot validate, missing:$missing" >&2
  exit 1
fi
rm -rf "$WORK"
mkdir -p "$WORK/calib" || die "$WORK: cannot create"

# CSV splitting with quotes (mawk has no FPAT); shared by every awk below.
CSV_AWK='
function csv(line, f,    n, i, c, q, cur, L) {
  n = 0; cur = ""; q = 0; L = length(line); sub(/\r$/, "", line)
  for (i = 1; i <= L; i++) {
    c = substr(line, i, 1)
    if (q) { if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ } else q = 0 } else cur = cur c }
    else if (c == "\"") q = 1
    else if (c == ",") { f[++n] = cur; cur = "" }
    else cur = cur c
  }
  f[++n] = cur
  return n
}'

# ---- 1. the calibration traces: decompress, and say what each one is ------------------------
# traces.tsv: path preset mode steps topk concurrency experts moe_topk
: > "$WORK/traces.tsv"
: > "$WORK/files.tsv"          # listed name, path to read
for f in "$CALIB"/*.json "$CALIB"/*.json.gz "$CALIB"/*.json.part; do
  [ -f "$f" ] || continue
  b=$(basename "$f")
  case "$b" in
    *.gz) p="$WORK/calib/${b%.gz}"; gzip -dc "$f" > "$p" || die "$f: cannot decompress" ;;
    *) p="$f" ;;
  esac
  printf '%s\t%s\n' "$b" "$p" >> "$WORK/files.tsv"
done
man="$CALIB/manifest.csv"
if [ -f "$man" ]; then
  awk -v files="$WORK/files.tsv" -v man="$man" "$CSV_AWK"'
    BEGIN { while ((getline l < files) > 0) { split(l, x, "\t"); path[x[1]] = x[2]; order[++n] = x[1] } }
    NR == 1 { m = csv($0, h); for (i = 1; i <= m; i++) col[h[i]] = i
      if (!("file" in col) || !("preset" in col) || !("mode" in col) || !("concurrency" in col)) {
        print man ": field file/preset/mode/concurrency: missing column" > "/dev/stderr"; bad = 1; exit 2 }
      next }
    { csv($0, v); f = v[col["file"]]; if (!(f in path)) next
      spec = v[col["mode"]] == "spec"
      st = spec && ("steps" in col) ? v[col["steps"]] : ""
      tk = spec ? ((("topk" in col) && v[col["topk"]] != "") ? v[col["topk"]] : 1) : ""
      # one row per configuration a trace holds (a trace may hold several)
      row[f, ++nr[f]] = v[col["preset"]] "\t" v[col["mode"]] "\t" st "\t" tk "\t" v[col["concurrency"]] "\t" \
               (("experts" in col) ? v[col["experts"]] : "") "\t" (("moe_topk" in col) ? v[col["moe_topk"]] : "") }
    END { if (bad) exit 2
      for (i = 1; i <= n; i++) { f = order[i]
        if (!(f in nr)) { print man ": field file: value " f ": the trace is not listed in the manifest" > "/dev/stderr"; exit 2 }
        for (j = 1; j <= nr[f]; j++) print path[f] "\t" row[f, j] } }' "$man" > "$WORK/traces.tsv" || die "$man: cannot be used"
else
  # no manifest: the preset is the file name up to the first '_'; the shape comes from the
  # trace's phase ranges (steps=, topk=, bs= of the most common verify or decode range)
  while IFS="$(printf '\t')" read -r b p; do
    pre=${b%%_*}; pre=${pre%%.*}
    line=$(grep -o '"name":"\(verify\|decode\) [^"]*"' "$p" | awk -v pre="$pre" '
      { mode = ($0 ~ /"name":"verify/) ? "spec" : "baseline"; s = ""; k = ""; bs = ""
        n = split($0, w, " ")
        for (i = 1; i <= n; i++) { split(w[i], kv, "="); gsub(/"/, "", kv[2])
          if (kv[1] == "steps") s = kv[2]; if (kv[1] == "topk") k = kv[2]; if (kv[1] == "bs") bs = kv[2] }
        key = mode "\t" (mode == "spec" ? s : "") "\t" (mode == "spec" ? k : "") "\t" bs
        c[key]++ }
      END { best = ""; for (q in c) if (best == "" || c[q] > c[best]) best = q
            if (best != "") printf "%s\t%s\t\t\n", pre, best }')
    [ -n "$line" ] || die "$p: no verify or decode NVTX range with bs=: cannot tell its configuration (add $man)"
    printf '%s\t%s\n' "$p" "$line" >> "$WORK/traces.tsv"
  done < "$WORK/files.tsv"
fi

# ---- 2. one model per preset, from its calibration traces only ---------------------------------
# the calibration's fit environment (FIT_* variables only)
if [ -f "$CALIB/fit.env" ]; then
  while IFS= read -r l; do
    l=${l%%#*}
    l=$(echo "$l" | tr -d ' \t')
    [ -n "$l" ] || continue
    case "$l" in
      FIT_[A-Z_]*=*) export "$l" ;;
      *) die "$CALIB/fit.env: line \"$l\": not FIT_NAME=VALUE" 1 ;;
    esac
  done < "$CALIB/fit.env"
fi
presets=$(cut -f2 "$WORK/traces.tsv" | sort -u)
for pre in $presets; do
  files=$(awk -F'\t' -v p="$pre" '$2 == p && !seen[$1]++ { print $1 }' "$WORK/traces.tsv")
  moe=$(awk -F'\t' -v p="$pre" '$2 == p && $7 != "" && $7 > 0 { print "--moe " $7 "," $8; exit }' "$WORK/traces.tsv")
  if [ -z "$moe" ]; then
    case "$pre" in   # specbench presets (docs/specbench.md) -> the LLM preset they imitate
      kimi*) moe="--llm models/presets/kimi-k2.5.json" ;;
      glm*)  moe="--llm models/presets/glm-5.json" ;;
    esac
  fi
  # the preset's GEMM sweep (specbench --gemm-sweep), when the calibration has one
  gs=""
  [ -f "$SWEEP/gemm_$pre.csv" ] && gs="--gemm-sweep $SWEEP/gemm_$pre.csv"
  # a link that leads nowhere (a calibration folder copied without its target) is not "no
  # sweep": the fit would run without it and every number would move, silently
  [ -L "$SWEEP/gemm_$pre.csv" ] && [ ! -e "$SWEEP/gemm_$pre.csv" ] &&
    die "$SWEEP/gemm_$pre.csv: a symbolic link to $(readlink "$SWEEP/gemm_$pre.csv"), which does not exist" 1
  # lite calibration captures: each with its node-level reference of the same name
  nodes=""
  if [ -n "${VALIDATE_NODES:-}" ]; then
    for p in $files; do
      b=$(awk -F'\t' -v p="$p" '$2 == p { print $1; exit }' "$WORK/files.tsv")
      if [ -d "$VALIDATE_NODES" ]; then
        [ -f "$VALIDATE_NODES/$b" ] || die "$VALIDATE_NODES/$b: no node-level reference for the calibration trace $b (VALIDATE_NODES)" 1
        nodes="$nodes --nodes $VALIDATE_NODES/$b"
      else
        refs=$(awk -F, -v b="$b" 'NR > 1 && $1 == b { gsub(/\r/, "", $2); print $2; exit }' "$VALIDATE_NODES")
        [ -n "$refs" ] || die "$VALIDATE_NODES: field file: value $b: no row names the calibration trace's node-level reference" 1
        [ "$refs" = "-" ] && continue   # no reference: the capture's own probes (docs/fit.md 1c)
        for r in $(echo "$refs" | tr ';' ' '); do
          [ -f "$r" ] || die "$VALIDATE_NODES: field nodes: value $r: no such file (for $b)" 1
          nodes="$nodes --nodes $r"
        done
      fi
    done
  fi
  # shellcheck disable=SC2086
  "$SPECSIM" fit $files -o "$WORK/$pre.json" --name "$pre-fit" --quiet $moe $gs $nodes ${VALIDATE_FIT_ARGS:-} \
    > "$WORK/fit-$pre.log" 2>&1 || { cat "$WORK/fit-$pre.log" >&2; die "specsim fit failed for preset $pre"; }
done

# ---- 3. the measured grid: repeats folded into their mean ----------------------------------------
# configs.tsv: preset mode steps topk draft_tokens alpha concurrency graphs output_len prompt_len
#              reps mean(tokens over time where every repeat records seconds, else the
#              mean tok/s) min max calib accept_len(mean over the repeats; spec rows of a grid
#              that records it) seconds(mean measured window of the repeats, when the grid
#              records it) repeats(each repeat's tok/s, ';'-separated) iter_spread((max - min)
#              / mean of iter_us over the repeats, %) host_scale(mean VALIDATE_HOST_PROBE of
#              the repeats / the preset's reference, when both are given); "-" where a value
#              is missing (the shell's read would merge empty tab-separated fields)
HPROBE=${VALIDATE_HOST_PROBE:-}
HREF=${VALIDATE_HOST_REF:-}
if [ -n "$HPROBE" ]; then
  [ -n "$HREF" ] || die "VALIDATE_HOST_PROBE=$HPROBE needs VALIDATE_HOST_REF, the calibration's CSV files" 1
  for f in $HREF; do [ -f "$f" ] || die "VALIDATE_HOST_REF: $f: no such file" 1; done
  # the reference per preset: the median of the probe over the calibration rows
  # shellcheck disable=SC2086
  awk "$CSV_AWK"' FNR == 1 { delete col; n = csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i
      if (!(probe in col) || !("preset" in col)) { print FILENAME ": field " probe ": missing column" > "/dev/stderr"; exit 1 }
      next }
    { m = csv($0, v); x = v[col[probe]] + 0; if (x > 0) { p = v[col["preset"]]; k[p]++; a[p, k[p]] = x } }
    END { for (p in k) { n = k[p]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[p, j] < a[p, i]) { t = a[p, i]; a[p, i] = a[p, j]; a[p, j] = t }
        printf "%s\t%.6g\n", p, n % 2 ? a[p, (n + 1) / 2] : 0.5 * (a[p, n / 2] + a[p, n / 2 + 1]) } }
  ' probe="$HPROBE" $HREF > "$WORK/host_ref.tsv" || die "$HREF: could not be read" 1
  [ -s "$WORK/host_ref.tsv" ] || die "$HREF: field $HPROBE: no positive value" 1
else
  : > "$WORK/host_ref.tsv"
fi
awk -v OFS='\t' -v traces="$WORK/traces.tsv" -v only="${VALIDATE_PRESETS:-}" -v probe="$HPROBE" \
    -v href="$WORK/host_ref.tsv" "$CSV_AWK"'
  BEGIN { FS = "\t"
    while ((getline l < traces) > 0) { split(l, t, "\t"); cal[t[2] SUBSEP t[3] SUBSEP t[4] SUBSEP t[5] SUBSEP t[6]] = 1 }
    while ((getline l < href) > 0) { split(l, t, "\t"); hr[t[1]] = t[2] + 0 } }
  NR == 1 { n = csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i
    split("preset mode concurrency tok_s", need, " ")
    for (i = 1; i <= 4; i++) if (!(need[i] in col)) { print "measured.csv: field " need[i] ": missing column" > "/dev/stderr"; bad = 1; exit 2 }
    next }
  { m = csv($0, v); if (m < 2) next
    if (only != "" && index(" " only " ", " " v[col["preset"]] " ") == 0) next
    g = ("cuda_graph_bs" in col) ? v[col["cuda_graph_bs"]] : ""
    key = v[col["preset"]] OFS v[col["mode"]] OFS (("steps" in col) ? v[col["steps"]] : "") OFS \
          (("topk" in col) ? v[col["topk"]] : "") OFS (("draft_tokens" in col) ? v[col["draft_tokens"]] : "") OFS \
          (("alpha" in col) ? v[col["alpha"]] : "") OFS v[col["concurrency"]] OFS g OFS \
          (("output_len" in col) ? v[col["output_len"]] : "") OFS (("prompt_len" in col) ? v[col["prompt_len"]] : "")
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
    x = v[col["tok_s"]] + 0; cnt[key]++; tsum[key] += x; rl[key] = rl[key] (cnt[key] > 1 ? ";" : "") v[col["tok_s"]]
    if ("seconds" in col && v[col["seconds"]] != "") { ssum[key] += v[col["seconds"]]; scnt[key]++
      if (v[col["seconds"]] + 0 > 0) { wsum[key] += x * v[col["seconds"]]; wcnt[key]++ } }
    if ("accept_len" in col && v[col["accept_len"]] != "") { asum[key] += v[col["accept_len"]]; acnt[key]++ }
    if (probe != "" && (probe in col) && v[col[probe]] + 0 > 0) { hsum[key] += v[col[probe]]; hcnt[key]++ }
    if (!(key in mn) || x < mn[key]) mn[key] = x; if (!(key in mx) || x > mx[key]) mx[key] = x
    if ("iter_us" in col && v[col["iter_us"]] != "") { y = v[col["iter_us"]] + 0; isum[key] += y; icnt[key]++
      if (!(key in imn) || y < imn[key]) imn[key] = y; if (!(key in imx) || y > imx[key]) imx[key] = y } }
  END { if (bad) exit 2
    for (i = 1; i <= nk; i++) { k = order[i]; split(k, c, "\t")
      spec = c[2] == "spec"; topk = (c[4] == "" || c[4] == 0) ? 1 : c[4]
      # calibration = same preset, mode, steps, topk and concurrency (the same kernels and
      # token counts; acceptance does not change the costs)
      ck = c[1] SUBSEP c[2] SUBSEP (spec ? c[3] : "") SUBSEP (spec ? topk : "") SUBSEP c[7]
      # the truth: the tokens of the repeats over their time (a benchmark of the repeats end to end:
      # what the simulator predicts), where every repeat records its window; a mean of rates
      # would run fast by about their variance (the eager loop of call 16, runs 25% sd: +4.0%)
      meas = (wcnt[k] == cnt[k] && ssum[k] > 0) ? wsum[k] / ssum[k] : tsum[k] / cnt[k]
      print k, cnt[k], meas, mn[k], mx[k], (ck in cal) ? "yes" : "no", \
            (spec && acnt[k] > 0) ? sprintf("%.4f", asum[k] / acnt[k]) : "-", \
            (scnt[k] > 0 ? sprintf("%.4f", ssum[k] / scnt[k]) : "-"), rl[k], \
            (icnt[k] > 0 && isum[k] > 0) ? sprintf("%.2f", (imx[k] - imn[k]) / (isum[k] / icnt[k]) * 100) : "-", \
            (hcnt[k] > 0 && hr[c[1]] > 0) ? sprintf("%.4f", hsum[k] / hcnt[k] / hr[c[1]]) : "-" } }
' "$MEASURED" > "$WORK/configs.tsv" || die "$MEASURED: could not be read" 1
[ -s "$WORK/configs.tsv" ] || die "$MEASURED: no rows" 1

# ---- 4. predict every configuration ------------------------------------------------------------
# one specsim run per configuration, JOBS at a time; outputs collected after
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
mkdir -p "$WORK/runs"
i=0
jobs_n=0
# launch RUN ARGS...: one specsim run in the background, its command line kept beside it,
# its exit status in RUN.rc
launch() {
  r=$1; shift
  echo "$SPECSIM $*" > "$WORK/runs/$r.cmd"
  { "$SPECSIM" "$@" > "$WORK/runs/$r.csv" 2> "$WORK/runs/$r.err"; echo $? > "$WORK/runs/$r.rc"; } &
  jobs_n=$((jobs_n + 1))
}
while IFS="$(printf '\t')" read -r pre mode steps topk dt alpha conc graphs olen plen reps mean mn mx cal acc sec rlist isp hs; do
  i=$((i + 1))
  [ "$acc" = - ] && acc=""
  [ "$hs" = - ] && hs=""
  [ "$sec" = - ] && sec=""
  model="$WORK/$pre.json"
  [ -f "$model" ] || die "$MEASURED: preset $pre: no calibration trace of it in $CALIB"
  # shellcheck disable=SC2086
  # --precision 0: the fixed run lengths the committed table was made with (1000 iterations,
  # at least 20,000 request-iterations), so that its point predictions stay as they were;
  # --seconds: the interval is for a run as long as the GPU's measured window
  set -- run --model "$model" --concurrency "$conc" --csv --quiet --precision 0 ${VALIDATE_ARGS:-}
  [ -n "$sec" ] && set -- "$@" --seconds "$sec"
  if [ "$mode" = spec ]; then
    set -- "$@" --baseline 0 --steps "$steps"
    [ -n "$topk" ] && [ "$topk" != 0 ] && set -- "$@" --topk "$topk"
    [ -n "$dt" ] && [ "$dt" != 0 ] && set -- "$@" --draft-tokens "$dt"
  else
    set -- "$@" --baseline 1
  fi
  case "$graphs" in
    "") ;;
    0|none) set -- "$@" --cuda-graph-bs none ;;
    *) set -- "$@" --cuda-graph-bs "$(echo "$graphs" | tr ';' ',')" ;;
  esac
  # specbench writes lengths as LO:HI (uniform); the simulator takes N or uniform:LO:HI for
  # the output and one prompt length (the mean: the KV context is what it prices)
  case "$olen" in
    "") ;;
    *:*) lo=${olen%%:*}; hi=${olen##*:}
         if [ "$lo" = "$hi" ]; then set -- "$@" --output-len "$lo"; else set -- "$@" --output-len "uniform:$lo:$hi"; fi ;;
    *) set -- "$@" --output-len "$olen" ;;
  esac
  case "$plen" in
    "") ;;
    *:*) set -- "$@" --prompt-len $(( (${plen%%:*} + ${plen##*:}) / 2 )) ;;
    *) set -- "$@" --prompt-len "$plen" ;;
  esac
  # two predictions of a speculative configuration: at its nominal alpha, and at the
  # acceptance its run realized (specsim --accept-len: the alpha whose draft yields the
  # run's recorded accept_len; a run that accepted every draft token, or none, has no such
  # alpha and keeps the nominal one); a baseline has one, written to both
  if [ "$mode" = spec ] && [ -n "$alpha" ]; then launch "$i" "$@" --alpha "$alpha"
  else launch "$i" "$@"; fi
  # the verdict's run: at the realized acceptance and (VALIDATE_HOST_PROBE) the host speed
  # the runs had; without either it is the nominal run
  realized=""
  if [ "$mode" = spec ] && [ -n "$acc" ] &&
     awk -v a="$acc" -v s="$steps" 'BEGIN { exit !(a > 1 && a < s + 1) }'; then
    realized="--accept-len $acc"
  elif [ "$mode" = spec ] && [ -n "$alpha" ]; then
    [ -n "$hs" ] && realized="--alpha $alpha"
  fi
  if [ -n "$realized" ] || [ -n "$hs" ]; then
    # shellcheck disable=SC2086
    launch "$i.r" "$@" $realized ${hs:+--host-scale $hs}
  fi
  [ "$jobs_n" -ge "$JOBS" ] && { wait; jobs_n=0; }
done < "$WORK/configs.tsv"
wait
n=$i
i=0
while [ $i -lt "$n" ]; do
  i=$((i + 1))
  for r in "$i" "$i.r"; do
    [ -f "$WORK/runs/$r.cmd" ] || continue
    # a run fails by its exit status; its warnings (a phase priced past the calibration
    # traces) are counted in the table
    if [ "$(cat "$WORK/runs/$r.rc" 2>/dev/null)" != 0 ] || [ ! -s "$WORK/runs/$r.csv" ] ||
       grep -qv '^specsim run: warning: ' "$WORK/runs/$r.err"; then
      cat "$WORK/runs/$r.err" >&2
      die "$(cat "$WORK/runs/$r.cmd"): failed"
    fi
  done
done
# the predicted tok/s: tok_s of a speculative run, base_tok_s of a baseline run
# pred.tsv: configs.tsv's first 16 columns + predicted at the nominal alpha + predicted at the
# realized one (the nominal one again where nothing was realized) + beyond the traces (1/0)
# + configs.tsv's seconds and repeats + the nominal prediction's p10 and p90 + configs.tsv's
# iter_us spread
awk -F'\t' -v runs="$WORK/runs" '
  function pred(f, want,    c, h, l, m, v, i, p) {
    c = 0; h = 0; p = ""
    while ((getline l < f) > 0) {
      if (l ~ /^#/) continue
      m = split(l, v, ",")
      if (!h) { for (i = 1; i <= m; i++) if (v[i] == want) c = i; h = 1; continue }
      if (c) p = v[c]; break }
    close(f)
    if (p == "") { print f ": no " want " column in the simulator output" > "/dev/stderr"; exit 2 }
    return p }
  function warned(f,    l, w) {
    w = 0
    while ((getline l < f) > 0) if (l ~ /warning: .*extrapolated/) w = 1
    close(f)
    return w }
  { want = $2 == "spec" ? "tok_s" : "base_tok_s"
    pn = pred(runs "/" NR ".csv", want)
    f = runs "/" NR ".r.csv"; pr = pn
    if ((getline l < f) > 0) { close(f); pr = pred(f, want) }
    beyond = warned(runs "/" NR ".err") || warned(runs "/" NR ".r.err")
    lo = pred(runs "/" NR ".csv", want "_p10"); hi = pred(runs "/" NR ".csv", want "_p90")
    for (i = 1; i <= 16; i++) printf "%s\t", $i
    print pn "\t" pr "\t" beyond "\t" $17 "\t" $18 "\t" lo "\t" hi "\t" $19 "\t" $20 }' "$WORK/configs.tsv" > "$WORK/pred.tsv" || die "reading the simulator outputs failed"

# ---- 5. the table and the verdict ---------------------------------------------------------------
# the calibrated presets the table is about (VALIDATE_PRESETS, when given, selects)
cpresets=""
for pre in $presets; do
  if [ -z "${VALIDATE_PRESETS:-}" ] || echo " $VALIDATE_PRESETS " | grep -q " $pre "; then
    cpresets="$cpresets $pre"
  fi
done
# The verdict takes the prediction at the realized acceptance (the GPU's tok/s against the
# simulator given the workload the GPU ran); the nominal-alpha error is shown beside it.
mkdir -p "$(dirname "$OUT")"
awk -F'\t' -v tmed="$TARGET_MEDIAN_PCT" -v tmax="$TARGET_MAX_PCT" -v measured="$MEASURED" \
    -v calib="$CALIB" -v cpresets="$cpresets" -v hprobe="$HPROBE" -v href="$HREF" -v hreft="$WORK/host_ref.tsv" '
  function abs(x) { return x < 0 ? -x : x }
  function median(arr, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j + 1] = arr[j]; arr[j + 1] = t }
    return (n % 2) ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2 }
  BEGIN {
    printf "# specsim validation: measured %s, models fitted from %s only\n", measured, calib
    printf "# measured = the repeats\047 tokens over their time (sum tok/s x seconds / sum seconds; the mean\n"
    printf "# tok/s where a repeat records no seconds), spread = (max - min) / mean, acc = mean accepted\n"
    printf "# tokens per iteration the run drew; nominal = predicted at the configured alpha, error =\n"
    printf "# (predicted - measured) / measured at the acceptance the run realized (the verdict);\n"
    printf "# calib = configuration in the calibration subset\n"
    if (hprobe != "") {
      while ((getline l < hreft) > 0) { split(l, t, "\t"); rl = rl (rl == "" ? "" : ", ") t[1] " " t[2] }
      printf "# host speed: the verdict also predicts at the host speed the runs had: --host-scale =\n"
      printf "# mean %s of the repeats / its median while the calibration was captured (%s: %s)\n", hprobe, href, rl }
    printf "# %-10s %-8s %5s %4s %3s %5s %5s %-14s %7s %4s %10s %7s %6s %10s %8s %10s %8s %5s\n", "preset", "mode",
      "steps", "topk", "dt", "alpha", "conc", "graphs", "out_len", "reps", "measured", "spread",
      "acc", "nominal", "error", "predicted", "error", "calib"
    printf "# %-10s %-8s %5s %4s %3s %5s %5s %-14s %7s %4s %10s %7s %6s %10s %8s %10s %8s %5s\n", "-", "-", "-",
      "-", "tok", "-", "req", "-", "tok", "-", "tok/s", "%", "tok", "tok/s", "%", "tok/s", "%", "-" }
  # a configuration runs eagerly above its largest captured batch (or with none captured)
  function kind(graphs, conc, mode,    g, n, i, mx) {
    mx = 0
    if (graphs != "" && graphs != "0" && graphs != "none") {
      n = split(graphs, g, ";"); for (i = 1; i <= n; i++) if (g[i] + 0 > mx) mx = g[i] + 0
    }
    return (mode == "spec" ? "spec" : "baseline") " " ((mx > 0 && conc + 0 <= mx) ? "graph" : "eager") }
  { en = ($17 - $12) / $12 * 100; e = ($18 - $12) / $12 * 100; sp = $12 > 0 ? ($14 - $13) / $12 * 100 : 0
    g = length($8) > 14 ? substr($8, 1, 11) "..." : $8
    printf "  %-10s %-8s %5s %4s %3s %5s %5s %-14s %7s %4s %10.2f %7.2f %6s %10.2f %+8.2f %10.2f %+8.2f %5s\n", $1, $2,
      $3, $4, $5, $6, $7, (g == "" ? "-" : g), $9, $11, $12, sp, ($16 == "" ? "-" : $16), $17, en, $18, e, $15
    if (!($1 in seen)) { seen[$1] = 1; pres[++np] = $1 }
    if ($15 == "no") { n[$1]++; errs[$1, n[$1]] = abs(e); nerrs[$1, n[$1]] = abs(en)
      if (abs(e) > mx[$1]) mx[$1] = abs(e); if (abs(en) > nmx[$1]) nmx[$1] = abs(en)
      sps[$1, n[$1]] = sp; if ($24 != "-" && $24 != "") { ni[$1]++; isps[$1, ni[$1]] = $24 + 0 }
      k = $1 SUBSEP kind($8, $7, $2); if (!(k in kseen)) { kseen[k] = 1; kinds[$1, ++nks[$1]] = kind($8, $7, $2) }
      kn[k]++; kerr[k, kn[k]] = abs(e); ksum[k] += e; if (abs(e) > kmx[k]) kmx[k] = abs(e)
      if ($19 == 1) { nb[$1]++; berrs[$1, nb[$1]] = abs(e); if (abs(e) > bmx[$1]) bmx[$1] = abs(e) } }
    else nc[$1]++ }
  END {
    printf "#\n# per preset, over configurations NOT in the calibration subset (targets: median <= %s%%, max <= %s%%)\n", tmed, tmax
    printf "# %-10s %6s %6s %10s %10s %-7s %s\n", "preset", "held", "calib", "median|e|", "max|e|", "verdict", "(at the nominal alpha: median, max)"
    miss = 0
    for (i = 1; i <= np; i++) { p = pres[i]
      if (n[p] == 0) { printf "  %-10s %6d %6d %10s %10s %s\n", p, 0, nc[p], "-", "-", "no held-out configuration"; miss = 1; continue }
      for (j = 1; j <= n[p]; j++) { a[j] = errs[p, j]; b[j] = nerrs[p, j] }
      md = median(a, n[p]); nmd = median(b, n[p]); ok = md <= tmed && mx[p] <= tmax; if (!ok) miss = 1
      printf "  %-10s %6d %6d %9.2f%% %9.2f%% %-7s (%.2f%%, %.2f%%)\n", p, n[p], nc[p], md, mx[p], ok ? "met" : "MISSED", nmd, nmx[p] }
    # a preset calibrated but not measured: nothing to check, not a miss
    nq = split(cpresets, cq, " ")
    for (i = 1; i <= nq; i++) if (!(cq[i] in seen))
      printf "  %-10s %6s %6s %10s %10s %s\n", cq[i], "-", "-", "-", "-", "no measured grid (its calibration traces are fitted; nothing to compare)"
    printf "# by kind (held out): eager = above the largest captured batch; median |e|, max |e|, mean e\n"
    for (i = 1; i <= np; i++) { p = pres[i]
      for (q = 1; q <= nks[p]; q++) { k = p SUBSEP kinds[p, q]
        for (j = 1; j <= kn[k]; j++) a[j] = kerr[k, j]
        printf "  %-10s %-15s %4d %9.2f%% %9.2f%% %+9.2f%%\n", p, kinds[p, q], kn[k], median(a, kn[k]), kmx[k], ksum[k] / kn[k] } }
    printf "# measured spread between repeats of the held-out configurations, (max - min) / mean: median, max\n"
    printf "# of tok/s (acceptance draws and timing) and of iter_us (timing alone; - : not recorded)\n"
    for (i = 1; i <= np; i++) { p = pres[i]
      if (n[p] == 0) continue
      sm = 0; for (j = 1; j <= n[p]; j++) { a[j] = sps[p, j]; if (a[j] > sm) sm = a[j] }
      s1 = median(a, n[p])
      if (ni[p] > 0) { im = 0; for (j = 1; j <= ni[p]; j++) { b[j] = isps[p, j]; if (b[j] > im) im = b[j] }
        printf "  %-10s tok/s %7.2f%% %7.2f%%   iter_us %7.2f%% %7.2f%%\n", p, s1, sm, median(b, ni[p]), im }
      else printf "  %-10s tok/s %7.2f%% %7.2f%%   iter_us       -        -\n", p, s1, sm }
    printf "# of them priced past the calibration traces (more query tokens per row or tokens a\n"
    printf "# forward than any calibration trace has; specsim warned): median, max\n"
    for (i = 1; i <= np; i++) { p = pres[i]
      if (nb[p] == 0) { printf "  %-10s %6d\n", p, 0; continue }
      for (j = 1; j <= nb[p]; j++) a[j] = berrs[p, j]
      printf "  %-10s %6d %9.2f%% %9.2f%%\n", p, nb[p], median(a, nb[p]), bmx[p] }
    exit miss ? 3 : 0 }' "$WORK/pred.tsv" > "$WORK/validation.txt"
rc=$?

# ---- 6. prediction intervals: a second table, and how often the measurements fall inside ---------
# The intervals are the nominal predictions' (what a user asking for --alpha gets), for a run
# as long as the GPU's measured window (--seconds, from the grid's seconds column): the
# model's residuals and that run's own acceptance draws and jitter (docs/simulator.md,
# "Intervals"). Every repeat is a measurement. The first table above is left as it was.
awk -F'\t' -v truth="$TRUTH" '
  # the phase mode of a configuration: graph at a captured size (exact), padded to the next
  # one, or eager above the largest (or with none captured)
  function kind(mode, conc, graphs,    g, n, i, mx, ex) {
    mx = 0; ex = 0
    if (graphs != "" && graphs != "0" && graphs != "none") {
      n = split(graphs, g, ";")
      for (i = 1; i <= n; i++) { if (g[i] + 0 > mx) mx = g[i] + 0; if (g[i] + 0 == conc + 0) ex = 1 } }
    return (mode == "spec" ? "spec" : "baseline") " " (!(mx > 0 && conc + 0 <= mx) ? "eager" : ex ? "graph-exact" : "graph-padded") }
  BEGIN {
    printf "#\n# prediction intervals of the nominal predictions (specsim p10/p90; --seconds = the measured\n"
    printf "# window, when the grid has one): inside = measured runs of the configuration within [p10, p90];\n"
    printf "# runs = each measured run'"'"'s tok/s\n"
    printf "# %-10s %-8s %5s %4s %3s %5s %5s %7s %4s %10s %10s %10s %7s %6s %5s %s\n", "preset", "mode", "steps",
      "topk", "dt", "alpha", "conc", "seconds", "reps", "p10", "p50", "p90", "width", "inside", "calib", "runs"
    printf "# %-10s %-8s %5s %4s %3s %5s %5s %7s %4s %10s %10s %10s %7s %6s %5s %s\n", "-", "-", "-", "-",
      "tok", "-", "req", "s", "-", "tok/s", "tok/s", "tok/s", "%", "runs", "-", "tok/s" }
  { n = split($21, r, ";"); k = 0
    for (i = 1; i <= n; i++) k += (r[i] + 0 >= $22 + 0 && r[i] + 0 <= $23 + 0)
    printf "  %-10s %-8s %5s %4s %3s %5s %5s %7s %4s %10.2f %10.2f %10.2f %7.2f %6d %5s %s\n", $1, $2, $3,
      $4, $5, $6, $7, $20, $11, $22, $17, $23, ($17 > 0 ? 100 * ($23 - $22) / $17 : 0), k, $15, $21
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", truth, $1, $15, $22, $17, $23, $21, kind($2, $7, $8) > cov }
' cov="$WORK/coverage.tsv" "$WORK/pred.tsv" >> "$WORK/validation.txt"
awk -F'\t' -v lo="$TARGET_COVERAGE_LO" -v hi="$TARGET_COVERAGE_HI" -f "$(dirname "$0")/coverage.awk" \
    "$WORK/coverage.tsv" >> "$WORK/validation.txt"
crc=$?
[ "$crc" -eq 2 ] && die "coverage: malformed rows in $WORK/coverage.tsv"
[ "$crc" -ne 0 ] && rc=3
awk -f "$(dirname "$0")/noise_split.awk" "$WORK/validation.txt" >> "$WORK/validation.txt.noise" 2>/dev/null &&
  cat "$WORK/validation.txt.noise" >> "$WORK/validation.txt"
rm -f "$WORK/validation.txt.noise"
cp "$WORK/validation.txt" "$OUT" || die "$OUT: cannot write"
cat "$OUT"
echo "# written to $OUT (models and logs in $WORK)"
exit $rc
