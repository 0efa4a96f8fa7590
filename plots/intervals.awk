# intervals.awk: reads the prediction-interval table of `make validate`
# (traces/validation/validation.txt, the table after "# prediction intervals") for the third
# panel of figure 7: per configuration its 80% interval and its measured runs, relative to
# the interval's p50. Columns are found by name in the header row that names p10, p50, p90
# and runs; optional preset and calib columns (one colour per preset, calibrated configurations
# drawn lighter). Writes:
#   stdout     x preset calib lo_pct hi_pct          (one row per configuration)
#   pts=FILE   x preset calib rel_pct inside         (one row per measured run)
#   sum=FILE   one Markdown line per preset: held-out runs inside / all (share), median width
# x counts configurations in table order, with a gap of 3 between presets. Exit 3 without
# the table.
function median(p, n,    i, j, t) {
    for (i = 1; i <= n; i++) M[i] = Wd[p, i]
    for (i = 2; i <= n; i++) { t = M[i]; for (j = i - 1; j >= 1 && M[j] > t; j--) M[j + 1] = M[j]; M[j + 1] = t }
    return (n % 2) ? M[(n + 1) / 2] : (M[n / 2] + M[n / 2 + 1]) / 2
}
/^# prediction intervals/ { intable = 1; next }
!intable { next }
/^#/ && !cols {
    body = $0; sub(/^#[ \t]*/, "", body)
    n = split(body, H, /[ \t]+/)
    for (i = 1; i <= n; i++) col[H[i]] = i
    if (("p10" in col) && ("p50" in col) && ("p90" in col) && ("runs" in col)) cols = 1
    next
}
!cols { next }
/^#/ { if (np) done = 1; next }          # a comment after the rows ends the table
done { next }
{
    p50 = $(col["p50"]); if (!(p50 > 0)) next
    pre = ("preset" in col) ? $(col["preset"]) : "all"
    cal = ("calib" in col) ? ($(col["calib"]) == "yes") : 0
    if (pre != last) { if (np) x += 3; last = pre; if (!(pre in nh)) { P[++npre] = pre; nh[pre] = 0 } }
    x++; np++
    lo = 100 * ($(col["p10"]) / p50 - 1); hi = 100 * ($(col["p90"]) / p50 - 1)
    printf "%d %s %d %.3f %.3f\n", x, pre, cal, lo, hi
    k = split($(col["runs"]), r, ";")
    for (i = 1; i <= k; i++) {
        v = r[i] + 0; ins = (v >= $(col["p10"]) + 0 && v <= $(col["p90"]) + 0)
        if (pts != "") printf "%d %s %d %.3f %d\n", x, pre, cal, 100 * (v / p50 - 1), ins > pts
        if (!cal) { th[pre]++; ti[pre] += ins }
    }
    if (!cal) { nh[pre]++; Wd[pre, nh[pre]] = hi - lo }
}
END {
    if (!np) { print "intervals.awk: no prediction-interval table (a header naming p10, p50, p90, runs after \"# prediction intervals\")" > "/dev/stderr"; exit 3 }
    if (sum == "") exit 0
    for (i = 1; i <= npre; i++) {
        p = P[i]
        if (th[p]) printf "- %s: %d of %d held-out measured runs inside their 80%% interval (%.1f%%); median width %.2f%% of p50\n", \
            p, ti[p], th[p], 100 * ti[p] / th[p], median(p, nh[p]) > sum
        else printf "- %s: no held-out configuration\n", p > sum
    }
}
