# csvpick.awk: picks named columns from a specsim CSV (`specsim sweep`, `specsim run --csv`)
# and writes them as a whitespace table with a `#` header row, the way gnuplot reads data.
# The specsim banner (`#` lines) is skipped; the first other line is the header.
# Usage: awk -F, -v cols=steps,alpha,tok_s[,name=expr-free alias...] -f plots/csvpick.awk FILE.csv
# A column missing from the header is an error (exit 3) naming the file and the column, so a
# renamed specsim column fails loudly instead of plotting zeros. Values with commas inside
# (quoted CSV) are not expected: the report's grids avoid them.
BEGIN { nwant = split(cols, want, ",") }
/^#/ { next }
!have_header {
    for (i = 1; i <= NF; i++) idx[$i] = i
    for (k = 1; k <= nwant; k++)
        if (!(want[k] in idx)) {
            printf "csvpick: %s: column \"%s\" not in the header (%s)\n", FILENAME, want[k], $0 > "/dev/stderr"
            bad = 1; exit 3
        }
    have_header = 1
    printf "#"
    for (k = 1; k <= nwant; k++) printf " %s", want[k]
    printf "\n"
    next
}
NF > 0 {
    for (k = 1; k <= nwant; k++) printf "%s%s", (k > 1 ? " " : ""), $(idx[want[k]])
    printf "\n"
}
END {
    if (bad) exit 3
    if (!have_header) {
        printf "csvpick: %s: no header line (empty sweep output?)\n", FILENAME > "/dev/stderr"
        exit 3
    }
}
