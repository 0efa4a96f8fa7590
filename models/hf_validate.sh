#!/bin/sh
# hf_validate.sh: make validate's Hugging Face table (issue 21). Fits the hf-assisted model from
# the two committed captures of transformers' assisted generation (traces/hf/hf_k2.json.gz,
# hf_k6.json.gz: K 2 and 6 at a=0.9, under specprof --torch-annotate), predicts the speedup over
# plain decode of every measured (K, acceptance level) of the unprofiled grid
# (traces/hf/hf_grid.csv, profiler/device/hf_grid.sh) with specsim run, and prints predicted
# against measured with the measured spread, the best K per level, and the helper's cost
# (traces/hf/hf_cost.csv). CPU only, a few seconds.
#
# Measured speedup of (K, level): the median over the grid's rounds of tok/s(K) / tok/s(K=0)
# of the same level and round (each round runs every configuration once, in alternating order;
# the host's speed drifts over seconds, so a ratio inside one round is the like-for-like one);
# spread: the smallest and largest of those per-round ratios. Predicted: specsim run at the
# acceptance the configuration realized (the alpha whose rounds, capped as transformers caps
# them, give its measured target forwards; the verdict), and at the chain's per-position rate
# a_tok (nominal, beside it).
#
# usage: sh models/hf_validate.sh [SPECSIM]        (default bin/specsim)
#   HF_VALIDATE_DIR   traces/hf (hf_k2.json.gz, hf_k6.json.gz, hf_grid.csv, hf_cost.csv)
#   HF_VALIDATE_OUT   traces/validation/hf_assisted.txt (the table, also printed)
#   HF_VALIDATE_WORK  build/validate-hf (the fitted model, logs)
#   HF_TARGET_MEDIAN, HF_TARGET_MAX   error targets in % (default 5 and 10: issue 21's)
#   HF_TARGET_COST    the helper's cost target in % of a generate (default 1)
#   HF_TARGET_COVERAGE_LO, _HI  the share of rounds inside their 80% interval, in % (default 70
#                     and 90: issue 18's)
# exit: 0 targets met; 1 inputs missing; 2 the fit or a simulation failed; 3 targets missed.
set -u
SPECSIM=${1:-bin/specsim}
DIR=${HF_VALIDATE_DIR:-traces/hf}
OUT=${HF_VALIDATE_OUT:-traces/validation/hf_assisted.txt}
WORK=${HF_VALIDATE_WORK:-build/validate-hf}
TMED=${HF_TARGET_MEDIAN:-5}
TMAX=${HF_TARGET_MAX:-10}
TCOST=${HF_TARGET_COST:-1}
TCOV_LO=${HF_TARGET_COVERAGE_LO:-70}
TCOV_HI=${HF_TARGET_COVERAGE_HI:-90}
die() { echo "make validate (hf): $1" >&2; exit "${2:-2}"; }

[ -x "$SPECSIM" ] || die "$SPECSIM: not built (run make)" 1
for f in hf_k2.json.gz hf_k6.json.gz hf_grid.csv hf_cost.csv; do
  [ -f "$DIR/$f" ] || die "$DIR/$f: missing (profiler/device/hf_truth.sh, hf_grid.sh)" 1
done
rm -rf "$WORK"
mkdir -p "$WORK" "$(dirname "$OUT")" || die "$WORK: cannot create"
M=$WORK/hf.json
"$SPECSIM" fit --loop hf-assisted "$DIR/hf_k2.json.gz" "$DIR/hf_k6.json.gz" -o "$M" \
  > "$WORK/fit.log" 2>&1 || { cat "$WORK/fit.log" >&2; die "specsim fit --loop hf-assisted failed"; }

# measured.tsv: level K rounds median min max a_tok accept_len new_tokens prompt wall_s ratios
# (wall_s: the median wall time of the K generates; ratios: each round's, ";"-separated)
awk -F, '
  NR == 1 { if (match($0, /prompt [0-9]+/)) prompt = substr($0, RSTART + 7, RLENGTH - 7) }
  /^#/ || $1 == "K" || NF < 8 { next }
  { k = $1 + 0; a = $2; r = $7 + 0; tok[a, k, r] = $6; acc[a, k] = $4; atok[a] = $3; nw = $8; wall[a, k, r] = $9
    if (!((a, k) in seen)) { seen[a, k] = 1; if (!(a in lv)) { lv[a] = 1; lvl[++nl] = a } ks[a] = ks[a] " " k }
    if (!((a, r) in rs)) { rs[a, r] = 1; rl[a] = rl[a] " " r } }
  function sort(v, n,    i, j, t) { for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t } }
  function median(v, n) { sort(v, n); return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
  END {
    for (li = 1; li <= nl; li++) {
      a = lvl[li]; nk = split(ks[a], K, " "); nr = split(rl[a], R, " ")
      for (ki = 1; ki <= nk; ki++) {
        k = K[ki]; if (k == 0) continue
        n = 0
        rl_k = ""; nw_ = 0
        for (ri = 1; ri <= nr; ri++) { r = R[ri]
          if (((a, k, r) in tok) && ((a, 0, r) in tok) && tok[a, 0, r] > 0) {
            v[++n] = tok[a, k, r] / tok[a, 0, r]; rl_k = rl_k (n > 1 ? ";" : "") sprintf("%.4f", v[n])
            w[++nw_] = wall[a, k, r] } }
        if (n == 0) continue
        wmed = median(w, nw_); med = median(v, n)
        printf "%s\t%d\t%d\t%.4f\t%.4f\t%.4f\t%s\t%s\t%d\t%d\t%.5f\t%s\n", a, k, n, med, v[1], v[n], atok[a], acc[a, k], nw, prompt, wmed, rl_k
      }
    }
  }' "$DIR/hf_grid.csv" > "$WORK/measured.tsv"
[ -s "$WORK/measured.tsv" ] || die "$DIR/hf_grid.csv: no speculative rows with a plain-decode row of the same round" 1

# The speedup columns of specsim run --csv: speedup, its p10 and p90 (the 80% interval).
speedup() {
  "$SPECSIM" run --model "$M" --quiet --csv "$@" 2>>"$WORK/run.log" | awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "speedup") c = i; if ($i == "speedup_p10") l = i
                                          if ($i == "speedup_p90") h = i }; next }
    NR == 2 && c && l && h { print $c, $l, $h }'
}
: > "$WORK/pred.tsv"
while IFS="$(printf '\t')" read -r lvl k n med mn mx atok acc nw prompt wall ratios; do
  # --seconds: a benchmark as long as one generate of the grid (its interval's run part)
  common="--steps $k --output-len $nw --prompt-len ${prompt:-64} --seed 1 --seconds $wall"
  set -- $(speedup $common --alpha "$atok") || die "specsim run failed at K=$k a=$atok"
  nom=${1:-}
  # the realized acceptance: the i.i.d. alpha whose generate of nw tokens, in rounds of
  # min(K, tokens left - 1) drafts (the cap the simulator's hf-assisted loop applies, as
  # transformers does), takes nw/acc target forwards on average: the run's own count (its
  # acc is after the cap, so --accept-len, an uncapped mean, would ask for too many rounds);
  # none when every draft token or none was accepted
  ar=$(awk -v x="$acc" -v K="$k" -v N="$nw" '
    function rounds(a,    n, k, j, p, t) {   # E[target forwards] from n tokens to N
      R[N] = 0
      for (n = N - 1; n >= 0; n--) { k = K < N - n - 1 ? K : N - n - 1
        if (k <= 0) { R[n] = 1 + R[n + 1]; continue }
        t = 1
        for (j = 0; j <= k; j++) { p = j < k ? a ^ j * (1 - a) : a ^ k; t += p * R[n + j + 1 > N ? N : n + j + 1] }
        R[n] = t }
      return R[0] }
    BEGIN { want = N / x; lo = 1e-6; hi = 0.999999
      if (rounds(lo) < want || rounds(hi) > want) { print ""; exit }
      for (i = 0; i < 60; i++) { m = (lo + hi) / 2; if (rounds(m) > want) lo = m; else hi = m }
      printf "%.6f\n", (lo + hi) / 2 }')
  [ -n "$ar" ] && { set -- $(speedup $common --alpha "$ar") || die "specsim run failed at K=$k alpha $ar"; }
  [ -n "$ar" ] || ar=$atok
  rz=${1:-}; p10=${2:-}; p90=${3:-}
  [ -n "$nom" ] && [ -n "$rz" ] && [ -n "$p10" ] || die "specsim run gave no speedup at K=$k (see $WORK/run.log)"
  # the rounds whose speedup lies inside the interval
  ins=$(echo "$ratios" | awk -F';' -v lo="$p10" -v hi="$p90" '{ for (i = 1; i <= NF; i++) c += ($i >= lo && $i <= hi); print c + 0 }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$lvl" "$k" "$n" "$med" "$mn" "$mx" "$atok" "$acc" "$nw" "$rz" "$nom" "$ar" "$p10" "$p90" "$ins" >> "$WORK/pred.tsv"
done < "$WORK/measured.tsv"

# The helper's cost: per forward (a do-nothing module, hf_cost.csv's last line) times the
# forwards of a generate, over its measured wall time (median over the grid's rounds), at K 0
# and 4 of the first level; and the on/off A/B's summary lines as they are.
per_fwd=$(awk '/^# per forward: helper/ { print $5 }' "$DIR/hf_cost.csv")
cost_rows=$(awk -F, -v us="${per_fwd:-0}" '
  /^#/ || $1 == "K" || NF < 11 { next }
  { key = $1 "," $2; if (!(key in f)) { f[key] = $10 + $11; lv[key] = $2; if (first == "") first = $2 }
    n[key]++; w[key, n[key]] = $9 }
  function sort(v, m,    i, j, t) { for (i = 2; i <= m; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t } }
  END { for (key in f) { split(key, kk, ","); if (lv[key] != first || (kk[1] != 0 && kk[1] != 4)) continue
          m = n[key]; for (i = 1; i <= m; i++) v[i] = w[key, i]; sort(v, m)
          med = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
          printf "%s %d %.1f %.4f %.4f\n", kk[1], f[key], us, med, 100 * f[key] * us * 1e-6 / med } }' \
  "$DIR/hf_grid.csv" | sort -n)

{
  echo "# Hugging Face assisted generation (transformers' generate with assistant_model, batch 1,"
  echo "# eager, num_assistant_tokens_schedule constant; profiler/bench/hf_assisted.py) on one H200:"
  echo "# speedup over plain decode, predicted by specsim (model fitted from $DIR/hf_k2.json.gz and"
  echo "# hf_k6.json.gz, K 2 and 6 at a=0.9, with specsim fit --loop hf-assisted) against measured"
  echo "# unprofiled ($DIR/hf_grid.csv). measured = median over rounds of tok/s(K)/tok/s(K=0) in the"
  echo "# same round, [min..max] = the spread of those ratios; predicted at the acceptance the run"
  echo "# realized (acc: new tokens per target forward; alpha: the i.i.d. rate whose capped rounds of"
  echo "# out_len tokens take as many target forwards; the verdict); nominal = predicted at the chain's"
  echo "# per-position rate a_tok; p10 / p90: the predicted speedup's 80% interval at the realized"
  echo "# acceptance for a benchmark of one generate (--seconds: the K generates' median wall time),"
  echo "# inside: the rounds whose speedup lies in it. Generated by models/hf_validate.sh."
  printf "#%5s %3s %6s %7s %7s %7s %7s %6s %7s %9s %8s %9s %8s %6s %6s %6s\n" level K rounds measured min max a_tok acc alpha predicted error nominal err_nom p10 p90 inside
  printf "#%5s %3s %6s %7s %7s %7s %7s %6s %7s %9s %8s %9s %8s %6s %6s %6s\n" - - - x x x - tokens - x % x % x x rounds
  awk -F'\t' '{ e = 100 * ($10 / $4 - 1); en = 100 * ($11 / $4 - 1)
    printf " %5s %3d %6d %7.3f %7.3f %7.3f %7.4f %6.3f %7.4f %9.3f %+8.1f %9.3f %+8.1f %6.3f %6.3f %6d\n", $1, $2, $3, $4, $5, $6, $7, $8, $12, $10, e, $11, en, $13, $14, $15 }' "$WORK/pred.tsv"
  echo "#"
  echo "# best K per level (num_assistant_tokens): measured (by median), predicted (realized"
  echo "# acceptance), nominal (a_tok); ok: the predicted best's measured speedup lies within the"
  echo "# measured best's spread [min..max]; assisting loses where every K's speedup is below 1"
  awk -F'\t' '{ a = $1; if (!(a in seen)) { seen[a] = 1; L[++nl] = a }
      if (!(a in bm) || $4 > bm[a]) { bm[a] = $4; bk[a] = $2; bmin[a] = $5 }
      if (!(a in bp) || $10 > bp[a]) { bp[a] = $10; pk[a] = $2 }
      if (!(a in bn) || $11 > bn[a]) { bn[a] = $11; nk[a] = $2 }
      ms[a, $2] = $4; lose[a] += ($4 < 1); cnt[a]++; plose[a] += ($10 < 1) }
    END { for (i = 1; i <= nl; i++) { a = L[i]
      ok = ms[a, pk[a]] >= bmin[a] ? "ok" : "MISS"
      printf "  level %s: measured best K %d (%.3f x, spread from %.3f), predicted best K %d (%.3f x predicted, %.3f x measured): %s; nominal best K %d; K with measured speedup < 1: %d of %d (predicted %d)\n", a, bk[a], bm[a], bmin[a], pk[a], bp[a], ms[a, pk[a]], ok, nk[a], lose[a], cnt[a], plose[a] } }' "$WORK/pred.tsv"
  echo "#"
  echo "# the helper (specprof_torch.annotate on the target and the draft), no specprof: per forward"
  echo "# $per_fwd us (a module that does nothing, $DIR/hf_cost.csv); per generate: forwards x that"
  echo "# over the generate's median wall time"
  printf "#%3s %9s %12s %10s %8s\n" K forwards us_per_fwd wall cost
  printf "#%3s %9s %12s %10s %8s\n" - - us s %
  echo "$cost_rows" | awk 'NF == 5 { printf " %3d %9d %12.1f %10.4f %8.4f\n", $1, $2, $3, $4, $5 }'
  echo "# the same generate with annotate on and off, adjacent pairs in the grid's rounds:"
  grep '^# K=' "$DIR/hf_cost.csv" | sed 's/^# /#   /'
} > "$OUT"

# verdict: median and max |error| at the realized acceptance, best K, the helper's cost
verdict=$(awk -F'\t' -v tmed="$TMED" -v tmax="$TMAX" '
  function sort(v, n,    i, j, t) { for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t } }
  function median(v, n) { sort(v, n); return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
  { e = 100 * ($10 / $4 - 1); e = e < 0 ? -e : e; v[++n] = e; en = 100 * ($11 / $4 - 1); en = en < 0 ? -en : en; w[n] = en
    a = $1; if (!(a in bm) || $4 > bm[a]) { bm[a] = $4; bmin[a] = $5 }; if (!(a in bp) || $10 > bp[a]) { bp[a] = $10; pk[a] = $2 }; ms[a, $2] = $4
    ins += $15; rounds += $3; wd[n] = 100 * ($14 - $13) / $10 }
  END { med = median(v, n); medn = median(w, n)
        best = 1; for (a in bp) if (ms[a, pk[a]] < bmin[a]) best = 0
        wmed = median(wd, n)
        printf "%.2f %.2f %.2f %.2f %d %d %d %d %.1f\n", med, v[n], medn, w[n], n, best, ins, rounds, wmed }' "$WORK/pred.tsv")
set -- $verdict
costmax=$(echo "$cost_rows" | awk 'NF == 5 && $5 > m { m = $5 } END { printf "%.4f", m + 0 }')
cov=$(awk -v i="$7" -v r="$8" 'BEGIN { printf "%.1f", (r > 0 ? 100 * i / r : 0) }')
miss=$(awk -v a="$1" -v b="$2" -v tm="$TMED" -v tx="$TMAX" -v best="$6" -v c="$costmax" -v tc="$TCOST" \
  -v cv="$cov" -v clo="$TCOV_LO" -v chi="$TCOV_HI" \
  'BEGIN { print (a <= tm && b <= tx && best == 1 && c <= tc && cv >= clo && cv <= chi) ? 0 : 1 }')
{
  echo "#"
  printf "# %d configurations: median |error| %.2f%% (target <= %s%%), max %.2f%% (target <= %s%%) at the\n" "$5" "$1" "$TMED" "$2" "$TMAX"
  printf "# realized acceptance; at the nominal a_tok %.2f%% / %.2f%%. best K: %s. helper cost: at most %s%% of a\n" "$3" "$4" \
    "$([ "$6" = 1 ] && echo "within the measured spread at every level" || echo "MISSED at some level")" "$costmax"
  printf "# generate (target <= %s%%). coverage of the 80%% intervals: %d of %d rounds inside (%s%%;\n" "$TCOST" "$7" "$8" "$cov"
  printf "# target %s-%s%%), median width %s%% of the prediction (p90 - p10). verdict: %s\n" "$TCOV_LO" "$TCOV_HI" "$9" "$([ "$miss" = 0 ] && echo "targets met" || echo "TARGETS MISSED")"
} >> "$OUT"
cat "$OUT"
[ "$miss" = 0 ] || exit 3
exit 0
