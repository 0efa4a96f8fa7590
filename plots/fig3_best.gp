# fig3_best.gp: left, the fastest configuration per acceptance (rows) and concurrency (columns)
# as a labelled heatmap; right, the break-even acceptance per concurrency.
# Input: tab = xi yi speedup "s,k,d" alpha conc; be = conc be_best be_3_1_4 be_5_4_8 be_1_1_2
# alpha_top be_best_p90 be_best_p10 (the band: the best's break-even from its speedup's 80%
# interval); xtfile = gnuplot tics (xtics, ytics, nrows, ncols) written by plots/best.awk.
w = 1450; h = 680
load "plots/common.gp"
load xtfile
if (!exists("nobe")) nobe = 0
stats tab using 3 nooutput
lo = (STATS_min > 0.95) ? 0.95 : STATS_min
hi = (STATS_max < 1.05) ? 1.05 : STATS_max
set multiplot title "Best draft configuration, and the acceptance needed to break even" font ",14"

set lmargin at screen 0.06
set rmargin at screen 0.47
set tmargin at screen 0.88
set bmargin at screen 0.13
set title "fastest (steps, topk, draft tokens) and its speedup"
set xlabel "concurrency (running requests)"
set ylabel "acceptance rate alpha"
set xrange [-0.5 : ncols - 0.5]
set yrange [-0.5 : nrows - 0.5]
set grid noxtics noytics
set cbrange [lo : hi]
set palette defined (lo "#B2182B", (lo + 1) / 2 "#EF8A62", 1 "#F7F7F7", (1 + hi) / 2 "#67A9CF", hi "#2166AC")
set cblabel "speedup of the best configuration (x)"
set colorbox vertical user origin screen 0.485, screen 0.13 size screen 0.012, screen 0.75
set key off
eval src_label
plot tab using 1:2:3 with image pixels, \
     tab using 1:2:4 with labels offset 0, 0.55 font ",9" tc rgb "#101010", \
     tab using 1:2:(sprintf("%.2fx", $3)) with labels offset 0, -0.55 font ",8" tc rgb "#404040"
unset label 99

set lmargin at screen 0.63
set rmargin at screen 0.98
set title "break-even acceptance (speedup = 1)"
set xlabel "concurrency (running requests, log scale)"
set ylabel "acceptance rate alpha at break-even (below a line: slower)"
set logscale x 2
set xrange [0.8 : *]
set xtics auto
set ytics auto
set yrange [0 : 1]
set ytics 0.1
set grid xtics ytics
set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 2
unset colorbox
plot be using 1:($7 == $7 && $8 == $8 ? $7 : NaN):8 with filledcurves fc rgb "#D9D9D9" \
        title "best: 80% interval of its break-even (speedup p90 .. p10)", \
     be using 1:2 with linespoints lw 3 pt 7 ps 1.1 lc rgb "#000000" title "best of all configurations", \
     be using 1:3 with linespoints lw 2 pt 5 dt 2 lc rgb c_verify title "steps 3, topk 1, 4 tokens (SGLang auto, MoE)", \
     be using 1:4 with linespoints lw 2 pt 9 dt 3 lc rgb c_draft title "steps 5, topk 4, 8 tokens (SGLang auto, Llama)", \
     be using 1:5 with linespoints lw 2 pt 13 dt 4 lc rgb c_accept title "steps 1, topk 1, 2 tokens", \
     be using 1:($2 != $2 ? $6 : NaN) with points pt 8 ps 2 lc rgb "#B2182B" \
        title (nobe ? "best: no break-even up to the top alpha" : "")
unset multiplot
