# fig2_heatmap.gp: speedup over acceptance x draft length as a heatmap, cells labelled, with
# the break-even contour (speedup = 1) from gnuplot's contouring of the same grid.
# Input: heat_lo, heat_hi = blocks per steps value: steps alpha speedup (alpha ascending);
# bs_lo, bs_hi. The colour scale is shared by both panels and white at exactly 1.
w = 1300; h = 640
load "plots/common.gp"
stats heat_lo using 3 nooutput
lo = STATS_min; hi = STATS_max; min_lo = STATS_min
stats heat_hi using 3 nooutput
min_hi = STATS_min
lo = (STATS_min < lo) ? STATS_min : lo
hi = (STATS_max > hi) ? STATS_max : hi
lo = (lo > 0.95) ? 0.95 : lo
hi = (hi < 1.05) ? 1.05 : hi
set cbrange [lo : hi]
set palette defined (lo "#B2182B", (lo + 1) / 2 "#EF8A62", 1 "#F7F7F7", (1 + hi) / 2 "#67A9CF", hi "#2166AC")
set cblabel "speedup vs no speculation (x)"

# contour lines speedup = 1 of each panel into data blocks
set contour base
set cntrparam levels discrete 1
set cntrparam linear
unset surface
set view map
set table $c_lo
splot heat_lo using 1:2:3 with lines
unset table
set table $c_hi
splot heat_hi using 1:2:3 with lines
unset table
unset contour
set surface
# points in a contour table (its comment and blank lines do not count)
n_lo = 0; do for [i = 1 : |$c_lo|] { l = $c_lo[i]; if (strlen(l) > 1 && l[1:1] ne "#") { n_lo = n_lo + 1 } }
n_hi = 0; do for [i = 1 : |$c_hi|] { l = $c_hi[i]; if (strlen(l) > 1 && l[1:1] ne "#") { n_hi = n_hi + 1 } }

set multiplot layout 1, 2 title "Speedup over acceptance rate and draft length (chain drafting), break-even contour" font ",14"
set xlabel "draft length (speculative steps)"
set ylabel "acceptance rate alpha (per draft position)"
set xrange [0.5 : 8.5]
set yrange [0.275 : 0.975]
set xtics 1
set ytics 0.1
set grid noxtics noytics
set key outside bottom center horizontal samplen 3
set bmargin 7
eval src_label
do for [p = 1 : 2] {
    f = (p == 1) ? heat_lo : heat_hi
    c = (p == 1) ? bs_lo : bs_hi
    n = (p == 1) ? n_lo : n_hi
    set title sprintf("concurrency %d", c)
    if (p == 1) { unset colorbox } else { set colorbox }
    # with no contour in range, a note instead (the key entry stays, to say what the line is)
    if (n == 0) {
        m = (p == 1) ? min_lo : min_hi
        set title sprintf("concurrency %d: %s", c, (m >= 1) ? "faster than no speculation everywhere (no break-even)" : "slower everywhere (no break-even)")
        plot f using 1:2:3 with image pixels notitle, \
             keyentry with lines lw 3 lc rgb "#000000" title "break-even: speedup = 1", \
             f using 1:2:(sprintf("%.2f", $3)) with labels font ",7" tc rgb "#202020" notitle
    } else {
        if (p == 1) {
            plot f using 1:2:3 with image pixels notitle, \
                 $c_lo using 1:2 with lines lw 3 lc rgb "#000000" title "break-even: speedup = 1", \
                 f using 1:2:(sprintf("%.2f", $3)) with labels font ",7" tc rgb "#202020" notitle
        } else {
            plot f using 1:2:3 with image pixels notitle, \
                 $c_hi using 1:2 with lines lw 3 lc rgb "#000000" title "break-even: speedup = 1", \
                 f using 1:2:(sprintf("%.2f", $3)) with labels font ",7" tc rgb "#202020" notitle
        }
    }
    unset label 99
}
unset multiplot
