#!/bin/sh
# call25_tables.sh: call25.sh's rows.csv -> per loop and mode the median tok/s of the kept runs
# (each process's first repeat dropped: it pays the caching allocator's first cudaMallocs), their
# min-max, and the loss against no profiler (1 - median / none's median).
# usage: sh profiler/device/call25_tables.sh DIR/rows.csv
set -eu
awk -F, 'NR > 1 && $4 > 0 { k = $1 SUBSEP $2; n[k]++; v[k, n[k]] = $5; loops[$1] = 1; modes[$2] = 1 }
  function med(k,    i, j, t, m) {
    m = n[k]; for (i = 1; i <= m; i++) w[i] = v[k, i]
    for (i = 2; i <= m; i++) { t = w[i]; for (j = i - 1; j >= 1 && w[j] > t; j--) w[j + 1] = w[j]; w[j + 1] = t }
    lo = w[1]; hi = w[m]
    return m % 2 ? w[(m + 1) / 2] : (w[m / 2] + w[m / 2 + 1]) / 2 }
  END {
    printf "%-12s %-7s %5s %9s %9s %9s %7s\n", "loop", "mode", "runs", "median", "min", "max", "loss"
    split("none always drv floor", order, " ")
    for (l in loops) {
      base = ((l, "none") in n) ? med(l SUBSEP "none") : 0
      for (o = 1; o <= 4; o++) { m = order[o]; k = l SUBSEP m; if (!(k in n)) continue
        x = med(k)
        printf "%-12s %-7s %5d %9.2f %9.2f %9.2f %6.1f%%\n", l, m, n[k], x, lo, hi, (base > 0 ? 100 * (1 - x / base) : 0) } } }' "$1"
