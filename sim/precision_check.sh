#!/bin/sh
# sim/precision_check.sh BIN [OUT]: does --precision keep its promise? Runs make bench's
# 10,000-configuration TP=8 sweep at the default precision (1%), then every configuration
# again (and each distinct baseline) with 10x the measured iterations its precision run
# took and the same estimator (--precision 1e-9: never reached, so the run goes to
# --iterations), and compares: every tok/s must lie within the precision of its 10x longer
# run. Writes the comparison table to OUT (default docs/precision_check.txt) and prints it.
# (The reference runs warn that they did not reach --precision 1e-9: their stderr is dropped.)
# Workload: ~10,100 reference runs of ~600-15,000 iterations, on every core: 1.7 min on
# the 2-core machine under load (docs/precision_check.txt). PRECISION_QUICK=1: BENCH_QUICK's
# 1,000-configuration grid.
set -eu
bin=${1:-bin/specsim}
out=${2:-docs/precision_check.txt}
prec=0.01
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
# the bench's model (sim/bench.sh writes it; the same text is cut from there)
sed -n '/^cat > "$tmp\/tp8.json" <<.JSON.$/,/^JSON$/p' sim/bench.sh | sed '1d;$d' > "$tmp/tp8.json"
[ -s "$tmp/tp8.json" ] || { echo "precision_check: could not cut the model out of sim/bench.sh" >&2; exit 2; }
conc="1,2,4,8,16,24,32,48,64,96"
alphas="0.5,0.55,0.6,0.65,0.7,0.75,0.8,0.85,0.9,0.95"
if [ "${PRECISION_QUICK:-0}" = 1 ]; then conc="1,8,32"; alphas="0.6,0.7,0.8"; fi
t0=$(date +%s)
"$bin" sweep --model "$tmp/tp8.json" --grid link=pcie5-8gpu,nvlink4-8gpu \
    --grid allreduce=nccl,ring,tree,oneshot,twoshot --grid concurrency=$conc --grid steps=1..10 \
    --grid alpha=$alphas --precision $prec --quiet --out "$tmp/sweep.csv"
# one reference command per configuration, one per distinct baseline (its knobs: link,
# allreduce, concurrency), each writing "KIND ID TOK_S"
awk -F, -v bin="$bin" -v model="$tmp/tp8.json" -v dir="$tmp" '
  NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { common = sprintf("%s run --model %s --link %s --allreduce %s --concurrency %s --quiet --csv --precision 1e-9", \
                     bin, model, $c["link"], $c["allreduce"], $c["concurrency"])
    printf "%s --steps %s --alpha %s --no-baseline --iterations %d 2>/dev/null | awk -F, -v id=%d %s > %s/ref.%d\n", \
      common, $c["steps"], $c["alpha"], 10 * $c["iterations"], NR - 1, \
      "\047NR == 1 { for (i = 1; i <= NF; i++) if ($i == \"tok_s\") k = i; next } { print \"spec\", id, $k }\047", dir, NR - 1
    b = $c["link"] SUBSEP $c["allreduce"] SUBSEP $c["concurrency"]
    if (!(b in seen)) { seen[b] = 1
      printf "%s --iterations %d 2>/dev/null | awk -F, -v id=%d %s > %s/base.%d\n", common, 10 * $c["base_iterations"], NR - 1, \
        "\047NR == 1 { for (i = 1; i <= NF; i++) if ($i == \"base_tok_s\") k = i; next } { print \"base\", id, $k }\047", dir, NR - 1 } }
' "$tmp/sweep.csv" > "$tmp/cmds"
tr '\n' '\0' < "$tmp/cmds" | xargs -0 -P "$(nproc)" -n 1 sh -c
cat "$tmp"/ref.* "$tmp"/base.* > "$tmp/refs"
t1=$(date +%s)
awk -F, -v refs="$tmp/refs" -v prec=$prec -v secs=$((t1 - t0)) -v nref="$(wc -l < "$tmp/cmds")" '
  function abs(x) { return x < 0 ? -x : x }
  BEGIN { while ((getline l < refs) > 0) { split(l, f, " "); ref[f[1], f[2]] = f[3] } }
  NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { id = NR - 1
    if (!(("spec", id) in ref)) { print "precision_check: no reference for configuration " id > "/dev/stderr"; bad = 1; exit 2 }
    e = $c["tok_s"] / ref["spec", id] - 1; a = abs(e); n++
    b = $c["link"] SUBSEP $c["allreduce"] SUBSEP $c["concurrency"]
    if (!(b in bid)) bid[b] = id
    if (id == bid[b]) { eb = $c["base_tok_s"] / ref["base", id] - 1; nb++; if (abs(eb) > maxb) maxb = abs(eb); if (abs(eb) > prec) outb++
      bits += $c["base_iterations"] }
    its += $c["iterations"]
    if (a > mx) { mx = a; worst = sprintf("link %s, %s, concurrency %s, steps %s, alpha %s: %.2f tok/s at %d iterations (stated +-%.3f%%), %.2f at %d: %+.3f%%", \
      $c["link"], $c["allreduce"], $c["concurrency"], $c["steps"], $c["alpha"], $c["tok_s"], $c["iterations"], $c["precision"], ref["spec", id], 10 * $c["iterations"], 100 * e) }
    if (a > prec) out++
    if (a > $c["precision"] / 100) own++
    k = $c["concurrency"]; if (!(k in cn)) ord[++no] = k
    cn[k]++; cs[k] += a; if (a > cm[k]) cm[k] = a; ci[k] += $c["iterations"] }
  END { if (bad) exit 2
    printf "# specsim --precision %g against runs 10x as long (sim/precision_check.sh)\n", prec
    printf "# %d configurations (make bench'"'"'s TP=8 grid) and %d distinct baselines; %d reference runs, %d s wall in all\n", n, nb, nref, secs
    printf "# error = precision run / 10x longer run - 1 (the same estimator, control variate included)\n"
    printf "# %-11s %7s %10s %10s %10s\n", "concurrency", "configs", "iterations", "mean|e|", "max|e|"
    printf "# %-11s %7s %10s %10s %10s\n", "requests", "count", "mean", "%", "%"
    for (i = 1; i <= no; i++) { k = ord[i]; printf "  %-11s %7d %10.0f %10.3f %10.3f\n", k, cn[k], ci[k] / cn[k], 100 * cs[k] / cn[k], 100 * cm[k] }
    printf "# speculative: %d of %d beyond +-%g%%, %d beyond their own stated precision column; max |e| %.3f%%\n", out, n, 100 * prec, own, 100 * mx
    printf "# worst: %s\n", worst
    printf "# baselines: %d of %d beyond +-%g%%; max |e| %.3f%%\n", outb, nb, 100 * prec, 100 * maxb
    printf "# measured iterations per run: %.0f (speculative), %.0f (baselines) on average\n", its / n, bits / nb
    exit (out || outb) ? 1 : 0 }
' "$tmp/sweep.csv" > "$tmp/table" || rc=$?
cp "$tmp/table" "$out"
[ -n "${PRECISION_KEEP:-}" ] && cp "$tmp/sweep.csv" "$tmp/refs" "$PRECISION_KEEP"/
cat "$out"
exit "${rc:-0}"
