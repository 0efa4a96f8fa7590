# fig5_interconnect.gp: TP=8 throughput and speedup per interconnect preset and all-reduce
# algorithm, at low and high concurrency. Bars are placed by x (plots/report.sh: link index
# * 4 + algorithm index), the baseline drawn as a black dash over each bar.
# Input: ic = conc link algo x tok_s base_tok_s speedup comm_us ...; bs_lo, bs_hi; xt = xtics.
w = 1350; h = 860
load "plots/common.gp"
acol = c_decode." ".c_draft." ".c_accept
anames = "NCCL one-shot SGLang-custom"
set multiplot layout 2, 2 title "Interconnect at TP=8: PCIe Gen5 vs NVLink, NCCL vs one-shot all-reduce (same model)" font ",14"
set style fill solid 0.9 border lc rgb "#303030"
set boxwidth 0.8
eval "set xtics (".xt.")"
set xtics scale 0
set xrange [-0.7 : *]
set yrange [0 : *]
set grid noxtics ytics
set bmargin 3.5
do for [r = 1 : 2] {
    c = (r == 1) ? bs_lo : bs_hi
    if (r == 2) { eval src_label; set bmargin 5 }
    set title sprintf("throughput, concurrency %d", c)
    set ylabel "output tokens/s"
    set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 1.5 maxrows 2
    set offsets 0, 0, graph 0.28, 0
    plot for [a = 1 : 3] ic using ((stringcolumn(3) eq word("nccl oneshot custom", a) && $1 == c) ? $4 : NaN):5 \
             with boxes lc rgb word(acol, a) title "speculative, ".word(anames, a), \
         ic using (($1 == c) ? $4 : NaN):6:(0.42) with xerrorbars pt -1 lw 3 lc rgb "#000000" title "baseline (no speculation)"
    unset label 99
    set offsets 0, 0, graph 0.2, 0
    set title sprintf("speedup, concurrency %d", c)
    set ylabel "speedup vs no speculation (x)"
    set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 1.5 maxrows 2
    plot for [a = 1 : 3] ic using ((stringcolumn(3) eq word("nccl oneshot custom", a) && $1 == c) ? $4 : NaN):7 \
             with boxes lc rgb word(acol, a) title word(anames, a), \
         ic using (($1 == c) ? $4 : NaN):7:(sprintf("%.2f", $7)) with labels offset 0, 0.7 font ",9" notitle, \
         1 with lines dt 2 lw 1.5 lc rgb "#000000" title "break-even (1.0)"
}
unset multiplot
