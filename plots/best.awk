# best.awk: figure 3 of `make report`: the fastest draft configuration per (acceptance,
# concurrency) and the break-even acceptance per concurrency.
# Input rows: conc alpha steps topk draft_tokens tok_s base_tok_s speedup [speedup_p10
# speedup_p90] (one per simulation).
# Writes: stdout  alpha conc steps topk draft_tokens speedup tok_s base_tok_s (the best)
#         tab=FILE  xi yi speedup "s,k,d" alpha conc   (labelled heatmap, alpha 0.3,0.4..0.9,0.95)
#         be=FILE   conc best cfg314 cfg548 cfg112 top best_p90 best_p10  (break-even alpha;
#                   NaN: none up to top; best_p90/p10: the best's from its speedup's p90 and
#                   p10, NaN without them)
#         md=FILE   the best configurations as a Markdown table
#         xt=FILE   gnuplot commands for the heatmap's tics
# Break-even: the first simulated alpha (ascending) whose speedup is >= 1, linearly
# interpolated from the alpha below it; the lowest simulated alpha when that one already wins.
{
    c = $1 + 0; a = $2 + 0
    if (!(c in seenc)) { seenc[c] = 1; C[++nc] = c }
    if (!(a in seena)) { seena[a] = 1; A[++na] = a }
    key = $3 "," $4 "," $5
    sp[c, a, key] = $8 + 0
    if (!((c, a) in bsp) || $8 + 0 > bsp[c, a]) {
        bsp[c, a] = $8 + 0; bk[c, a] = key; btok[c, a] = $6; bbase[c, a] = $7
        bp10[c, a] = NF >= 10 ? $9 + 0 : ""; bp90[c, a] = NF >= 10 ? $10 + 0 : ""
    }
}
function sortnum(X, n,    i, j, x) {
    for (i = 2; i <= n; i++) { x = X[i]; for (j = i - 1; j >= 1 && X[j] > x; j--) X[j + 1] = X[j]; X[j + 1] = x }
}
function breakeven(c, key, q,    i, s, s0, a0) {   # key "" = the best; q 10/90: its pNN
    for (i = 1; i <= na; i++) {
        if (key == "" && q == 10) { if (bp10[c, A[i]] == "") return "NaN"; s = bp10[c, A[i]] }
        else if (key == "" && q == 90) { if (bp90[c, A[i]] == "") return "NaN"; s = bp90[c, A[i]] }
        else if (key == "") s = bsp[c, A[i]]
        else if ((c, A[i], key) in sp) s = sp[c, A[i], key]
        else return "NaN"
        if (s >= 1) {
            if (i == 1) return sprintf("%.4f", A[1])
            return sprintf("%.4f", a0 + (1 - s0) * (A[i] - a0) / (s - s0))
        }
        s0 = s; a0 = A[i]
    }
    return "NaN"
}
END {
    if (nc == 0) { print "best.awk: no simulations in the input" > "/dev/stderr"; exit 3 }
    sortnum(C, nc); sortnum(A, na)
    for (i = 1; i <= na; i++) for (j = 1; j <= nc; j++) {
        split(bk[C[j], A[i]], p, ",")
        printf "%.2f %d %s %s %s %.4f %s %s\n", A[i], C[j], p[1], p[2], p[3], bsp[C[j], A[i]], btok[C[j], A[i]], bbase[C[j], A[i]]
    }
    # the heatmap rows: alpha 0.30, 0.40, .., 0.90, 0.95 when simulated
    nr = 0
    for (i = 1; i <= na; i++) {
        x = A[i] * 100
        if ((x >= 29.9 && (x + 0.5) % 10 < 1) || (x > 94.9 && x < 95.1)) R[++nr] = A[i]
    }
    yt = "set ytics ("
    for (r = 1; r <= nr; r++) {
        for (j = 1; j <= nc; j++) {
            split(bk[C[j], R[r]], p, ",")
            printf "%d %d %.4f \"%s,%s,%s\" %.2f %d\n", j - 1, r - 1, bsp[C[j], R[r]], p[1], p[2], p[3], R[r], C[j] > tab
        }
        yt = yt sprintf("%s\"%.2f\" %d", (r > 1 ? ", " : ""), R[r], r - 1)
    }
    xtx = "set xtics ("
    for (j = 1; j <= nc; j++) xtx = xtx sprintf("%s\"%d\" %d", (j > 1 ? ", " : ""), C[j], j - 1)
    print xtx ")" > xt
    print yt ")" > xt
    printf "nrows = %d\nncols = %d\n", nr, nc > xt
    print "# conc be_best be_3_1_4 be_5_4_8 be_1_1_2 alpha_top be_best_p90 be_best_p10" > be
    for (j = 1; j <= nc; j++)
        printf "%d %s %s %s %s %.2f %s %s\n", C[j], breakeven(C[j], ""), breakeven(C[j], "3,1,4"),
               breakeven(C[j], "5,4,8"), breakeven(C[j], "1,1,2"), A[na],
               breakeven(C[j], "", 90), breakeven(C[j], "", 10) > be
    printf "| alpha \\ concurrency |" > md
    for (j = 1; j <= nc; j++) printf " %d |", C[j] > md
    printf "\n|---|" > md
    for (j = 1; j <= nc; j++) printf "---|" > md
    printf "\n" > md
    for (r = nr; r >= 1; r--) {
        printf "| %.2f |", R[r] > md
        for (j = 1; j <= nc; j++) {
            split(bk[C[j], R[r]], p, ",")
            printf " (%s,%s,%s) %.2fx%s |", p[1], p[2], p[3], bsp[C[j], R[r]], (bsp[C[j], R[r]] < 1 ? " (slower)" : "") > md
        }
        printf "\n" > md
    }
}
