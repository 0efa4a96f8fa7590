# timeline.gp: one iteration as boxes on tracks (ranks x host/GPU, or trace streams).
# Input (plots/simtl.awk, plots/tracetl.awk): boxes = "y x0_us x1_us category label",
# tracks = "y name", cats = the category indices present, ttl, unit ("us" or "ms").
if (!exists("h")) h = 120 + 34 * ntracks
if (h < 330) h = 330
load "plots/common.gp"
div = (unit eq "ms") ? 1000.0 : 1.0
names  = "draft verify accept extend decode sample all-reduce host-waits(sync) host-gap launch other/previous-iteration"
colors = c_draft." ".c_verify." ".c_accept." ".c_extend." ".c_decode." ".c_sample." ".c_comm." ".c_wait." ".c_host." ".c_launch." ".c_other
set title ttl
set xlabel sprintf("time from the start of the iteration (%s)", unit)
set ylabel "track"
set yrange [-0.6 : ntracks - 0.4]
set xrange [0 : *]
set autoscale xfixmax
set grid xtics noytics
set key outside right top vertical Left reverse samplen 1.5 spacing 1.1 title "part"
set tmargin 3.5
set bmargin 4
eval src_label
plot for [k in cats] boxes using (($4 == k + 0) ? ($2 + $3) / 2 / div : NaN):1:(($3 - $2) / 2 / div):(0.36) \
         with boxxyerror fs solid 1.0 border lc rgb "#303030" lw 0.4 lc rgb word(colors, k + 0) title word(names, k + 0), \
     boxes using (($2 + $3) / 2 / div):1:5 with labels font ",9" tc rgb "#FFFFFF" notitle, \
     tracks using (NaN):1:ytic(2) notitle
