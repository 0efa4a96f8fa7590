# fig9_speedup_conc.gp: speedup against concurrency, one curve per draft length, each with its
# 80% prediction interval as a band (p10 to p90, specsim's speedup_p10/p90), and the
# break-even line speedup = 1.
# Input (plots/report.sh): spd = one block per draft length: concurrency speedup p10 p90;
# steps_list = the draft lengths of the blocks, in order.
w = 1100; h = 620
load "plots/common.gp"
scol = "#4C72B0 #DD8452 #55A868 #8172B3"
set title "Speedup vs concurrency (chain drafting at alpha 0.7), with 80% prediction intervals" font ",14"
set xlabel "concurrency (running requests, log scale)"
set ylabel "speedup over no speculation (x)"
set logscale x 2
set xrange [0.8 : *]
set yrange [0 : *]
set lmargin at screen 0.09
set rmargin at screen 0.97
set tmargin at screen 0.90
set bmargin at screen 0.14
set key top right Left reverse opaque box lc rgb "#C0C0C0" samplen 2
eval src_label
plot for [i = 1 : words(steps_list)] spd index (i - 1) using 1:3:4 with filledcurves \
         fc rgb word(scol, i) fs transparent solid 0.22 noborder notitle, \
     for [i = 1 : words(steps_list)] spd index (i - 1) using 1:2 with linespoints lw 2.5 pt 7 ps 0.9 \
         lc rgb word(scol, i) title sprintf("steps %s (band: p10..p90)", word(steps_list, i)), \
     1 with lines dt 2 lw 2 lc rgb "#000000" title "break-even (speedup 1)"
