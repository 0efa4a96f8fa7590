# fig7_validation.gp: predicted vs measured throughput, the y = x line and the +-3% / +-8%
# bands (issue 5's accuracy goals), one colour per group (preset); beside it the relative
# error of each configuration, with the same bands, the largest misses (|error| >= labthr,
# set by report.sh to the 4th largest, at least 8%) labelled.
# Below them, when the table has prediction intervals (ivb and ivp given): every
# configuration's 80% interval of its nominal prediction as a bar, relative to its p50, and
# its measured runs as points (red open circles: outside the interval).
# Input: val = measured predicted err_pct group "label"; groups = the group names; vars =
# gnuplot assignments mname, pname (the column names read), hascal (a calib column exists:
# calibration points, column 6 = 1, are drawn open); optional ivb = x group calib lo_pct
# hi_pct and ivp = x group calib rel_pct inside (plots/intervals.awk), ivtitle.
haveiv = exists("ivb") && exists("ivp")
w = 1500; h = haveiv ? 1260 : 760
ytop = haveiv ? 0.93 : 0.90
ybot = haveiv ? 0.58 : 0.12
load "plots/common.gp"
load vars
gcol = c_draft." ".c_verify." ".c_accept." ".c_extend." ".c_decode." ".c_sample." ".c_comm." ".c_host
stats val using 1 nooutput
xmin = STATS_min; xmax = STATS_max
stats val using 2 nooutput
xmin = (STATS_min < xmin) ? STATS_min : xmin
xmax = (STATS_max > xmax) ? STATS_max : xmax
# log axes when the points span more than a decade (presets differ by orders of magnitude)
logax = (xmin > 0 && xmax / xmin > 10)
if (logax) {
    lo = xmin / 1.25; hi = xmax * 1.25
} else {
    span = xmax - xmin
    lo = (xmin - 0.08 * span > 0) ? xmin - 0.08 * span : 0
    hi = xmax + 0.08 * span
    if (span <= 0) { lo = xmin * 0.8; hi = xmax * 1.2 }
}
stats val using 3 nooutput
emax = (abs(STATS_min) > abs(STATS_max)) ? abs(STATS_min) : abs(STATS_max)
emax = (emax < 10) ? 10 : emax * 1.15
set samples 50
set multiplot title "Predicted vs measured throughput (make validate)" font ",14"

set lmargin at screen 0.07
set rmargin at screen 0.47
set tmargin at screen ytop
set bmargin at screen ybot
if (logax) { set logscale xy; set format x "%g"; set format y "%g" }
set xrange [lo : hi]
set yrange [lo : hi]
set size ratio -1
set title "predicted vs measured, y = x and the error goals"
set xlabel sprintf("measured, tokens/s (column %s%s)", mname, logax ? ", log scale" : "")
set ylabel sprintf("predicted, tokens/s (column %s%s)", pname, logax ? ", log scale" : "")
set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 2
eval src_label
plot '+' using 1:($1 * 0.92):($1 * 1.08) with filledcurves fc rgb "#EAF2FB" title "+-8% (max error goal)", \
     '+' using 1:($1 * 0.97):($1 * 1.03) with filledcurves fc rgb "#C6DBEF" title "+-3% (median error goal)", \
     x with lines lw 1.5 lc rgb "#000000" title "y = x", \
     for [i = 1 : words(groups)] val using ((strcol(4) eq word(groups, i) && $6 != 1) ? $1 : NaN):2 with points pt 7 ps 1.2 \
         lc rgb word(gcol, (i - 1) % 8 + 1) title word(groups, i), \
     for [i = 1 : words(groups)] val using ((strcol(4) eq word(groups, i) && $6 == 1) ? $1 : NaN):2 with points pt 6 ps 1.3 lw 1.5 \
         lc rgb word(gcol, (i - 1) % 8 + 1) notitle, \
     (hascal ? 1/0 : 1/0) with points pt 6 ps 1.3 lc rgb "#404040" title (hascal ? "open: configuration in the calibration subset" : "")
unset label 99

set lmargin at screen 0.57
set rmargin at screen 0.97
set size noratio
unset logscale y
set format y "%g"
set yrange [-emax : emax]
set title "prediction error per configuration"
set ylabel "error: (predicted - measured) / measured (%)"
set key bottom right Left reverse opaque box lc rgb "#C0C0C0" samplen 2
plot '+' using 1:(-8):(8) with filledcurves fc rgb "#EAF2FB" title "+-8%", \
     '+' using 1:(-3):(3) with filledcurves fc rgb "#C6DBEF" title "+-3%", \
     0 with lines lw 1.5 lc rgb "#000000" notitle, \
     for [i = 1 : words(groups)] val using ((strcol(4) eq word(groups, i) && $6 != 1) ? $1 : NaN):3 with points pt 7 ps 1.2 \
         lc rgb word(gcol, (i - 1) % 8 + 1) title word(groups, i), \
     for [i = 1 : words(groups)] val using ((strcol(4) eq word(groups, i) && $6 == 1) ? $1 : NaN):3 with points pt 6 ps 1.3 lw 1.5 \
         lc rgb word(gcol, (i - 1) % 8 + 1) notitle, \
     val using 1:(abs($3) >= labthr ? $3 : NaN):5 with labels offset 0, 1 font ",8" notitle

if (!exists("ivtitle")) ivtitle = "80% prediction intervals of the nominal predictions (make validate), and the measured runs"
if (haveiv) {
    unset logscale
    set autoscale xy    # stats reads only the points inside the current ranges
    stats ivb using 1 nooutput
    xlo = STATS_min - 1; xhi = STATS_max + 1
    stats ivb using 5 nooutput
    ehi = STATS_max
    stats ivp using 4 nooutput
    ehi = (STATS_max > ehi) ? STATS_max : ehi
    elo = STATS_min
    stats ivb using 4 nooutput
    elo = (STATS_min < elo) ? STATS_min : elo
    set lmargin at screen 0.07
    set rmargin at screen 0.97
    set tmargin at screen 0.47
    set bmargin at screen 0.06
    set size noratio
    set xrange [xlo : xhi]
    set yrange [elo * 1.1 : ehi * 1.1]
    set format x "%g"
    set format y "%g"
    set title ivtitle
    set xlabel "configuration (as listed in the table; presets apart)"
    set ylabel "relative to the prediction's p50 (%)"
    set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 2 maxrows 3
    plot 0 with lines lw 1 lc rgb "#000000" notitle, \
         for [i = 1 : words(groups)] ivb using ((strcol(2) eq word(groups, i) && $3 == 0) ? $1 : NaN):(0):4:5 \
             with yerrorbars pt -1 lw 2 lc rgb word(gcol, (i - 1) % 8 + 1) title word(groups, i)." 80% interval", \
         ivb using ($3 == 1 ? $1 : NaN):(0):4:5 with yerrorbars pt -1 lw 1.5 lc rgb "#B0B0B0" \
             title (hascal ? "interval of a calibrated configuration" : ""), \
         for [i = 1 : words(groups)] ivp using ((strcol(2) eq word(groups, i) && $5 == 1) ? $1 : NaN):4 \
             with points pt 7 ps 0.6 lc rgb word(gcol, (i - 1) % 8 + 1) notitle, \
         ivp using ($5 == 0 ? $1 : NaN):4 with points pt 6 ps 0.9 lw 1.5 lc rgb "#B2182B" \
             title "measured run outside its interval"
}
unset multiplot
