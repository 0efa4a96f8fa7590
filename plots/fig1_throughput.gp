# fig1_throughput.gp: throughput vs draft length, one curve per acceptance rate, the
# no-speculation baseline as a dashed line; two panels (low and high concurrency).
# Input (plots/report.sh): thr_lo, thr_hi = one block per alpha: steps tok_s speedup accept_len;
# base_lo, base_hi = baseline tok/s; bs_lo, bs_hi; alphas = the alphas of the blocks, in order.
w = 1250; h = 580
load "plots/common.gp"
acol = "#440154 #3B528B #21918C #37B24D #E08E0B"
set multiplot title "Throughput vs draft length (chain drafting: topk 1, draft tokens = steps + 1)" font ",14"
set xlabel "draft length (speculative steps)"
set ylabel "throughput (output tokens/s, all requests)"
set xrange [0.6 : 8.4]
set xtics 1
set yrange [0 : *]
set tmargin at screen 0.79
set bmargin at screen 0.11
eval src_label
do for [p = 1 : 2] {
    f = (p == 1) ? thr_lo : thr_hi
    b = (p == 1) ? base_lo : base_hi
    c = (p == 1) ? bs_lo : bs_hi
    set key off
    if (p == 1) { set lmargin at screen 0.07; set rmargin at screen 0.48 }
    else { set lmargin at screen 0.57; set rmargin at screen 0.98 }
    set title sprintf("concurrency %d (running requests); no speculation: %.0f tok/s", c, b)
    plot for [i = 1 : words(alphas)] f index (i - 1) using 1:2 with linespoints lw 2 pt 7 ps 0.9 \
             lc rgb word(acol, i) title sprintf("alpha %s", word(alphas, i)), \
         b with lines dt 2 lw 2.5 lc rgb "#000000" title "no speculation (baseline)"
    unset label 99
}
# one legend for both panels, in a strip of its own under the title
unset title; unset xlabel; unset ylabel; unset border; unset tics; unset grid
set lmargin at screen 0.03; set rmargin at screen 0.97
set tmargin at screen 0.945; set bmargin at screen 0.865
set key center center horizontal Left reverse samplen 2 maxrows 1 width 2
set xrange [0 : 1]; set yrange [0 : 1]
set samples 2
plot for [i = 1 : words(alphas)] -1 with linespoints lw 2 pt 7 ps 0.9 lc rgb word(acol, i) \
         title sprintf("acceptance alpha %s", word(alphas, i)), \
     -1 with lines dt 2 lw 2.5 lc rgb "#000000" title "no speculation (baseline)"
unset multiplot
