# fig6_breakdown.gp: where one iteration's time goes, as stacked bars (GPU parts add up to
# the iteration time) with the host's time (which overlaps the GPU) as a hatched bar beside.
# Input: bd1, bd2 = x config draft verify accept extend decode sample comm wait idle host
# accept_len tok_s iter (us); ranks1 = the model's ranks; bs = concurrency.
w = 1400; h = 700
load "plots/common.gp"
pcol  = c_draft." ".c_verify." ".c_accept." ".c_extend." ".c_decode." ".c_sample." ".c_comm." ".c_wait." ".c_idle
pname = "draft verify accept extend decode sample all-reduce wait-for-slowest-rank GPU-idle"
set multiplot title sprintf("Iteration breakdown: baseline and draft lengths 1..6 (concurrency %d, alpha 0.7)", bs) font ",14"
set style fill solid 0.95 border lc rgb "#303030"
set xrange [-0.6 : 6.8]
set yrange [0 : *]
set offsets 0, 0, graph 0.12, 0
set ylabel "time per iteration (ms)"
set xlabel "configuration"
set grid noxtics ytics
set xtics scale 0
set tmargin at screen 0.88
set bmargin at screen 0.12
eval src_label
do for [p = 1 : 2] {
    f = (p == 1) ? bd1 : bd2
    if (p == 1) {
        set title sprintf("the model as given (%d rank%s)", ranks1, ranks1 > 1 ? "s" : "")
        set lmargin at screen 0.05
        set rmargin at screen 0.40
        set key off
    } else {
        set title "TP=8 what-if on PCIe Gen5, NCCL all-reduce (rank 0)"
        set lmargin at screen 0.46
        set rmargin at screen 0.81
        set key at screen 0.825, screen 0.86 left top Left reverse samplen 1.5 spacing 1.2 title "GPU parts (stacked)" 
    }
    plot for [i = 9 : 1 : -1] f using 1:((sum [j = 3 : 2 + i] column(j)) / 1000):(0.62):xtic($1 == 0 ? "baseline" : sprintf("steps %d", $1)) \
             with boxes lc rgb word(pcol, i) title word(pname, i), \
         f using ($1 + 0.42):($12 / 1000):(0.16) with boxes fs pattern 4 border lc rgb "#7A6A2A" lc rgb "#7A6A2A" \
             title "host time (overlaps GPU)", \
         f using 1:((($12 > $15) ? $12 : $15) / 1000):(sprintf("%.2f tok/req\n%.0f tok/s", $13, $14)) \
             with labels offset 0, 1.4 font ",9" notitle
    unset label 99
}
unset multiplot
