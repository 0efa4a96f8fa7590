# common.gp: terminal, colours and the source footnote shared by every figure of
# `make report`. plots/report.sh runs each figure script twice, with
#   fmt = "pngcairo" | "png" | "svg",  out = output file,  src = "model ...; trace ..."
# and the figure's own data file names; w, h (pixels) may be set by the figure first.
if (!exists("w")) w = 1100
if (!exists("h")) h = 650
if (fmt eq "svg") {
    set terminal svg size w, h dynamic noenhanced font "Helvetica,13" background rgb "white"
} else {
    if (fmt eq "pngcairo") {
        set terminal pngcairo size w, h noenhanced font "Helvetica,11" background rgb "white"
    } else {
        set terminal png size w, h noenhanced font "Helvetica,11" background rgb "white"
    }
}
set output out
set encoding utf8

# One colour per iteration part, the same in every figure (colour-blind friendly palette).
c_draft  = "#4C72B0"
c_verify = "#DD8452"
c_accept = "#55A868"
c_extend = "#8172B3"
c_decode = "#C44E52"
c_sample = "#937860"
c_comm   = "#DA8BC3"
c_wait   = "#8C8C8C"
c_idle   = "#D9D9D9"
c_host   = "#CCB974"
c_launch = "#64B5CD"
c_other  = "#B0B0B0"

set grid back lc rgb "#E5E5E5" lw 1
set border 3 lc rgb "#404040"
set tics nomirror
set key noautotitle

# The source of the numbers, printed small at the bottom left of every figure so that a
# figure copied out of the report still says where it came from.
if (!exists("src")) src = ""
src_label = sprintf("set label 99 '%s' at screen 0.005, screen 0.012 left font ',8' tc rgb '#606060' front", src)
