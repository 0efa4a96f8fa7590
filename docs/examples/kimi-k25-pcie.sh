#!/bin/sh
# kimi-k25-pcie.sh: `make example`, the worked example of docs/examples/kimi-k25-pcie.md.
# Kimi K2.5 (int4 experts) at TP=8 on 8 RTX PRO 6000 over PCIe Gen5, predicted from the
# committed kimi-tp8 H200 traces: fit, scale (specbench's 12-layer bf16 GQA rank -> the
# 61-layer int4 MLA model at TP=8), carry (H200 -> RTX PRO 6000), then the simulator for
# the baseline and EAGLE-3 at concurrency 1..64 and the knobs of the page; tables on stdout,
# figures (gnuplot) and data in EXAMPLE_DIR. CPU only, ~30 s on 2 cores.
# usage: sh docs/examples/kimi-k25-pcie.sh [SPECSIM]     (default bin/specsim)
#        env: EXAMPLE_DIR (build/example), EXAMPLE_JOBS (2)
set -eu
SPECSIM=${1:-bin/specsim}
W=${EXAMPLE_DIR:-build/example}
JOBS=${EXAMPLE_JOBS:-2}
T0=$(date +%s)
log() { printf 'example [%3ds]: %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { printf 'example: %s\n' "$*" >&2; exit 2; }
[ -x "$SPECSIM" ] || die "$SPECSIM: not built (run make)"
command -v gnuplot >/dev/null 2>&1 || die "gnuplot not found (apt-get install gnuplot-nox)"
rm -rf "$W"
mkdir -p "$W"

# ---- the box (shared/FACTS.md, "Real cases to explain") ----------------------------------
MEAS_BASE_1=89.5     # baseline tok/s, CUDA 12.8, Triton attention
MEAS_BASE_2=92.6     # baseline tok/s, CUDA 13, FlashInfer attention
MEAS_E3_1=54.1       # EAGLE-3 tok/s, CUDA 12.8, Triton attention
MEAS_E3_2=96.1       # EAGLE-3 tok/s, CUDA 13, FlashInfer attention
ACC4=3.24            # Kimi K2.5 EAGLE-3 accept length with 4 draft tokens (FACTS.md)
ACC3=2.88            # with 3 draft tokens
# the server's knobs: --cuda-graph-max-bs 128, NCCL (custom all-reduce off), TP=8; the
# prompt and output lengths of the measurements are not known: 1024 and 512 assumed
# --precision 0: the fixed run lengths (1000 iterations, >= 20,000 request-iterations) the
# committed page was made with (specsim's default --precision 0.01 would move its numbers
# within 1%)
COMMON="--ranks 8 --cuda-graph-bs sglang --cuda-graph-max-bs 128 --prompt-len 1024 --output-len 512 --precision 0"
E3="--steps 3 --topk 1 --draft-tokens 4"
E2="--steps 2 --topk 1 --draft-tokens 3"
CONC=1,2,4,8,16,32,64

# ---- 1. fit, scale, carry ------------------------------------------------------------------
log "fit the kimi-tp8 H200 traces"
gzip -dc traces/calib/calib_kimi-tp8.json.gz > "$W/calib_kimi-tp8.json"
"$SPECSIM" fit "$W/calib_kimi-tp8.json" -o "$W/kimi-tp8-h200.json" --gemm-sweep traces/calib/gemm_kimi-tp8.csv \
    --llm models/presets/kimi-k2.5.json --quiet 2> "$W/fit.log" || { cat "$W/fit.log" >&2; die "fit failed"; }
log "scale to Kimi K2.5 at TP=8 and carry to the RTX PRO 6000"
for b in nominal lo hi; do
    bo=""; [ "$b" = nominal ] || bo="--bound $b"
    # shellcheck disable=SC2086
    "$SPECSIM" scale "$W/kimi-tp8-h200.json" --from specbench-kimi-tp8 --llm kimi-k2.5 --tp 8 \
        --carry-to rtx-pro-6000 $bo -o "$W/k25-rtx-$b.json" > "$W/scale-$b.log" 2>&1 ||
        { cat "$W/scale-$b.log" >&2; die "scale failed"; }
done
M=$W/k25-rtx-nominal.json
# a what-if on the scaled and carried model: the identity scaling plus the what-if knobs
whatif() {   # whatif NAME KNOBS...: $W/NAME.json from $1 = base model
    _n=$1; _b=$2; shift 2
    "$SPECSIM" scale "$_b" --from kimi-k2.5 --llm kimi-k2.5 --tp 8 "$@" -o "$W/$_n.json" --quiet \
        > "$W/whatif-$_n.log" 2>&1 || { cat "$W/whatif-$_n.log" >&2; die "what-if $_n failed"; }
}

# one specsim run: prints "spec_tok_s base_tok_s speedup"
run1() {     # run1 MODEL KNOBS...
    _m=$1; shift
    # shellcheck disable=SC2086
    "$SPECSIM" run --model "$_m" $COMMON --concurrency 1 --csv --quiet "$@" 2>> "$W/run.err" |
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                 { printf "%.2f %.2f %.4f\n", $(c["tok_s"]), $(c["base_tok_s"]), $(c["speedup"]) }'
}
sweep() {    # sweep NAME MODEL KNOBS...: $W/NAME.csv
    _n=$1; _m=$2; shift 2
    # shellcheck disable=SC2086
    "$SPECSIM" sweep --model "$_m" $COMMON --jobs "$JOBS" "$@" --out "$W/$_n.csv" 2>> "$W/run.err" ||
        die "sweep $_n failed (see $W/run.err)"
}
pick() { awk -F, -v cols="$2" -f plots/csvpick.awk "$1"; }

# ---- 2. a one-point calibration (a hypothesis, said so on the page) -------------------------
# every kernel times F, F chosen so that the single-stream baseline is the measured 89.5
log "calibrate: every kernel x F so that the single-stream baseline is $MEAS_BASE_1 tok/s"
lo=0.02; hi=1.0
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do
    mid=$(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.5f", (a + b) / 2 }')
    whatif cal "$M" --kind-x all="$mid"
    bt=$(run1 "$W/cal.json" --link pcie5-8gpu $E3 --accept-len $ACC4 | awk '{ print $2 }')
    if awk -v t="$bt" -v m="$MEAS_BASE_1" 'BEGIN { exit !(t > m) }'; then lo=$mid; else hi=$mid; fi
done
CALF=$(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.4f", (a + b) / 2 }')
whatif cal "$M" --kind-x all="$CALF"
C=$W/cal.json

# ---- 3. the single stream beside the four numbers -------------------------------------------
log "single stream: baseline and EAGLE-3"
{
    echo "# single stream (concurrency 1), TP=8, 8x RTX PRO 6000, PCIe Gen5, NCCL; EAGLE-3 steps 3, topk 1, 4 draft tokens at accept length $ACC4 (steps 2, 3 draft tokens at $ACC3)"
    echo "# low/high: the model scaled and carried with --bound hi/lo (every term at the end of its uncertainty)"
    printf "#%-26s %-18s %9s %9s %9s %9s %9s %8s\n" "model" "link" "base" "low" "high" "e3(3.24)" "e2(2.88)" "speedup"
    printf "#%-26s %-18s %9s %9s %9s %9s %9s %8s\n" "-" "-" "tok/s" "tok/s" "tok/s" "tok/s" "tok/s" "x"
    for link in pcie5-8gpu pcie5-8gpu-default; do
        for mm in nominal cal; do
            f=$W/k25-rtx-nominal.json; lab="as traced"; [ "$mm" = cal ] && f=$C && lab="calibrated (x$CALF)"
            r=$(run1 "$f" --link $link $E3 --accept-len $ACC4)
            r2=$(run1 "$f" --link $link $E2 --accept-len $ACC3)
            if [ "$mm" = nominal ]; then
                blo=$(run1 "$W/k25-rtx-hi.json" --link $link $E3 --accept-len $ACC4 | awk '{ print $2 }')
                bhi=$(run1 "$W/k25-rtx-lo.json" --link $link $E3 --accept-len $ACC4 | awk '{ print $2 }')
            else blo="-"; bhi="-"; fi
            echo "$lab|$link|$r|$r2|$blo|$bhi" | awk -F'|' '{ split($3, a, " "); split($4, b, " ")
                printf " %-26s %-18s %9.1f %9s %9s %9.1f %9.1f %8.3f\n", $1, $2, a[2], $5, $6, a[1], b[1], a[3] }'
        done
    done
    echo "# measured on the box (shared/FACTS.md): baseline $MEAS_BASE_1 (CUDA 12.8, Triton) and $MEAS_BASE_2 (CUDA 13, FlashInfer); EAGLE-3 $MEAS_E3_1 and $MEAS_E3_2"
} > "$W/single.txt"
base_nom=$(awk '!/^#/ && /as traced/ && / pcie5-8gpu / { print $4; exit }' "$W/single.txt")
awk -v p="$base_nom" -v a="$MEAS_BASE_1" -v b="$MEAS_BASE_2" 'BEGIN {
    printf "# the as-traced single-stream baseline %.1f tok/s is %+.1f%% off %.1f and %+.1f%% off %.1f\n", p, 100 * (p - a) / a, a, 100 * (p - b) / b, b }' >> "$W/single.txt"
cat "$W/single.txt"

# ---- 4. where a single-stream decode forward's time goes -----------------------------------
log "decode forward at 1 token by kernel kind"
{
    echo "# one target forward at 1 token (decode, KV 0): GPU time per kernel kind, as traced (H200, 12 layers) and scaled + carried (RTX PRO 6000, 61 layers, int4 experts)"
    printf "#%-12s %10s %10s %7s\n" "kind" "H200" "RTX" "share"
    printf "#%-12s %10s %10s %7s\n" "-" "us" "us" "%"
    awk '/^  decode / && substr($0, 11, 11) != "collective " && substr($0, 40, 11) ~ /[a-z]/ { kd = substr($0, 40, 11); sub(/ +$/, "", kd)
             h[kd] += substr($0, 66, 10); k[kd] += substr($0, 77, 10); t += substr($0, 77, 10) }
         END { for (x in k) printf " %-12s %10.1f %10.1f %7.1f\n", x, h[x], k[x], 100 * k[x] / t | "sort -k3 -gr"
               close("sort -k3 -gr"); printf " %-12s %10s %10.1f %7.1f\n", "total", "", t, 100 }' "$W/scale-nominal.log"
    grep '^  decode  collective' "$W/scale-nominal.log" | sed 's/^  decode  /# + /'
} > "$W/decode_kinds.txt"
cat "$W/decode_kinds.txt"

# ---- 5. concurrency 1..64: baseline and EAGLE-3, NCCL tuned and default ---------------------
log "concurrency sweeps"
for mm in nominal cal; do
    f=$M; [ "$mm" = cal ] && f=$C
    sweep conc3-$mm "$f" $E3 --accept-len $ACC4 --grid concurrency=$CONC --grid link=pcie5-8gpu,pcie5-8gpu-default
    sweep conc2-$mm "$f" $E2 --accept-len $ACC3 --grid concurrency=$CONC --grid link=pcie5-8gpu,pcie5-8gpu-default
    # conc base_tuned e3_tuned e2_tuned base_default e3_default e2_default
    { pick "$W/conc3-$mm.csv" concurrency,link,tok_s,base_tok_s; pick "$W/conc2-$mm.csv" concurrency,link,tok_s | sed 's/^/E2 /'; } |
        awk '/^#/ { next } $1 == "E2" { e2[$2, $3] = $4; next } { c[$1] = 1; e3[$1, $2] = $3; b[$1, $2] = $4 }
             END { print "# conc base_tuned e3_tuned e2_tuned base_default e3_default e2_default"
                   n = split("1 2 4 8 16 32 64", cc, " ")
                   for (i = 1; i <= n; i++) { k = cc[i]; t = "pcie5-8gpu"; d = "pcie5-8gpu-default"
                       printf "%d %s %s %s %s %s %s\n", k, b[k, t], e3[k, t], e2[k, t], b[k, d], e3[k, d], e2[k, d] } }' \
        > "$W/conc-$mm.dat"
done

# ---- 6. the knobs: all-reduce, CUDA graphs, attention, break-even ---------------------------
log "knob sweeps"
for mm in nominal cal; do
    f=$M; [ "$mm" = cal ] && f=$C
    # all-reduce: NCCL, one-shot, SGLang's custom (not enabled by SGLang on PCIe with > 2 GPUs)
    sweep ar-$mm "$f" $E3 --accept-len $ACC4 --link pcie5-8gpu --grid concurrency=$CONC --grid allreduce=nccl,oneshot,custom
    pick "$W/ar-$mm.csv" concurrency,allreduce,tok_s,base_tok_s | grep -v '^#' | sort -k2,2 -k1,1n > "$W/ar-$mm.dat"
    # CUDA graphs: all captured, the draft phases eager, verify eager, nothing captured
    whatif eagerdraft-$mm "$f" --eager draft,extend
    whatif eagerverify-$mm "$f" --eager verify
    sweep g-graphs-$mm "$f" $E3 --accept-len $ACC4 --link pcie5-8gpu --grid concurrency=$CONC
    sweep g-draft-$mm "$W/eagerdraft-$mm.json" $E3 --accept-len $ACC4 --link pcie5-8gpu --grid concurrency=$CONC
    sweep g-verify-$mm "$W/eagerverify-$mm.json" $E3 --accept-len $ACC4 --link pcie5-8gpu --grid concurrency=$CONC
    sweep g-none-$mm "$f" $E3 --accept-len $ACC4 --link pcie5-8gpu --grid concurrency=$CONC --cuda-graph-bs none
    for v in graphs draft verify none; do pick "$W/g-$v-$mm.csv" concurrency,tok_s,base_tok_s | sed "s/^\([0-9]\)/$v \1/"; done |
        grep -v '^#' > "$W/graphs-$mm.dat"
    # attention: x1, and a slower backend x2, x4 in every phase
    : > "$W/attn-$mm.dat"
    for a in 1 2 4; do
        whatif attn$a-$mm "$f" --attention-x $a
        sweep a$a-$mm "$W/attn$a-$mm.json" $E3 --accept-len $ACC4 --link pcie5-8gpu --grid concurrency=$CONC
        pick "$W/a$a-$mm.csv" concurrency,tok_s,base_tok_s | grep -v '^#' | sed "s/^/$a /" >> "$W/attn-$mm.dat"
    done
    # break-even: the acceptance at which EAGLE-3 (steps 3) matches the baseline, per concurrency
    sweep be-$mm "$f" $E3 --link pcie5-8gpu --grid concurrency=$CONC --grid alpha=0,0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.55,0.6,0.65,0.7,0.75,0.8,0.85,0.9,0.95
    pick "$W/be-$mm.csv" concurrency,alpha,speedup | awk '
        /^#/ { next }
        { c = $1; if (c in prev && !(c in done) && prev[c] < 1 && $3 >= 1) {
              a = pa[c] + (1 - prev[c]) * ($2 - pa[c]) / ($3 - prev[c]); done[c] = a }
          prev[c] = $3; pa[c] = $2; if (!(c in first)) { first[c] = $3; order[++n] = c } }
        END { print "# conc alpha accept_len (chain of 3: (1 - a^4) / (1 - a)); alpha -1: never breaks even; 0: always ahead"
              for (i = 1; i <= n; i++) { c = order[i]
                  if (first[c] >= 1) { printf "%d 0 1\n", c; continue }
                  if (!(c in done)) { printf "%d -1 -1\n", c; continue }
                  a = done[c]; printf "%d %.4f %.4f\n", c, a, (1 - a ^ 4) / (1 - a) } }' > "$W/breakeven-$mm.dat"
done

# ---- 7. hypotheses for 54.1 and 96.1 (the calibrated model, single stream) -------------------
log "hypotheses: knob settings against 54.1 and 96.1"
bisect() {   # bisect LO HI TARGET CMD...: the value V in [LO, HI] where CMD V (spec tok/s) = TARGET
    _lo=$1; _hi=$2; _t=$3; shift 3
    _flo=$("$@" "$_lo"); _fhi=$("$@" "$_hi")
    if ! awk -v a="$_flo" -v b="$_hi" -v fb="$_fhi" -v t="$_t" 'BEGIN { exit !((a - t) * (fb - t) <= 0) }'; then echo "-"; return; fi
    for _i in 1 2 3 4 5 6 7 8 9 10; do
        _mid=$(awk -v a="$_lo" -v b="$_hi" 'BEGIN { printf "%.4f", (a + b) / 2 }')
        _fm=$("$@" "$_mid")
        if awk -v a="$_flo" -v m="$_fm" -v t="$_t" 'BEGIN { exit !((a - t) * (m - t) <= 0) }'; then _hi=$_mid; _fhi=$_fm
        else _lo=$_mid; _flo=$_fm; fi
    done
    awk -v a="$_lo" -v b="$_hi" 'BEGIN { printf "%.3g", (a + b) / 2 }'
}
spec_attn() { whatif h "$C" --attention-x "draft=$1,verify=$1,extend=$1"; run1 "$W/h.json" --link pcie5-8gpu $E3 --accept-len $ACC4 | awk '{ print $1 }'; }
spec_acc()  { run1 "$C" --link pcie5-8gpu $E3 --accept-len "$1" | awk '{ print $1 }'; }
spec_host() { whatif h "$C" --host-gap-us "extend=$(awk -v v="$1" 'BEGIN { print v * 1000 }')"; run1 "$W/h.json" --link pcie5-8gpu $E3 --accept-len $ACC4 | awk '{ print $1 }'; }
spec_veager() { run1 "$W/eagerverify-cal.json" --link pcie5-8gpu $E3 --accept-len $ACC4 --eager-launch-us "$1" | awk '{ print $1 }'; }
whatif spattn2 "$C" --attention-x draft=2,verify=2,extend=2
whatif spattn4 "$C" --attention-x draft=4,verify=4,extend=4
EAGER_US=$(sed -n 's/.*"eager_launch_us":[[:space:]]*\([0-9.]*\).*/\1/p' "$C" | head -n 1 | awk '{ printf "%.1f", $1 }')
{
    echo "# calibrated model (every kernel x$CALF: single-stream baseline $MEAS_BASE_1 tok/s on pcie5-8gpu), concurrency 1, EAGLE-3 steps 3 / 4 draft tokens"
    printf "#%-60s %9s %9s %8s\n" "setting" "e3" "base" "speedup"
    printf "#%-60s %9s %9s %8s\n" "-" "tok/s" "tok/s" "x"
    row() { _l=$1; shift; printf " %-60s %s\n" "$_l" "$(run1 "$@" | awk '{ printf "%9.1f %9.1f %8.3f", $1, $2, $3 }')"; }
    row "as calibrated (NCCL tuned, all phases in CUDA graphs)" "$C" --link pcie5-8gpu $E3 --accept-len $ACC4
    row "NCCL default settings (pcie5-8gpu-default)" "$C" --link pcie5-8gpu-default $E3 --accept-len $ACC4
    row "custom all-reduce (what-if: SGLang keeps it off here)" "$C" --link pcie5-8gpu --allreduce custom $E3 --accept-len $ACC4
    row "draft and extend eager (no CUDA graph)" "$W/eagerdraft-cal.json" --link pcie5-8gpu $E3 --accept-len $ACC4
    row "verify eager (no CUDA graph, $EAGER_US us host per launch)" "$W/eagerverify-cal.json" --link pcie5-8gpu $E3 --accept-len $ACC4
    row "nothing captured (--cuda-graph-bs none)" "$C" --link pcie5-8gpu $E3 --accept-len $ACC4 --cuda-graph-bs none
    row "attention x2 in draft, verify, extend (decode as is)" "$W/spattn2.json" --link pcie5-8gpu $E3 --accept-len $ACC4
    row "attention x4 in draft, verify, extend (decode as is)" "$W/spattn4.json" --link pcie5-8gpu $E3 --accept-len $ACC4
    row "accept length 2.33 (Kimi K2.6 EAGLE-3 on this box, FACTS.md)" "$C" --link pcie5-8gpu $E3 --accept-len 2.33
    echo "# the value of one knob at which EAGLE-3 runs at the measured number (the others as calibrated; - : not reached in the range tried):"
    printf "#%-60s %9s %9s\n" "knob" "$MEAS_E3_1" "$MEAS_E3_2"
    printf " %-60s %9s %9s\n" "host work after the accept sync, per iteration: ms" "$(bisect 0 100 $MEAS_E3_1 spec_host)" "$(bisect 0 100 $MEAS_E3_2 spec_host)"
    printf " %-60s %9s %9s\n" "verify eager: host cost per launched kernel: us" "$(bisect 1 200 $MEAS_E3_1 spec_veager)" "$(bisect 1 200 $MEAS_E3_2 spec_veager)"
    printf " %-60s %9s %9s\n" "accept length (bonus token included)" "$(bisect 1.0 3.24 $MEAS_E3_1 spec_acc)" "$(bisect 1.0 3.24 $MEAS_E3_2 spec_acc)"
    printf " %-60s %9s %9s\n" "attention x F in draft, verify and extend: F" "$(bisect 1 200 $MEAS_E3_1 spec_attn)" "$(bisect 1 200 $MEAS_E3_2 spec_attn)"
} > "$W/hypotheses.txt"
cat "$W/hypotheses.txt"

# ---- 8. figures -----------------------------------------------------------------------------
log "figures"
TERMS=$(gnuplot -e 'set terminal' 2>&1 </dev/null || true)
PNGTERM=png; printf '%s\n' "$TERMS" | grep -qw pngcairo && PNGTERM=pngcairo
SRC="specsim $("$SPECSIM" --version | awk '{ print $2 }'): traces/calib/calib_kimi-tp8 (H200) scaled to kimi-k2.5 TP=8 and carried to rtx-pro-6000; make example"
for f in png svg; do
    t=$PNGTERM; [ $f = svg ] && t=svg
    gnuplot -e "fmt='$t'; out='$W/fig1_concurrency.$f'; src='$SRC'; d1='$W/conc-nominal.dat'; d2='$W/conc-cal.dat'; calf='$CALF'; mb1=$MEAS_BASE_1; mb2=$MEAS_BASE_2; me1=$MEAS_E3_1; me2=$MEAS_E3_2" plots/ex_kimi_conc.gp
    gnuplot -e "fmt='$t'; out='$W/fig2_knobs.$f'; src='$SRC'; dir='$W'; calf='$CALF'" plots/ex_kimi_knobs.gp
done 2> "$W/gnuplot.log" || { cat "$W/gnuplot.log" >&2; die "gnuplot failed"; }
grep -qi warning "$W/gnuplot.log" && cat "$W/gnuplot.log" >&2
log "done: $W/single.txt, decode_kinds.txt, hypotheses.txt, fig1_concurrency.png, fig2_knobs.png"
