# ex_kimi_conc.gp: the worked example (docs/examples/kimi-k25-pcie.md, make example): Kimi
# K2.5 at TP=8 on 8 RTX PRO 6000 over PCIe, throughput against concurrency for the baseline
# and EAGLE-3 (accept lengths 3.24 and 2.88), NCCL tuned (solid) and default (dashed); the
# box's four measured single-stream numbers as points. Left: the model as traced; right:
# calibrated (every kernel x calf). Input: d1, d2 = conc base_t e3_t e2_t base_d e3_d e2_d.
w = 1350; h = 620
load "plots/common.gp"
set multiplot layout 1, 2 title "Kimi K2.5, TP=8, 8x RTX PRO 6000 on PCIe Gen5: baseline and EAGLE-3 against concurrency (simulated)" font ",14"
set logscale x 2
set xrange [0.8 : 80]
set xtics (1, 2, 4, 8, 16, 32, 64)
set xlabel "concurrency (requests)"
set ylabel "output tokens/s (all requests)"
set logscale y
set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 2.5 font ",9"
set bmargin 5
do for [i = 1 : 2] {
    f = (i == 1) ? d1 : d2
    set title (i == 1) ? "as traced (fit -> scale -> carry)" : sprintf("calibrated: every kernel x%s (single-stream baseline = %.1f)", calf, mb1)
    if (i == 2) { eval src_label }
    plot f using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb c_decode title "baseline, NCCL tuned", \
         f using 1:3 with linespoints lw 2 pt 5 ps 0.8 lc rgb c_verify title "EAGLE-3 steps 3 (accept 3.24), tuned", \
         f using 1:4 with linespoints lw 2 pt 9 ps 0.8 lc rgb c_draft title "EAGLE-3 steps 2 (accept 2.88), tuned", \
         f using 1:5 with lines lw 1.5 dt 2 lc rgb c_decode title "baseline, NCCL default", \
         f using 1:6 with lines lw 1.5 dt 2 lc rgb c_verify title "EAGLE-3 3.24, NCCL default", \
         f using 1:7 with lines lw 1.5 dt 2 lc rgb c_draft title "EAGLE-3 2.88, NCCL default", \
         '+' using (1):(mb1) every ::0::0 with points pt 4 ps 1.6 lw 2 lc rgb "#000000" title sprintf("measured baseline %.1f / %.1f", mb1, mb2), \
         '+' using (1):(mb2) every ::0::0 with points pt 4 ps 1.6 lw 2 lc rgb "#000000" notitle, \
         '+' using (1):(me1) every ::0::0 with points pt 8 ps 1.6 lw 2 lc rgb "#000000" title sprintf("measured EAGLE-3 %.1f / %.1f", me1, me2), \
         '+' using (1):(me2) every ::0::0 with points pt 8 ps 1.6 lw 2 lc rgb "#000000" notitle
    unset label 99
}
unset multiplot
