# fig4_cgraph.gp: CUDA-graph padding waste and eager fallback vs batch size.
# Input: cg = bs t_all_us t_sglang_us t_none_us host_none_us padded_to pct_sglang pct_none
# host_sglang_us; maxbs = the largest captured size of the SGLang list.
w = 1250; h = 820
load "plots/common.gp"
set multiplot title "CUDA graphs: padding to the next captured batch size, and eager fallback above the largest" font ",14"
set object 1 rect from maxbs + 0.5, graph 0 to graph 1, graph 1 fc rgb "#F0F0F0" fs solid 1.0 noborder behind
set xrange [0.5 : 80.5]
set xtics 8
set mxtics 2

set lmargin at screen 0.08
set rmargin at screen 0.97
set tmargin at screen 0.90
set bmargin at screen 0.42
set title "iteration time (speculative: steps 3, chain, alpha 0.7)"
set xlabel ""
set format x ""
set ylabel "time per iteration (ms)"
set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 2
set label 2 sprintf("batch > %d: no captured graph,\nthe SGLang list runs eagerly", maxbs) at maxbs + 1.5, graph 0.2 left font ",9" tc rgb "#606060"
plot cg using 1:($2 / 1000) with lines lw 2.5 lc rgb "#000000" title "every size 1..80 captured (no padding)", \
     cg using 1:($3 / 1000) with lines lw 2 lc rgb c_verify title sprintf("SGLang list capped at %d (padding, eager above)", maxbs), \
     cg using 1:(($6 > $1) ? $3 / 1000 : NaN) with points pt 6 ps 1.1 lw 1.5 lc rgb c_verify title "  batch padded to a larger captured size", \
     cg using 1:($4 / 1000) with lines lw 2 dt 2 lc rgb c_draft title "no CUDA graphs (all eager)", \
     cg using 1:($5 / 1000) with lines lw 2.5 dt 3 lc rgb "#7A6A2A" title "host time per iteration, all eager (overlaps the GPU)"
unset label 2

set title ""
set tmargin at screen 0.38
set bmargin at screen 0.09
set format x "%g"
set xlabel "batch size (running requests)"
set ylabel "extra time vs no padding (%)"
set key top left Left reverse opaque box lc rgb "#C0C0C0" samplen 2
eval src_label
plot cg using 1:7 with impulses lw 3 lc rgb c_verify title sprintf("SGLang list capped at %d", maxbs), \
     cg using 1:8 with lines lw 2 dt 2 lc rgb c_draft title "no CUDA graphs", \
     0 with lines lw 1 lc rgb "#404040" notitle
unset multiplot
