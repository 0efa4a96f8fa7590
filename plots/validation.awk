# validation.awk: reads the table of `make validate` (traces/validation/validation.txt) for
# figure 7 of `make report`. The columns are found by name, not position, so the table may be
# whitespace- or comma-separated, with or without a leading `#` on its header row: the
# header is the first row naming a column that starts with "meas" and one that starts with
# "pred" (e.g. measured_tok_s, predicted_tok_s); optional columns: config/name/case (label),
# preset/model/group (one colour each), calib (yes/no: the configuration was in the
# calibration subset; models/validate.sh writes it). Without a label column the label is made
# of the shape columns present (mode, steps, topk, dt, alpha, conc). Rows whose measured or
# predicted cell is not a number (units rows) are skipped; a comment row after the data ends
# the table (what follows, e.g. validate.sh's per-preset verdicts, is another table). A label with spaces in a
# whitespace table is kept whole (the extra fields are counted from the label's position).
# Writes: stdout "measured predicted err_pct group label calib(1/0/-1)"; -v sum=FILE a
# Markdown summary (median and max absolute error per group, over the held-out points when the
# calib column exists, and the held-out points outside +-8%); -v vars=FILE gnuplot
# assignments with the column names (axis labels) and whether calib was found.
function lead_num(s) {                 # the number a cell starts with, or "" (e.g. "812.3+-4")
    if (match(s, /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?/)) return substr(s, 1, RLENGTH) + 0
    return ""
}
function cells(s, F) {                 # split a row on the table's separator, cells trimmed
    n = (sep == ",") ? split(s, F, ",") : split(s, F, /[ \t]+/)
    for (q = 1; q <= n; q++) { gsub(/^[ \t"]+|[ \t"]+$/, "", F[q]) }
    return n
}
# Where header column i is in a row of n cells: the same place when the row has as many cells
# as the header; else columns after a label column, and the measured/predicted columns and
# those after them, are counted from the row's end (a label with spaces makes a row longer,
# blank cells printed with %5s make it shorter; both happen before these columns).
function colat(i) {
    if (!i || off == 0) return i
    if ((lab && i > lab) || (!lab && i >= tail)) return i + off
    return i
}
function median(g,    i, j, x, k) {
    k = cnt[g]
    for (i = 1; i <= k; i++) V[i] = ae[g, i]
    for (i = 2; i <= k; i++) { x = V[i]; for (j = i - 1; j >= 1 && V[j] > x; j--) V[j + 1] = V[j]; V[j + 1] = x }
    return (k % 2) ? V[(k + 1) / 2] : (V[k / 2] + V[k / 2 + 1]) / 2
}
{
    line = $0; sub(/\r$/, "", line)
    if (line ~ /^[ \t]*$/) next
    comment = (line ~ /^[ \t]*#/)
    body = line; sub(/^[ \t]*#+[ \t]*/, "", body); sub(/^[ \t]+/, "", body)
    if (!cols) {
        sep = (index(body, ",") > 0) ? "," : " "
        hn = cells(body, H)
        m = p = lab = grp = cal = 0; nshape = 0
        for (i = 1; i <= hn; i++) {
            nm = tolower(H[i])
            if (nm ~ / /) continue      # a column name is one word (not a sentence in a comment)
            if (!m && nm ~ /^meas/) m = i
            else if (!p && nm ~ /^pred/) p = i
            else if (!lab && nm ~ /^(config|configuration|name|case|point|label)/) lab = i
            else if (!grp && nm ~ /^(preset|model|group|workload|family)/) grp = i
            else if (!cal && nm ~ /^calib/) cal = i
            else if (nm ~ /^(mode|steps|topk|dt|draft_tokens|alpha|conc|concurrency|bs)$/) SH[++nshape] = i
        }
        if (m && p) { cols = 1; mname = H[m]; pname = H[p] }
        next
    }
    if (ended) next
    if (comment) { if (np) ended = 1; next }   # a comment after the rows ends the table
    n = cells(body, F)
    off = n - hn
    tail = (m < p) ? m : p
    mi = colat(m); pi = colat(p); gi = colat(grp); ci = colat(cal)
    if (mi < 1 || pi < 1 || mi > n || pi > n) next
    mv = lead_num(F[mi]); pv = lead_num(F[pi])
    if (mv == "" || pv == "" || mv <= 0) next
    label = ""
    if (lab) { for (i = lab; i <= lab + (off > 0 ? off : 0); i++) label = label (i > lab ? " " : "") F[i] }
    else if (off == 0) {
        for (k = 1; k <= nshape; k++) {
            j = SH[k]
            if (F[j] == "" || F[j] == "-") continue
            label = label (label == "" ? "" : " ") (tolower(H[SH[k]]) == "mode" ? F[j] : tolower(H[SH[k]]) "=" F[j])
        }
    } else {
        # blank cells made the row shorter: the cells before the measured one, as they are
        for (j = 1; j < mi; j++) if (j != gi && F[j] != "-") label = label (label == "" ? "" : " ") F[j]
    }
    if (label == "") label = "row " NR
    g = grp ? F[gi] : "all"
    c = -1
    if (cal) { cv = tolower(F[ci]); c = (cv ~ /^(yes|y|1|true)$/) ? 1 : 0 }
    gsub(/[ \t"]/, "_", g); gsub(/"/, "'", label)
    err = 100 * (pv - mv) / mv
    printf "%s %s %.3f %s \"%s\" %d\n", mv, pv, err, g, label, c
    np++
    if (!(g in cnt)) { G[++ng] = g; cnt[g] = 0 }
    ncal += (c == 1)
    if (c == 1) next                     # the goals are about configurations not calibrated on
    cnt[g]++; ae[g, cnt[g]] = (err < 0 ? -err : err)
    cnt["(all)"]++; ae["(all)", cnt["(all)"]] = (err < 0 ? -err : err)
    if (err > 8 || err < -8) out[++nout] = sprintf("%s (%s): measured %s, predicted %s, error %+.1f%%", label, g, mv, pv, err)
}
END {
    if (!cols) { print "validation.awk: no header row naming a measured and a predicted column (meas*, pred*)" > "/dev/stderr"; exit 3 }
    if (np == 0) { print "validation.awk: a header was found (" mname ", " pname ") but no row with numbers" > "/dev/stderr"; exit 3 }
    if (vars != "") printf "mname = \"%s\"\npname = \"%s\"\nhascal = %d\n", mname, pname, cal ? 1 : 0 > vars
    if (sum == "") exit 0
    what = cal ? "held-out points (not in the calibration subset)" : "points"
    print "| group | " what " | median abs error | max abs error |" > sum
    print "|---|---|---|---|" > sum
    G[++ng] = "(all)"
    for (k = 1; k <= ng; k++) {
        g = G[k]; mx = 0
        if (cnt[g] == 0) { printf "| %s | 0 | - | - |\n", g > sum; continue }
        for (i = 1; i <= cnt[g]; i++) if (ae[g, i] > mx) mx = ae[g, i]
        printf "| %s | %d | %.2f%% | %.2f%% |\n", g, cnt[g], median(g), mx > sum
    }
    printf "\nColumns read: measured = `%s`, predicted = `%s`%s; error = (predicted - measured) / measured.", mname, pname, cal ? ", calib = `" H[cal] "`" : "" > sum
    if (cal) printf " %d calibration point%s drawn open and left out of the table.", ncal, ncal == 1 ? "" : "s" > sum
    printf "\n" > sum
    if (nout) {
        printf "\n%s outside +-8%%:\n\n", cal ? "Held-out points" : "Points" > sum
        for (i = 1; i <= nout; i++) printf "- %s\n", out[i] > sum
    }
}
