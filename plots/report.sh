#!/bin/sh
# report.sh: `make report`: runs the what-if sweeps of specsim on one workload model and turns
# them into figures (gnuplot: PNG and SVG) and one page, report/index.md, that embeds them with
# the configuration and the trace/model they came from. docs/report.md explains each figure.
# Usage: sh plots/report.sh SPECSIM [MODEL.json]   (from the Makefile: make report [MODEL=..])
# Workload: ~11,000 simulated configurations (300 measured iterations each) and 18 gnuplot
# runs; 4-20 s on a 2-core machine (measured; the longer when other work shares the cores).
# Knobs (environment): REPORT_DIR (report), REPORT_ITERATIONS (300 measured iterations per
# simulation), REPORT_TRACE (trace for the measured timeline; default: traces/calib/DEFAULT),
# REPORT_VALIDATION (traces/validation/validation.txt), REPORT_TP_FROM, REPORT_TP_LLM (the
# LLM presets the TP=8 figures scale the model between: specsim scale, docs/scale.md).
set -eu

usage() { echo "usage: sh plots/report.sh SPECSIM [MODEL.json]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
abspath() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$(pwd)" "$1" ;; esac; }
SPECSIM=$(abspath "$1")
MODEL_ARG=${2:-}
[ -n "$MODEL_ARG" ] && MODEL_ARG=$(abspath "$MODEL_ARG")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

OUT=${REPORT_DIR:-report}
D=$OUT/data
ITER=${REPORT_ITERATIONS:-300}
VALIDATION=${REPORT_VALIDATION:-traces/validation/validation.txt}
T_START=$(date +%s)
log() { printf 'report [%3ds]: %s\n' "$(($(date +%s) - T_START))" "$*" >&2; }
die() { printf 'report: %s\n' "$*" >&2; exit 2; }
rel() { case $1 in "$ROOT"/*) printf '%s\n' "${1#"$ROOT"/}" ;; *) printf '%s\n' "$1" ;; esac; }

# ---- what the report needs ------------------------------------------------------------------
[ -x "$SPECSIM" ] || die "$SPECSIM: not an executable (run make first)"
command -v gnuplot >/dev/null 2>&1 || die "gnuplot not found: run 'bash .ci/deps.sh' (installs gnuplot-nox) or apt-get install gnuplot-nox"
case $ITER in ''|*[!0-9]*) die "REPORT_ITERATIONS: value \"$ITER\": must be a positive integer" ;; esac
[ "$ITER" -ge 10 ] || die "REPORT_ITERATIONS: value $ITER: must be >= 10"
TERMS=$(gnuplot -e 'set terminal' 2>&1 </dev/null || true)
if printf '%s\n' "$TERMS" | grep -qw pngcairo; then PNGTERM=pngcairo
elif printf '%s\n' "$TERMS" | grep -qw png; then PNGTERM=png
else die "gnuplot has neither the pngcairo nor the png terminal (gnuplot -e 'set terminal')"; fi
case ${REPORT_PNGTERM:-} in pngcairo|png) PNGTERM=$REPORT_PNGTERM ;; '') ;; *) die "REPORT_PNGTERM: value \"$REPORT_PNGTERM\": pngcairo or png" ;; esac
printf '%s\n' "$TERMS" | grep -qw svg || die "gnuplot has no svg terminal (gnuplot -e 'set terminal')"

# A model given from inside the output folder (report/model.json of an earlier run) is kept.
MODEL_ARG_LABEL=$(rel "$MODEL_ARG")
case $MODEL_ARG in
    "$(abspath "$OUT")"/*) [ -f "$MODEL_ARG" ] || die "MODEL=$MODEL_ARG: no such file"
        mkdir -p build/plots; cp "$MODEL_ARG" build/plots/given-model.json
        MODEL_ARG=$ROOT/build/plots/given-model.json ;;
esac
# only what this script writes is removed (REPORT_DIR may name a folder that holds more)
rm -rf "$D" "$OUT/.sec" "$OUT/.notes" "$OUT/index.md" "$OUT/model.json" "$OUT/fit" "$OUT"/fig*.png "$OUT"/fig*.svg
mkdir -p "$D" "$OUT/.sec"
NOTES=$OUT/.notes          # lines for the report's "read this first" list
FAILED=""                   # figures that could not be drawn
: > "$NOTES"
note() { printf -- '- %s\n' "$*" >> "$NOTES"; }

VERSION=$("$SPECSIM" help 2>&1 | sed -n '1s/:.*//p')

# ---- the trace and the model ----------------------------------------------------------------
# traces/calib/DEFAULT names the bundled default trace (relative to the repository): a specprof
# trace file (.json, .json.gz, .json.part) or a folder of them. The measured timeline draws
# that trace (a folder: its first file). The fit uses every trace of the same preset in that
# folder, as models/validate.sh does (the preset from manifest.csv's file and preset columns,
# else the file name up to its first '_' or '.'): one configuration alone gives each kernel
# group one token count, which specsim fit refuses.
TRACE_LABEL="none"
TL_FILE=""                  # the trace the measured timeline is cut from (unpacked)
FIT_FILES=""                # the traces the default model is fitted from (unpacked)
FIT_LABEL=""
FIT_MOE=""
trace_files() {            # trace_files PATH: the trace files a path names (one per line)
    if [ -d "$1" ]; then
        find "$1" -maxdepth 1 -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*.json.part' \) | sort
    elif [ -f "$1" ]; then printf '%s\n' "$1"; fi
}
unpack() {                 # unpack FILE: a path awk and fit can read (.gz unpacked into data/)
    case $1 in
        *.gz) _u=$D/trace/$(basename "$1" .gz); mkdir -p "$D/trace"
              gzip -dc "$1" > "$_u" || return 1; printf '%s\n' "$_u" ;;
        *) printf '%s\n' "$1" ;;
    esac
}
manifest_col() {           # manifest_col FILE COLUMN: that column of FILE's manifest.csv row
    _m=$(dirname "$1")/manifest.csv
    [ -f "$_m" ] || return 0
    awk -F, -v b="$(basename "$1")" -v want="$2" '
        NR == 1 { for (i = 1; i <= NF; i++) { gsub(/^[ "]+|[ "\r]+$/, "", $i); c[$i] = i }; next }
        ("file" in c) && (want in c) { f = $(c["file"]); gsub(/^[ "]+|[ "\r]+$/, "", f)
            if (f == b) { v = $(c[want]); gsub(/^[ "]+|[ "\r]+$/, "", v); print v; exit } }' "$_m"
}
preset_of() {              # preset_of FILE: the manifest's preset, else the name up to '_' or '.'
    _p=$(manifest_col "$1" preset)
    if [ -z "$_p" ]; then _p=$(basename "$1"); _p=${_p%%_*}; _p=${_p%%.*}; fi
    printf '%s\n' "$_p"
}
DEFAULT_TRACE=""
if [ -f traces/calib/DEFAULT ]; then
    DEFAULT_TRACE=$(sed -n '/[^[:space:]]/{s/^[[:space:]]*//;s/[[:space:]]*$//;p;q;}' traces/calib/DEFAULT)
fi
TRACE_SRC=${REPORT_TRACE:-$DEFAULT_TRACE}
if [ -n "$TRACE_SRC" ]; then
    if [ -e "$TRACE_SRC" ]; then
        if [ -d "$TRACE_SRC" ]; then tdir=$TRACE_SRC; named=$(trace_files "$TRACE_SRC" | head -n 1)
        else tdir=$(dirname "$TRACE_SRC"); named=$TRACE_SRC; fi
        if [ -n "$named" ]; then
            TRACE_LABEL=$(rel "$(abspath "$named")")
            TL_FILE=$(unpack "$named") || { log "cannot unpack $named"; TL_FILE=""; }
            pre=$(preset_of "$named")
            nfit=0
            for f in $(trace_files "$tdir"); do
                [ "$(preset_of "$f")" = "$pre" ] || continue
                u=$(unpack "$f") || { log "cannot unpack $f"; continue; }
                FIT_FILES="$FIT_FILES $u"; nfit=$((nfit + 1))
            done
            FIT_LABEL="$nfit trace(s) of preset '$pre' in $(rel "$(abspath "$tdir")") (the traces beside $TRACE_LABEL)"
            # the preset's GEMM sweep beside the traces (specbench --gemm-sweep), as
            # models/validate.sh uses it
            if [ -f "$tdir/gemm_$pre.csv" ]; then
                FIT_MOE="--gemm-sweep $tdir/gemm_$pre.csv"
                FIT_LABEL="$FIT_LABEL and the GEMM sweep $(rel "$(abspath "$tdir/gemm_$pre.csv")")"
            fi
            # the MoE shape, as models/validate.sh gives it: the manifest's experts,moe_topk,
            # else the LLM preset a specbench preset imitates
            ex=$(manifest_col "$named" experts); kk=$(manifest_col "$named" moe_topk)
            if [ -n "$ex" ] && [ -n "$kk" ] && [ "$ex" != 0 ]; then FIT_MOE="$FIT_MOE --moe $ex,$kk"
            else
                case $pre in
                    kimi*) [ -f models/presets/kimi-k2.5.json ] && FIT_MOE="$FIT_MOE --llm models/presets/kimi-k2.5.json" ;;
                    glm*)  [ -f models/presets/glm-5.json ] && FIT_MOE="$FIT_MOE --llm models/presets/glm-5.json" ;;
                esac
            fi
        else
            note "The trace folder $TRACE_SRC holds no trace files (*.json, *.json.gz, *.json.part)."
        fi
    else
        note "The trace named by ${REPORT_TRACE:+REPORT_TRACE}${REPORT_TRACE:-traces/calib/DEFAULT} ($TRACE_SRC) does not exist."
        log "trace $TRACE_SRC does not exist"
    fi
fi

FALLBACK=models/example-llama8b.json
FITTED=0
MODEL=""
MODEL_ORIGIN=""
if [ -n "$MODEL_ARG" ]; then
    [ -f "$MODEL_ARG" ] || die "MODEL=$MODEL_ARG: no such file"
    MODEL=$MODEL_ARG
    MODEL_ORIGIN="given on the command line (MODEL=$MODEL_ARG_LABEL)"
else
    why=""
    if [ ! -f traces/calib/DEFAULT ] && [ -z "${REPORT_TRACE:-}" ]; then why="there is no traces/calib/DEFAULT (no bundled trace yet)"
    elif [ -z "$FIT_FILES" ]; then why="the default trace '$TRACE_SRC' holds no trace"
    elif ! "$SPECSIM" fit --help >/dev/null 2>&1; then why="this specsim has no 'fit' command"
    else
        log "fitting a model from $FIT_LABEL (specsim fit)"
        # shellcheck disable=SC2086
        if "$SPECSIM" fit $FIT_FILES -o "$OUT/model.json" --plot "$OUT/fit" $FIT_MOE > "$D/fit.log" 2>&1; then
            MODEL=$OUT/model.json
            MODEL_ORIGIN="fitted by 'specsim fit${FIT_MOE:+ $FIT_MOE}' from $FIT_LABEL"
            FITTED=1
        else
            why="'specsim fit' of $FIT_LABEL failed: $(grep -v '^#' "$D/fit.log" | grep -v 'warning' | tail -n 2 | tr '\n' ' ')(all of it in $D/fit.log)"
        fi
    fi
    if [ -z "$MODEL" ]; then
        MODEL=$ROOT/$FALLBACK
        MODEL_ORIGIN="the bundled example $FALLBACK (a roofline example, not fitted), because $why"
        note "**Not a fitted model.** These figures use $FALLBACK because $why. Numbers are those of a roofline example (docs/model-format.md), not of a measured system."
        printf 'report: WARNING: using the example model %s because %s\n' "$FALLBACK" "$why" >&2
    fi
fi
MODEL=$(rel "$MODEL")       # relative to the repository when inside it: banners stay short
MODEL_REL=$MODEL
# The model as specsim resolves it (name, device, ranks, source): the banner's "# model:" line.
if ! "$SPECSIM" run --model "$MODEL" --iterations "$ITER" --steps 3 --acceptance alpha:0.7 --concurrency 1 > "$D/banner.txt" 2> "$D/banner.err"; then
    cat "$D/banner.err" >&2
    die "specsim cannot run the model $MODEL_REL (above)"
fi
MODEL_LINE=$(sed -n 's/^# model: //p' "$D/banner.txt" | head -n 1)
MODEL_RANKS=$(printf '%s\n' "$MODEL_LINE" | sed -n 's/.*measured at ranks \([0-9][0-9]*\).*/\1/p')
[ -n "$MODEL_RANKS" ] || MODEL_RANKS=$(sed -n 's/^# ranks *\([0-9][0-9]*\).*/\1/p' "$D/banner.txt" | head -n 1)
[ -n "$MODEL_RANKS" ] || MODEL_RANKS=1
SRC=$(printf 'model: %s | trace: %s | %s, %s iterations per point' "$MODEL_REL" "$TRACE_LABEL" "$VERSION" "$ITER" | tr -d "'\"")
log "model $MODEL_REL ($MODEL_ORIGIN)"

# ---- helpers ------------------------------------------------------------------------------------
sweep() {                  # sweep NAME MODEL KNOBS... -> $D/NAME.csv; its warnings -> notes
    _n=$1; _m=$2; shift 2
    if "$SPECSIM" sweep --model "$_m" --iterations "$ITER" "$@" --out "$D/$_n.csv" 2> "$D/$_n.err"; then
        # phases priced past the traces the model was fitted from: one line on the page
        _w=$(awk '/^specsim sweep: warning: .*extrapolated/ {
                sub(/^specsim sweep: warning: model [^:]*: phase /, ""); ph = $1; sub(/:$/, "", ph)
                s = $0; sub(/^[^:]*: in /, "", s); sub(/: its cost there is extrapolated.*/, "", s)
                n = s; sub(/ runs, up to .*/, "", n); what = s; sub(/^.* runs, up to /, "", what)
                phases = phases (phases == "" ? "" : ", ") ph
                if (ex == "" || ph == "verify") ex = ph ": up to " what }
            END { if (phases != "") printf "%s runs price phases past its traces (%s; e.g. %s)", n, phases, ex }' "$D/$_n.err")
        [ -n "$_w" ] && echo "data/$_n.csv: $_w" >> "$D/beyond_fit.txt"
        # the two warnings every figure's sweep repeats are said once at the end (the page's
        # notes, data/beyond_fit.txt, data/partial.txt); anything else goes through as it is
        grep 'no request finished in the measured window' "$D/$_n.err" | sed "s|^|data/$_n.csv: |" >> "$D/partial.txt"
        grep -v 'extrapolated\|no request finished in the measured window' "$D/$_n.err" >&2
        return 0
    fi
    cat "$D/$_n.err" >&2
    log "specsim sweep failed for $_n: specsim sweep --model $(rel "$_m") $*"
    return 1
}
pick() {                   # pick CSV COLS: named columns as a whitespace table
    awk -F, -v cols="$2" -f plots/csvpick.awk "$1"
}
plot() {                   # plot SCRIPT BASENAME ASSIGNMENTS [SOURCE]: PNG + SVG into $OUT
    _s=${4:-$SRC}
    for _f in "$PNGTERM" svg; do
        _e=png; [ "$_f" = svg ] && _e=svg
        if ! gnuplot -e "fmt='$_f'; out='$OUT/$2.$_e'; src='$_s'; $3" "plots/$1" 2> "$D/$2.$_e.log"; then
            cat "$D/$2.$_e.log" >&2
            log "gnuplot failed on plots/$1"
            return 1
        fi
        if grep -qi 'warning' "$D/$2.$_e.log"; then
            sed 's/^/gnuplot: /' "$D/$2.$_e.log" >&2
        fi
        [ -s "$OUT/$2.$_e" ] || { log "gnuplot wrote no $OUT/$2.$_e"; return 1; }
    done
}
seq_list() {               # seq_list FROM TO STEP FORMAT: comma-separated numbers
    awk -v a="$1" -v b="$2" -v s="$3" -v f="$4" 'BEGIN { n = int((b - a) / s + 1e-9)
        for (i = 0; i <= n; i++) printf "%s" f, (i ? "," : ""), a + i * s; print "" }'
}
embed() {                  # embed BASENAME ALT: the Markdown for one figure
    printf '![%s](%s.png)\n\n[SVG](%s.svg)\n\n' "$2" "$1" "$1"
}
banner_block() {           # banner_block CSV: the sweep's configuration banner, folded
    printf '<details><summary>specsim configuration of this sweep</summary>\n\n```\n'
    grep '^#' "$1" || true
    printf '```\n</details>\n\n'
}
SEC=0
section() { SEC=$((SEC + 1)); CUR=$OUT/.sec/$(printf '%02d' "$SEC").md; : > "$CUR"; }
say() { printf '%s\n' "$*" >> "$CUR"; }
fail_fig() { FAILED="$FAILED $1"; say "**This figure could not be made:** $2"; say ""; log "figure $1 failed: $2"; }
caption() {                # caption N TEXT [SOURCE]: the figure's caption, naming where it came from
    say "*Figure $1. $2 Source: ${3:-$MODEL_REL ($MODEL_ORIGIN); trace: $TRACE_LABEL; $VERSION, $ITER measured iterations per point}.*"; say ""
}

BS_LO=1
BS_HI=32
ALPHAS_HEAT=$(seq_list 0.30 0.95 0.05 '%.2f')
ALPHAS_BEST=$(seq_list 0.00 0.95 0.05 '%.2f')
BS_BEST=1,2,4,8,16,32,64,128
BS_SPD=1,2,4,8,12,16,24,32,48,64,96,128

# ---- figures 1 and 2: throughput and speedup over acceptance x draft length -------------------
fig12() {
    log "figures 1-2: steps 1..8 x acceptance 0.30..0.95 at concurrency $BS_LO and $BS_HI"
    sweep steps_alpha "$MODEL" --grid concurrency=$BS_LO,$BS_HI --grid steps=1..8 \
        --grid alpha="$ALPHAS_HEAT" || return 1
    pick "$D/steps_alpha.csv" concurrency,steps,alpha,tok_s,base_tok_s,speedup,accept_len \
        > "$D/steps_alpha.dat" || return 1
    for c in $BS_LO $BS_HI; do
        # fig 1: one block per alpha (gnuplot 'index'), x = steps
        awk -v c=$c -v want="0.50 0.60 0.70 0.80 0.90" '
            /^#/ { next }
            $1 == c { for (k = 1; k <= nw; k++) if ($3 + 0 == w[k] + 0) row[k, $2] = $2 " " $4 " " $6 " " $7
                      if ($2 > maxs) maxs = $2; base = $5 }
            BEGIN { nw = split(want, w, " ") }
            END { for (k = 1; k <= nw; k++) { printf "# alpha %s\n# steps tok_s speedup accept_len\n", w[k]
                      for (s = 1; s <= maxs; s++) if ((k, s) in row) print row[k, s]
                      printf "\n\n" }
                  print base > "/dev/stderr" }' "$D/steps_alpha.dat" > "$D/thr_c$c.dat" 2> "$D/base_c$c.txt" || return 1
        # fig 2: grid blocks, one per steps value, alpha ascending (for pm3d and contours)
        awk -v c=$c '/^#/ { next } $1 == c { print $2, $3, $6 }' "$D/steps_alpha.dat" \
            | sort -k1,1n -k2,2n | awk 'NR > 1 && $1 != p { print "" } { print; p = $1 }' > "$D/heat_c$c.dat"
    done
    base_lo=$(cat "$D/base_c$BS_LO.txt"); base_hi=$(cat "$D/base_c$BS_HI.txt")
    section
    say "## 1. Throughput vs draft length"
    say ""
    if plot fig1_throughput.gp fig1_throughput "thr_lo='$D/thr_c$BS_LO.dat'; thr_hi='$D/thr_c$BS_HI.dat'; bs_lo=$BS_LO; bs_hi=$BS_HI; base_lo=$base_lo; base_hi=$base_hi; alphas='0.50 0.60 0.70 0.80 0.90'"; then
        embed fig1_throughput "throughput vs draft length" >> "$CUR"
        caption 1 "Aggregate output throughput (tokens/s over all running requests) against the draft length (speculative steps, chain drafting, topk 1, draft tokens = steps + 1), one curve per acceptance rate alpha (i.i.d. per draft position), at concurrency $BS_LO (left) and $BS_HI (right). The dashed line is the no-speculation baseline of the same run; a curve above it is a win."
        best_line=$(awk -v c=$BS_LO '/^#/ { next } $1 == c && $3 + 0 == 0.7 && $6 > b { b = $6; s = $2 } END { printf "At alpha 0.7 and concurrency %d the best draft length is %d steps (speedup %.2fx).", c, s, b }' "$D/steps_alpha.dat")
        say "$best_line"
        say ""
    else fail_fig 1 "gnuplot failed (see $D/fig1_throughput.png.log)"; fi
    banner_block "$D/steps_alpha.csv" >> "$CUR"

    section
    say "## 2. Speedup over acceptance x draft length, with the break-even contour"
    say ""
    if plot fig2_heatmap.gp fig2_heatmap "heat_lo='$D/heat_c$BS_LO.dat'; heat_hi='$D/heat_c$BS_HI.dat'; bs_lo=$BS_LO; bs_hi=$BS_HI"; then
        embed fig2_heatmap "speedup heatmap" >> "$CUR"
        caption 2 "Speedup (speculative tokens/s divided by the baseline's tokens/s, both from the same specsim run) for every acceptance rate 0.30..0.95 and draft length 1..8 (chain), at concurrency $BS_LO (left) and $BS_HI (right). Blue: faster than no speculation; red: slower; the black line is the break-even contour speedup = 1. Each cell is labelled with its speedup."
    else fail_fig 2 "gnuplot failed (see $D/fig2_heatmap.png.log)"; fi
}

# ---- figure 3: best configuration and the break-even acceptance per batch size ----------------
fig3() {
    log "figure 3: best (steps, topk, draft tokens) per acceptance and concurrency"
    : > "$D/best_all.dat"
    # chain: topk 1, draft tokens = steps + 1
    sweep best_chain "$MODEL" --topk 1 --grid concurrency=$BS_BEST --grid alpha="$ALPHAS_BEST" \
        --grid steps=1..8 || return 1
    pick "$D/best_chain.csv" concurrency,alpha,steps,tok_s,base_tok_s,speedup,speedup_p10,speedup_p90 \
        | awk '!/^#/ { print $1, $2, $3, 1, $3 + 1, $4, $5, $6, $7, $8 }' >> "$D/best_all.dat"
    # trees: topk 2, 4, 8 with 4, 8 or 16 verified tokens; steps where the tree holds them
    for k in 2 4 8; do
        for dt in 4 8 16; do
            smin=$(( (dt - 1 + k - 1) / k )); [ $smin -ge 1 ] || smin=1
            [ $smin -le 8 ] || continue
            sweep "best_k${k}_d$dt" "$MODEL" --topk $k --draft-tokens $dt --grid concurrency=$BS_BEST \
                --grid alpha="$ALPHAS_BEST" --grid steps=$smin..8 || return 1
            pick "$D/best_k${k}_d$dt.csv" concurrency,alpha,steps,tok_s,base_tok_s,speedup,speedup_p10,speedup_p90 \
                | awk -v k=$k -v d=$dt '!/^#/ { print $1, $2, $3, k, d, $4, $5, $6, $7, $8 }' >> "$D/best_all.dat"
        done
    done
    # best per (alpha, concurrency); break-even alpha per concurrency for the best and for
    # SGLang's defaults (3,1,4) and (5,4,8) and the shortest chain (1,1,2)
    awk -v bsl="$BS_BEST" -f plots/best.awk -v tab="$D/best_tab.dat" -v be="$D/breakeven.dat" \
        -v md="$D/best_table.md" -v xt="$D/best_xtics.gp" "$D/best_all.dat" > "$D/best.dat" || return 1
    section
    say "## 3. Best configuration per acceptance and batch size; break-even acceptance"
    say ""
    nobe=$(awk '!/^#/ && $2 == "NaN" { n = 1 } END { print n + 0 }' "$D/breakeven.dat")
    if plot fig3_best.gp fig3_best "tab='$D/best_tab.dat'; be='$D/breakeven.dat'; xtfile='$D/best_xtics.gp'; nobe=$nobe"; then
        embed fig3_best "best configuration and break-even acceptance" >> "$CUR"
        caption 3 "Left: for each acceptance rate (rows) and concurrency (columns), the fastest of $(awk '{ k[$3 "," $4 "," $5] = 1 } END { for (x in k) n++; print n }' "$D/best_all.dat") draft configurations (steps 1..8; chain, or a tree of topk 2/4/8 verifying 4/8/16 tokens), labelled steps,topk,draft-tokens and its speedup; red cells: even the best is slower than no speculation. Right: the break-even acceptance rate (speedup = 1, linear between the simulated rates 0.00..0.95 step 0.05) per concurrency, for the best configuration and for fixed ones (SGLang's automatic choices (3,1,4) and (5,4,8), and the 1-step chain); the grey band is the best configuration's break-even taken from its speedup's 80% prediction interval (p90 to p10: the model's fitted residuals and the simulation's own estimate, docs/simulator.md \"Intervals\")."
    else fail_fig 3 "gnuplot failed (see $D/fig3_best.png.log)"; fi
    say "Best configuration (steps, topk, draft tokens) and its speedup:"
    say ""
    cat "$D/best_table.md" >> "$CUR"
    say ""
}

# ---- figure 9: speedup vs concurrency with 80% intervals --------------------------------------
fig9() {
    log "figure 9: speedup vs concurrency with 80% prediction intervals"
    sweep speedup_conc "$MODEL" --acceptance alpha:0.7 --grid steps=1,3,5 --grid concurrency=$BS_SPD || return 1
    pick "$D/speedup_conc.csv" steps,concurrency,speedup,speedup_p10,speedup_p90 \
        | awk '/^#/ { next } $1 != s { if (s != "") print "\n"; printf "# steps %s\n# concurrency speedup p10 p90\n", $1; s = $1 }
               { print $2, $3, $4, $5 }' > "$D/speedup_conc.dat"
    section
    say "## 9. Speedup vs concurrency, with its 80% prediction interval"
    say ""
    if plot fig9_speedup_conc.gp fig9_speedup_conc "spd='$D/speedup_conc.dat'; steps_list='1 3 5'"; then
        embed fig9_speedup_conc "speedup vs concurrency" >> "$CUR"
        caption 9 "Speedup (speculative tokens/s over the baseline's, same specsim call) against concurrency for chains of 1, 3 and 5 draft steps at alpha 0.7. Each band is the speedup's 80% prediction interval (p10 to p90): the model's fitted residuals (each kernel group's, from specsim fit), a carried model's roofline uncertainty, and the simulation's own estimate; errors the speculative run and its baseline share cancel. Where a band straddles 1, the model cannot tell whether speculation pays there."
    else fail_fig 9 "gnuplot failed (see $D/fig9_speedup_conc.png.log)"; fi
}

# ---- figure 4: CUDA-graph padding and eager fallback -----------------------------------------
fig4() {
    log "figure 4: CUDA-graph padding and eager fallback, concurrency 1..80"
    all=$(seq_list 1 80 1 '%d')
    sg=$(awk 'BEGIN { s = ""; for (i = 1; i <= 8; i++) s = s (s ? "," : "") i
                      for (i = 10; i <= 32; i += 2) s = s "," i
                      for (i = 40; i <= 64; i += 4) s = s "," i; print s }')
    sweep cg_all "$MODEL" --steps 3 --acceptance alpha:0.7 --cuda-graph-bs "$all" --no-baseline --grid concurrency=1..80 || return 1
    sweep cg_sglang "$MODEL" --steps 3 --acceptance alpha:0.7 --cuda-graph-bs "$sg" --no-baseline --grid concurrency=1..80 || return 1
    sweep cg_none "$MODEL" --steps 3 --acceptance alpha:0.7 --cuda-graph-bs none --no-baseline --grid concurrency=1..80 || return 1
    for v in all sglang none; do pick "$D/cg_$v.csv" concurrency,iter,host,tok_s,eager > "$D/cg_$v.dat" || return 1; done
    awk -v list="$sg" '
        BEGIN { n = split(list, L, ","); for (i = 1; i <= n; i++) L[i] += 0
                print "# bs t_all_us t_sglang_us t_none_us host_none_us padded_to pct_sglang pct_none host_sglang_us" }
        FNR == 1 { f++ } /^#/ { next }
        f == 1 { ta[$1] = $2 } f == 2 { ts[$1] = $2; hs[$1] = $3 } f == 3 { tn[$1] = $2; hn[$1] = $3 }
        END { for (b = 1; b <= 80; b++) { p = 0; for (i = 1; i <= n; i++) if (L[i] >= b) { p = L[i]; break }
                  printf "%d %s %s %s %s %d %.3f %.3f %s\n", b, ta[b], ts[b], tn[b], hn[b], p,
                         100 * (ts[b] / ta[b] - 1), 100 * (tn[b] / ta[b] - 1), hs[b] } }' \
        "$D/cg_all.dat" "$D/cg_sglang.dat" "$D/cg_none.dat" > "$D/cgraph.dat" || return 1
    section
    say "## 4. CUDA-graph padding waste and eager fallback"
    say ""
    if plot fig4_cgraph.gp fig4_cgraph "cg='$D/cgraph.dat'; maxbs=64"; then
        embed fig4_cgraph "CUDA graph padding and eager fallback" >> "$CUR"
        caption 4 "Iteration time (top) of a speculative iteration (steps 3, chain, alpha 0.7) against the batch size, for three captured batch-size lists: every size 1..80 captured (no padding: the reference), SGLang's speculative list capped at 64 ($sg; a batch runs the graph of the next captured size, padded rows cost like real ones; above 64 it runs eagerly), and no CUDA graphs at all (every kernel launched by the host). Open circles: batch sizes that are padded. Bottom: the extra time over the reference, in percent. The dotted line is the host time per iteration when every kernel is launched eagerly: once it passes the GPU time, the host is the bottleneck."
        awk '!/^#/ && $6 > $1 { n++; if ($7 > m) { m = $7; b = $1; p = $6 } }
             !/^#/ && $6 == 0 && $8 > e { e = $8; eb = $1 }
             END { printf "Padded sizes: %d of 64; the worst padding waste is %.1f%% at batch %d (padded to %d). ", n, m, b, p
                   printf "Eager fallback costs up to %.1f%% (at batch %d) over a captured graph of the same size.\n", e, eb }' "$D/cgraph.dat" >> "$CUR"
        say ""
    else fail_fig 4 "gnuplot failed (see $D/fig4_cgraph.png.log)"; fi
    banner_block "$D/cg_sglang.csv" >> "$CUR"
}

# ---- the TP=8 model (figures 5, 6, 8) -------------------------------------------------------
# A model without collectives (measured at one rank) would give the same time on every link.
# Then the TP=8 figures use the model scaled to 8 tensor-parallel ranks by `specsim scale`
# (docs/scale.md): per-rank GEMMs, heads and KV as TP cuts them, the all-reduces and the LM
# head's all-gather as collectives. The traced shape and the target are LLM presets: for a
# model fitted from a specbench trace, the preset on the trace's command line (and its
# --layers); else the model's name (kimi: specbench-kimi-tp8 -> kimi-k2.5, else Llama-3.1-8B);
# REPORT_TP_FROM / REPORT_TP_LLM name others.
TPMODEL=""
TPNOTE=""
SRC_TP=$SRC
tp_model() {
    if grep -q '"bytes_per_token"' "$MODEL"; then TPMODEL=$MODEL; TPNOTE="the model's own collectives"; return 0; fi
    name=$(printf '%s\n' "$MODEL_LINE" | sed -n 's/.*(name \([^;]*\);.*/\1/p' | tr 'A-Z' 'a-z')
    case $name in
        *kimi*) from=specbench-kimi-tp8; to=kimi-k2.5; what="the model's name" ;;
        *)      from=llama-3.1-8b; to=llama-3.1-8b; what="the default (Llama-3.1-8B at TP=1)" ;;
    esac
    flay=""
    # fitted from a specbench trace: its preset and --layers, from the command line the trace
    # header records
    if [ "$FITTED" = 1 ]; then
        cmd=$(head -c 65536 "$TL_FILE" | grep -o '"cmd":"[^"]*"' | head -n 1)
        case $cmd in
            *specbench*)
                case $cmd in
                    *kimi-tp8*) from=specbench-kimi-tp8; to=kimi-k2.5 ;;
                    *llama8b*)  from=specbench-llama8b; to=llama-3.1-8b ;;
                esac
                l2=$(printf '%s\n' "$cmd" | sed -n 's/.*--layers[ =]\([0-9][0-9]*\).*/\1/p')
                [ -n "$l2" ] && flay="--from-layers $l2"
                what="the traced specbench run's command line" ;;
        esac
    fi
    from=${REPORT_TP_FROM:-$from}; to=${REPORT_TP_LLM:-$to}
    [ -n "${REPORT_TP_FROM:-}${REPORT_TP_LLM:-}" ] && what="REPORT_TP_FROM/REPORT_TP_LLM"
    # shellcheck disable=SC2086
    "$SPECSIM" scale "$MODEL" --from "$from" --llm "$to" --tp 8 $flay -o "$D/model-tp8.json" \
        > "$D/scale-tp8.log" 2>&1 || { cat "$D/scale-tp8.log" >&2; return 1; }
    TPMODEL=$D/model-tp8.json
    SRC_TP=$(printf 'model: %s scaled to %s TP=8 (%s) | trace: %s | %s, %s iterations per point' "$MODEL_REL" "$to" "$TPMODEL" "$TRACE_LABEL" "$VERSION" "$ITER" | tr -d "'\"")
    TPNOTE="the model scaled by specsim scale from $from (the traced shape, from $what) to $to at TP=8 (docs/scale.md): per-rank GEMMs, attention heads and KV as TP cuts them, the target's layers, its 2 all-reduces per layer and LM-head all-gather priced by the link; the scaling's report is data/scale-tp8.log"
    note "The TP=8 figures (5, 6 right, 8) use $TPNOTE. REPORT_TP_FROM and REPORT_TP_LLM name other presets; a model with collectives is used as it is."
}

# ---- figure 5: interconnects -------------------------------------------------------------------
fig5() {
    log "figure 5: interconnects at TP=8"
    links=$("$SPECSIM" presets | awk '$1 == "link" { printf "%s%s", (n++ ? "," : ""), $2 }')
    [ -n "$links" ] || { log "specsim presets lists no links"; return 1; }
    sweep interconnect "$TPMODEL" --ranks 8 --steps 3 --acceptance alpha:0.7 --grid concurrency=$BS_LO,$BS_HI \
        --grid link="$links" --grid allreduce=nccl,oneshot,custom || return 1
    pick "$D/interconnect.csv" concurrency,link,allreduce,tok_s,base_tok_s,speedup,comm,iter,base_comm,base_iter \
        > "$D/interconnect.raw" || return 1
    awk 'BEGIN { na = split("nccl oneshot custom", A, " "); for (i = 1; i <= na; i++) ai[A[i]] = i - 1
                 print "# conc link algo x tok_s base_tok_s speedup comm_us iter_us base_comm_us base_iter_us" }
         /^#/ { next }
         { if (!($2 in li)) { li[$2] = nl++ }
           printf "%s %s %s %d %s %s %s %s %s %s %s\n", $1, $2, $3, li[$2] * (na + 1) + ai[$3], $4, $5, $6, $7, $8, $9, $10 }' \
        "$D/interconnect.raw" > "$D/interconnect.dat" || return 1
    xt=$(awk '!/^#/ && !($2 in s) { s[$2] = 1; printf "%s\"%s\" %d", (n++ ? ", " : ""), $2, $4 + 1 } END { print "" }' "$D/interconnect.dat")
    section
    say "## 5. Interconnect: PCIe Gen5 vs NVLink, NCCL vs one-shot, at TP=8"
    say ""
    if plot fig5_interconnect.gp fig5_interconnect "ic='$D/interconnect.dat'; bs_lo=$BS_LO; bs_hi=$BS_HI; xt='$xt'" "$SRC_TP"; then
        embed fig5_interconnect "interconnect comparison" >> "$CUR"
        caption 5 "The same model at TP=8 (--ranks 8, steps 3, chain, alpha 0.7) on each interconnect preset of 'specsim presets' ($links) with three all-reduce algorithms: NCCL (its ring/tree choice), one-shot (each rank reads all peers) and SGLang's custom all-reduce (one-shot below 256 KB at 8 ranks, else two-shot). Left: throughput, bars speculative, black dashes the no-speculation baseline on the same link; right: speedup. Top: concurrency $BS_LO, bottom: $BS_HI. Note SGLang disables its custom all-reduce on PCIe with more than 2 GPUs (shared/FACTS.md): the PCIe one-shot/custom bars are what-ifs. Model: $TPNOTE."
    else fail_fig 5 "gnuplot failed (see $D/fig5_interconnect.png.log)"; fi
    say "| concurrency | link | all-reduce | spec tok/s | baseline tok/s | speedup | comm us/iter (spec) |"
    say "|---|---|---|---|---|---|---|"
    awk '!/^#/ { printf "| %s | %s | %s | %.1f | %.1f | %.3f | %.1f |\n", $1, $2, $3, $5, $6, $7, $8 }' "$D/interconnect.dat" >> "$CUR"
    say ""
    banner_block "$D/interconnect.csv" >> "$CUR"
}

# ---- figure 6: iteration breakdown -------------------------------------------------------------
BD_BS=16
fig6() {
    log "figure 6: iteration breakdown, baseline and steps 1..6"
    sweep breakdown "$MODEL" --acceptance alpha:0.7 --concurrency $BD_BS --grid steps=1..6 || return 1
    sweep breakdown_tp8 "$TPMODEL" --acceptance alpha:0.7 --concurrency $BD_BS --ranks 8 --link pcie5-8gpu \
        --allreduce nccl --grid steps=1..6 || return 1
    cols=steps,draft,verify,accept,extend,decode,sample,comm,wait,idle,host,accept_len,tok_s,iter
    bcols=steps,base_draft,base_verify,base_accept,base_extend,base_decode,base_sample,base_comm,base_wait,base_idle,base_host,base_accept_len,base_tok_s,base_iter
    for v in breakdown breakdown_tp8; do
        { pick "$D/$v.csv" "$bcols" | awk '!/^#/ && !done { $1 = "baseline"; print; done = 1 }'
          pick "$D/$v.csv" "$cols" | awk '!/^#/ { $1 = "steps=" $1; print }'; } \
        | awk 'BEGIN { print "# x config draft verify accept extend decode sample comm wait idle host accept_len tok_s iter" }
               { printf "%d %s\n", NR - 1, $0 }' > "$D/$v.dat" || return 1
    done
    section
    say "## 6. Where an iteration's time goes"
    say ""
    if plot fig6_breakdown.gp fig6_breakdown "bd1='$D/breakdown.dat'; bd2='$D/breakdown_tp8.dat'; ranks1=$MODEL_RANKS; bs=$BD_BS" "$SRC_TP"; then
        embed fig6_breakdown "iteration breakdown" >> "$CUR"
        caption 6 "GPU time of one iteration (rank 0, mean over the measured iterations) split into draft, verify, accept, extend (speculative) or decode and sample (baseline), all-reduce time (comm), waiting for the slowest rank (wait) and GPU idle time (idle); the parts add up to the iteration time. The hatched bar beside each stack is the host's time per iteration (scheduling gaps and kernel launches), which overlaps the GPU: it costs throughput only where it exceeds the GPU's. Above each stack: accepted tokens per request per iteration and throughput. Concurrency $BD_BS, alpha 0.7, chain drafting. Left: the model at its own $MODEL_RANKS rank(s); right: TP=8 on PCIe Gen5 with NCCL ($TPNOTE)."
    else fail_fig 6 "gnuplot failed (see $D/fig6_breakdown.png.log)"; fi
    banner_block "$D/breakdown.csv" >> "$CUR"
}

# ---- figure 7: predicted vs measured -------------------------------------------------------------
fig7() {
    section
    say "## 7. Predicted vs measured"
    say ""
    if [ ! -f "$VALIDATION" ]; then
        say "**No figure:** $VALIDATION does not exist. It is written by \`make validate\` (predictions of every configuration in traces/validation/measured.csv from the calibration traces); run that, then \`make report\` again."
        say ""
        note "No predicted-vs-measured figure: $VALIDATION is missing (run make validate)."
        log "figure 7: $VALIDATION missing; the report says so"
        return 0
    fi
    log "figure 7: predicted vs measured from $VALIDATION"
    if ! awk -v sum="$D/validation_summary.txt" -v vars="$D/validation_vars.gp" -f plots/validation.awk \
        "$VALIDATION" > "$D/validation.dat" 2> "$D/validation.err"; then
        fail_fig 7 "$(cat "$D/validation.err") (file $VALIDATION)"
        return 0
    fi
    groups=$(awk '!/^#/ { g[$4] = 1 } END { for (k in g) printf "%s ", k }' "$D/validation.dat" | tr ' ' '\n' | sort | tr '\n' ' ')
    vsrc="$(rel "$(abspath "$VALIDATION")") (make validate: models fitted from the calibration traces, traces/calib, by its own specsim fit; not the model of the other figures)"
    # label the 4 largest misses beyond the 8% band (more would pile up on each other)
    labthr=$(awk '!/^#/ { e = $3 < 0 ? -$3 : $3; print e }' "$D/validation.dat" | sort -gr | sed -n 4p)
    labthr=$(awk -v t="${labthr:-8}" 'BEGIN { print (t > 8 ? t : 8) }')
    # the prediction intervals, when the table has them (make validate writes them since issue 18)
    ivvars=""
    if awk -v pts="$D/intervals_pts.dat" -v sum="$D/intervals_summary.txt" -f plots/intervals.awk \
        "$VALIDATION" > "$D/intervals.dat" 2> "$D/intervals.err"; then
        ivvars="; ivb='$D/intervals.dat'; ivp='$D/intervals_pts.dat'"
    fi
    if plot fig7_validation.gp fig7_validation "val='$D/validation.dat'; groups='$groups'; vars='$D/validation_vars.gp'; labthr=$labthr$ivvars" \
        "$(printf 'validation table: %s | %s' "$(rel "$(abspath "$VALIDATION")")" "$VERSION" | tr -d "'\"")"; then
        embed fig7_validation "predicted vs measured" >> "$CUR"
        caption 7 "Each point is one measured configuration of traces/validation/measured.csv: x the throughput the GPU measured, y the throughput specsim predicted from the calibration traces (columns read from $VALIDATION, written by make validate; one colour per preset). make validate predicts each speculative configuration at the acceptance its GPU run drew (its mean accepted tokens per iteration; the table also gives the error at the nominal alpha). Left: predicted against measured, the line y = x, the shaded bands +-3% (the median error goal) and +-8% (the maximum error goal); log axes when the points span more than a decade. Right: the same points as relative error, with the same bands; points outside +-8% are labelled. Where the table has a calib column, configurations in the calibration subset are drawn open and left out of the error summary below (the goals are about the others)." "$vsrc"
        cat "$D/validation_summary.txt" >> "$CUR"
        say ""
        if [ -n "$ivvars" ]; then
            say "Below: each configuration's 80% prediction interval of its nominal prediction (the model's fitted residuals and the draws of a run as long as the GPU's measured window: specsim --seconds), relative to its p50, and the configuration's measured runs; red open circles lie outside. Held-out configurations:"
            say ""
            cat "$D/intervals_summary.txt" >> "$CUR"
            say ""
        fi
        say "<details><summary>$VALIDATION as make validate wrote it</summary>"
        say ""
        say '```'
        cat "$VALIDATION" >> "$CUR"
        say '```'
        say "</details>"
        say ""
    else fail_fig 7 "gnuplot failed (see $D/fig7_validation.png.log)"; fi
}

# ---- figure 8: timelines -------------------------------------------------------------------------
tl_plot() {                # tl_plot BOXES TRACKS CATS BASENAME TITLE [SOURCE]
    nt=$(awk '$1 + 1 > n { n = $1 + 1 } END { print n + 0 }' "$2")
    span=$(awk '$3 > m { m = $3 } END { print m + 0 }' "$1")
    unit=us; awk -v s="$span" 'BEGIN { exit !(s > 2000) }' && unit=ms
    plot timeline.gp "$4" "boxes='$1'; tracks='$2'; cats='$(cat "$3")'; ntracks=$nt; ttl='$5'; unit='$unit'" "${6:-$SRC}"
}
fig8() {
    log "figure 8: timelines"
    section
    say "## 8. One iteration, rank by rank: simulated, and measured beside it"
    say ""
    if [ "$MODEL_RANKS" -gt 1 ]; then tlm=$MODEL; tlr=$MODEL_RANKS; tlk=nvlink4-8gpu; tll="the model's $MODEL_RANKS ranks on $tlk (specsim's default link), NCCL"
    else tlm=$TPMODEL; tlr=8; tlk=pcie5-8gpu; tll="TP=8 on PCIe Gen5 ($tlk), NCCL ($TPNOTE)"; fi
    tlsrc=$SRC; [ "$tlm" = "$TPMODEL" ] && tlsrc=$SRC_TP
    "$SPECSIM" run --model "$tlm" --ranks "$tlr" --link "$tlk" --steps 3 --acceptance alpha:0.7 --concurrency $BD_BS \
        --iterations 3 --warmup 20 --timeline "$D/timeline_sim.json" --timeline-iterations 2 --quiet > /dev/null \
        2> "$D/tl_sim.err" || { cat "$D/tl_sim.err" >&2; return 1; }   # (3 iterations: no request finishes, said there)
    awk -v tracks="$D/tl_sim.tracks" -v cats="$D/tl_sim.cats" -f plots/simtl.awk "$D/timeline_sim.json" \
        > "$D/tl_sim.dat" 2> "$D/tl_sim.info" || { cat "$D/tl_sim.info" >&2; return 1; }
    if tl_plot "$D/tl_sim.dat" "$D/tl_sim.tracks" "$D/tl_sim.cats" fig8a_timeline_sim \
        "Simulated: one speculative iteration per rank (steps 3, concurrency $BD_BS, $tlr ranks)" "$tlsrc"; then
        embed fig8a_timeline_sim "simulated timeline" >> "$CUR"
        caption 8a "One simulated iteration (after warm-up; steps 3, chain, alpha 0.7, concurrency $BD_BS) of each rank: on each rank's GPU track the phases (draft, verify, accept, extend) with the all-reduce part of each synchronised segment drawn over it, and in grey the previous iteration's GPU work that is still running when this iteration's host work starts (the host runs ahead); on the host track the scheduling gaps, graph launches and the wait for the GPU (sync: the host needs the accepted lengths). Ranks: $tll. The same run opens in Perfetto: $D/timeline_sim.json."
    else fail_fig 8a "gnuplot failed"; fi

    if [ -z "$TL_FILE" ]; then
        say "**No measured timeline:** there is no bundled trace (traces/calib/DEFAULT is missing or names nothing; REPORT_TRACE=DIR|FILE names another). Once a specprof trace exists, the measured iteration is drawn here beside a simulation of the same configuration."
        say ""
        note "No measured timeline: no bundled trace (traces/calib/DEFAULT)."
        return 0
    fi
    # measured: the default trace (one rank's file, or a merged trace with every rank)
    tf=$TL_FILE
    if ! awk -f plots/trace_ext.awk "$tf" | LC_ALL=C sort -t "$(printf '\t')" -k1,1n \
        | awk -v tracks="$D/tl_meas.tracks" -v cats="$D/tl_meas.cats" -v meta="$D/tl_meas.sh" \
              -f plots/tracetl.awk > "$D/tl_meas.dat" 2> "$D/tl_meas.err"; then
        fail_fig 8b "the measured iteration could not be cut from $TRACE_LABEL: $(cat "$D/tl_meas.err")"
        return 0
    fi
    tl_iterations=0; tl_chosen=0; tl_same_shape=0; tl_gpu_us=0; tl_period_us=0; tl_first_phase=""; tl_note=""
    tl_bs=""; tl_steps=""; tl_topk=""; tl_ctx=""; tl_tokens=""
    . "$D/tl_meas.sh"         # written by plots/tracetl.awk: numbers and phase names only
    # the same configuration, simulated on the model's ranks
    sb=${tl_bs:-1}; ss=${tl_steps:-3}; sk=${tl_topk:-1}; sctx=${tl_ctx:-0}
    [ -n "$sb" ] && [ "$sb" -ge 1 ] 2>/dev/null || sb=1
    mode=spec; [ "$tl_first_phase" = decode ] && mode=baseline
    [ "${ss:-0}" -ge 1 ] 2>/dev/null || ss=1
    plen=$(awk -v c="$sctx" -v b="$sb" 'BEGIN { p = (c > 0) ? int(c / b + 0.5) : 1024; print (p > 0) ? p : 1 }')
    dtk=0; [ "$sk" -gt 1 ] 2>/dev/null && dtk=${tl_tokens:-0} && dtk=$((dtk / sb))
    [ "$sk" -ge 1 ] 2>/dev/null || sk=1
    "$SPECSIM" run --model "$MODEL" --steps "$ss" --topk "$sk" --draft-tokens "$dtk" --acceptance alpha:0.7 --concurrency "$sb" \
        --prompt-len "$plen" --stagger 0 --output-len 100000 --warmup 2 --iterations 3 \
        --timeline "$D/timeline_same.json" --timeline-iterations 2 --quiet > /dev/null 2> "$D/tl_same.err" \
        || { fail_fig 8b "specsim could not simulate the measured configuration: $(cat "$D/tl_same.err")"; return 0; }
    awk -v mode=$mode -v tracks="$D/tl_same.tracks" -v cats="$D/tl_same.cats" -f plots/simtl.awk \
        "$D/timeline_same.json" > "$D/tl_same.dat" 2>/dev/null || return 1
    ns=$(wc -l < "$D/tl_same.tracks" | tr -d ' ')
    { cat "$D/tl_same.dat"; awk -v o=$((ns + 1)) '{ $1 = $1 + o; print }' "$D/tl_meas.dat"; } > "$D/tl_both.dat"
    { awk '{ y = $1; $1 = ""; sub(/^ "/, ""); print y, "\"simulated: " $0 }' "$D/tl_same.tracks"
      awk -v o=$((ns + 1)) '{ y = $1 + o; $1 = ""; sub(/^ "/, ""); print y, "\"measured: " $0 }' "$D/tl_meas.tracks"; } > "$D/tl_both.tracks"
    cat "$D/tl_same.cats" "$D/tl_meas.cats" | tr ' ' '\n' | sort -n | uniq | tr '\n' ' ' > "$D/tl_both.cats"
    if tl_plot "$D/tl_both.dat" "$D/tl_both.tracks" "$D/tl_both.cats" fig8b_timeline_measured \
        "Measured (top) and simulated (bottom): the same configuration, bs $sb, steps $ss, topk $sk"; then
        embed fig8b_timeline_measured "measured vs simulated timeline" >> "$CUR"
        caption 8b "Top: one iteration cut from the trace $TRACE_LABEL (iteration $tl_chosen of $tl_iterations, the median-length one of the $tl_same_shape with the most common shape; kernels per stream coloured by the NVTX phase that launched them, NCCL kernels as all-reduce; the host thread's NVTX ranges, launch calls and synchronisation). Bottom: specsim's simulation of the same configuration (bs $sb, steps $ss, topk $sk, KV context $plen tokens per request) with the model above. Both start at the iteration's first host event.${tl_note:+ Note: $tl_note.}"
        say ""
        sim_gpu=$(awk '$4 >= 1 && $4 <= 7 { if (!n++ || $2 < a) a = $2; if ($3 > b) b = $3 } END { printf "%.1f", b - a }' "$D/tl_same.dat")
        say "GPU time of the iteration (start of its first kernel to the end of its last): measured $tl_gpu_us us, simulated $sim_gpu us (the measured iteration-to-iteration period: $tl_period_us us)."
        say ""
    else fail_fig 8b "gnuplot failed"; fi
}

# ---- the fit: the fitted cost curves that specsim fit --plot drew ----------------------------------
fit_section() {
    section
    say "## 0. The fitted model"
    say ""
    say "\`specsim fit\` turned $FIT_LABEL into \`$MODEL_REL\` (docs/fit.md). Per phase, the GPU time per forward the model gives against the measured one (points: measured cells, line: the fit); each kernel group's own plot is linked below."
    say ""
    for f in "$OUT"/fit/*_total.png; do
        [ -f "$f" ] || continue
        b=$(basename "$f" .png)
        printf '![%s](fit/%s.png)\n\n' "fit: $b" "$b" >> "$CUR"
    done
    n=$(ls "$OUT"/fit/*_g[0-9]*.png 2>/dev/null | wc -l | tr -d ' ')
    if [ "$n" -gt 0 ]; then
        say "<details><summary>$n kernel-group fits (measured cost per forward vs tokens, and the fitted curve)</summary>"
        say ""
        for f in "$OUT"/fit/*_g[0-9]*.png; do b=$(basename "$f"); say "- [$b](fit/$b)"; done
        say ""
        say "</details>"
        say ""
    fi
    [ "$n" -gt 0 ] || ls "$OUT"/fit/*_total.png >/dev/null 2>&1 || say "(specsim fit drew no plots: is gnuplot's png terminal there? The data are in fit/.)"
    say "<details><summary>specsim fit's report</summary>"
    say ""
    say '```'
    cat "$D/fit.log" >> "$CUR"
    say '```'
    say "</details>"
    say ""
}

# ---- run everything ----------------------------------------------------------------------------
[ "$FITTED" = 1 ] && fit_section
fig12 || FAILED="$FAILED 1-2"
fig3 || FAILED="$FAILED 3"
fig4 || FAILED="$FAILED 4"
if tp_model; then
    fig5 || FAILED="$FAILED 5"
    fig6 || FAILED="$FAILED 6"
    fig7 || FAILED="$FAILED 7"
    fig8 || FAILED="$FAILED 8"
else
    log "could not derive the TP=8 what-if model"
    FAILED="$FAILED 5 6 8"
    fig7 || FAILED="$FAILED 7"
fi
fig9 || FAILED="$FAILED 9"

if [ -s "$D/partial.txt" ]; then
    note "$(wc -l < "$D/partial.txt" | tr -d ' ') of the figures' sweeps have runs in which no request finished in the measured window: their per-request metrics (req_tok_s, tpot) come from the running requests (CSV column partial = 1); which: \`data/partial.txt\`."
    log "$(wc -l < "$D/partial.txt" | tr -d ' ') sweeps have runs without a finished request (per-request metrics from the running requests): data/partial.txt"
fi
if [ -s "$D/beyond_fit.txt" ]; then
    log "$(wc -l < "$D/beyond_fit.txt" | tr -d ' ') sweeps price phases past the model's traces (extrapolated): data/beyond_fit.txt"
    note "$(wc -l < "$D/beyond_fit.txt" | tr -d ' ') of the figures' sweeps price phases past what the model was fitted from (more query tokens per row or tokens a forward than its traces hold): their costs there are extrapolated (docs/fit.md, \"Beyond the traces\"); which runs, phases and values: \`data/beyond_fit.txt\`."
fi

# ---- the page ----------------------------------------------------------------------------------
log "writing $OUT/index.md"
{
    echo "# specsim report: $(printf '%s\n' "$MODEL_LINE" | sed -n 's/.*(name \([^;]*\);.*/\1/p')"
    echo ""
    echo "What speculative decoding would do on this system, simulated by specsim from a workload model."
    echo "How to read each figure: [docs/report.md](../docs/report.md)."
    echo ""
    echo "- Model: \`$MODEL_REL\`, $MODEL_ORIGIN."
    echo "- Trace: \`$TRACE_LABEL\`."
    echo "- Simulator: $VERSION, $ITER measured iterations per point (REPORT_ITERATIONS), seed 1; made by \`make report\` in $(($(date +%s) - T_START)) s."
    echo ""
    if [ -s "$NOTES" ]; then echo "**Read this first:**"; echo ""; cat "$NOTES"; echo ""; fi
    [ -n "$FAILED" ] && { echo "**Figures that failed:**$FAILED (messages on stderr and below)."; echo ""; }
    echo "## Configuration"
    echo ""
    echo "The model as specsim reads it, and the knobs every figure starts from (the banner of \`specsim run\`; each figure lists what it changes):"
    echo ""
    echo '```'
    grep '^#' "$D/banner.txt" | sed -n '1,/^# cuda graphs/p'
    echo '```'
    echo ""
    for s in "$OUT"/.sec/*.md; do cat "$s"; done
    echo "## Files"
    echo ""
    echo "Every figure as PNG and SVG in this folder; the data behind them (specsim CSV with its configuration banner, and the reshaped tables gnuplot reads) in \`data/\`."
} > "$OUT/index.md"
rm -rf "$OUT/.sec" "$NOTES"
n_png=$(ls "$OUT"/*.png 2>/dev/null | wc -l | tr -d ' ')
log "done: $OUT/index.md, $n_png figures ($PNGTERM + svg)"
if [ -n "$FAILED" ]; then log "figures that failed:$FAILED"; exit 1; fi
exit 0
