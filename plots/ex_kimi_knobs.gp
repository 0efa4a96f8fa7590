# ex_kimi_knobs.gp: the worked example's knobs (docs/examples/kimi-k25-pcie.md): EAGLE-3
# (steps 3, accept 3.24) and the baseline against concurrency with NCCL, one-shot and
# SGLang's custom all-reduce; with every phase in CUDA graphs, the draft phases eager, verify
# eager, nothing captured; with attention x1, x2, x4; and the break-even acceptance. Left:
# as traced; right: calibrated (every kernel x calf). Input: dir (make example's folder).
w = 1350; h = 1700
load "plots/common.gp"
set multiplot layout 4, 2 title "Kimi K2.5, TP=8, 8x RTX PRO 6000, PCIe Gen5: what the knobs do (simulated)" font ",14"
set logscale x 2
set xrange [0.8 : 80]
set xtics (1, 2, 4, 8, 16, 32, 64)
set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 2.5 font ",9"
mm = "nominal cal"
what(i) = (i == 1) ? "as traced" : "calibrated x".calf
ac = c_decode." ".c_draft." ".c_accept
do for [i = 1 : 2] {
    m = word(mm, i)
    set logscale y
    set ylabel "output tokens/s"
    set title "all-reduce (".what(i)."): EAGLE-3 solid, baseline dashed"
    f = dir."/ar-".m.".dat"
    plot for [a = 1 : 3] f using (stringcolumn(2) eq word("nccl oneshot custom", a) ? $1 : NaN):3 with linespoints lw 2 pt 7 ps 0.7 lc rgb word(ac, a) title word("NCCL one-shot SGLang-custom(not-on-PCIe>2)", a), \
         for [a = 1 : 3] f using (stringcolumn(2) eq word("nccl oneshot custom", a) ? $1 : NaN):4 with lines lw 1.5 dt 2 lc rgb word(ac, a) notitle
}
gc = c_verify." ".c_draft." ".c_extend." ".c_wait
gn = "all-captured draft+extend-eager verify-eager nothing-captured"
do for [i = 1 : 2] {
    m = word(mm, i)
    set title "CUDA graphs (".what(i)."): EAGLE-3 solid, baseline dashed"
    f = dir."/graphs-".m.".dat"
    plot for [g = 1 : 4] f using (stringcolumn(1) eq word("graphs draft verify none", g) ? $2 : NaN):3 with linespoints lw 2 pt 7 ps 0.7 lc rgb word(gc, g) title word(gn, g), \
         f using (stringcolumn(1) eq "graphs" ? $2 : NaN):4 with lines lw 1.5 dt 2 lc rgb c_decode title "baseline, captured", \
         f using (stringcolumn(1) eq "none" ? $2 : NaN):4 with lines lw 1.5 dt 2 lc rgb c_wait title "baseline, nothing captured"
}
tc = c_verify." ".c_comm." ".c_sample
do for [i = 1 : 2] {
    m = word(mm, i)
    set title "attention backend (".what(i)."): EAGLE-3 solid, baseline dashed"
    f = dir."/attn-".m.".dat"
    plot for [a = 1 : 3] f using ($1 == 2 ** (a - 1) ? $2 : NaN):3 with linespoints lw 2 pt 7 ps 0.7 lc rgb word(tc, a) title sprintf("attention x%d", 2 ** (a - 1)), \
         for [a = 1 : 3] f using ($1 == 2 ** (a - 1) ? $2 : NaN):4 with lines lw 1.5 dt 2 lc rgb word(tc, a) notitle
}
unset logscale y
set yrange [1 : 4]
set ylabel "accept length at break-even (tokens)"
set xlabel "concurrency (requests)"
set bmargin 5
do for [i = 1 : 2] {
    m = word(mm, i)
    if (i == 2) { eval src_label }
    set title "break-even acceptance, EAGLE-3 steps 3 (".what(i).")"
    f = dir."/breakeven-".m.".dat"
    plot f using 1:($3 > 0 ? $3 : NaN) with linespoints lw 2 pt 7 lc rgb c_verify title "EAGLE-3 pays above this accept length", \
         3.24 with lines dt 2 lw 1.5 lc rgb "#000000" title "Kimi K2.5 EAGLE-3: 3.24 (4 draft tokens)", \
         2.88 with lines dt 3 lw 1.5 lc rgb "#606060" title "2.88 (3 draft tokens)"
    unset label 99
}
unset multiplot
