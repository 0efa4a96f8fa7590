# noise_split.awk: how much of a validation table's held-out error is the measured truth's own
# repeat noise (models/validate.sh's interval table: every held-out configuration's p50 and its
# runs). With e = log(p50 / the runs' measured value): var(e) = var(model error) + var(run noise) / runs,
# the run noise's variance estimated from each configuration's runs (sample variance of their
# logs, averaged). Prints the error's sd, the run noise's sd, that of a mean of the runs, and the
# model error's sd left when the mean's noise is taken out (0 when the noise explains it all),
# per preset.
# usage: awk -f models/noise_split.awk TABLE...   (models/validate.sh appends it to every table)
# rows read: the interval table's (16 fields, calib "no", runs "a;b;c"); the mean of the runs is
# the first table's measured value of the same configuration (its Nth row of that preset, mode,
# steps, topk, dt, alpha and concurrency for the interval table's Nth), the mean tok/s where the
# first table is not there
FNR == 1 { delete meas; delete seen; delete used }
$1 !~ /^#/ && NF >= 18 && $10 ~ /^[0-9]+$/ {
    key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5 SUBSEP $6 SUBSEP $7
    meas[key, ++seen[key]] = $11
    next
}
$1 !~ /^#/ && NF == 16 { key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5 SUBSEP $6 SUBSEP $7; at = ++used[key] }
NF == 16 && $15 == "no" && $16 ~ /;/ {
    n = split($16, r, ";")
    if (n < 2 || $11 <= 0) next
    s = 0; for (i = 1; i <= n; i++) { l[i] = log(r[i]); s += r[i] }
    m = s / n
    if ((key, at) in meas) m = meas[key, at]
    lm = 0; for (i = 1; i <= n; i++) lm += l[i]; lm /= n
    v = 0; for (i = 1; i <= n; i++) v += (l[i] - lm) ^ 2; v /= (n - 1)
    e = log($11 / m); p = $1
    if (!(p in k)) order[++np] = p
    k[p]++; es[p] += e; ee[p] += e * e; vn[p] += v; nr[p] += n
}
END {
    print "#\n# the held-out error against the truth's own noise (models/noise_split.awk): e = log(p50 /"
    print "# measured); var(e) = model error^2 + run noise^2 / runs, the run noise (timing and acceptance"
    print "# draws) from each configuration's runs"
    print "# preset       configs  runs  error_sd  run_noise_sd  noise_of_mean  model_error_sd  mean_error"
    for (j = 1; j <= np; j++) {
        p = order[j]
        if (k[p] < 3) { printf "  %-12s %7d  (fewer than 3 configurations with runs)\n", p, k[p]; continue }
        ve = (ee[p] - es[p] * es[p] / k[p]) / (k[p] - 1); v = vn[p] / k[p]; rn = nr[p] / k[p]
        vm = ve - v / rn; if (vm < 0) vm = 0
        printf "  %-12s %7d %5.1f %8.2f%% %12.2f%% %13.2f%% %14.2f%% %+10.2f%%\n", p, k[p], rn, 100 * sqrt(ve),
               100 * sqrt(v), 100 * sqrt(v / rn), 100 * sqrt(vm), 100 * es[p] / k[p]
    }
}
