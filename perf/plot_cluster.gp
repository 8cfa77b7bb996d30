# perf/bench_cluster.sh: refit time over the link's limit (bytes / WAN rate) per WAN rate, delta
# and full refit; and delta refit time as rollout nodes grow. Set by the script: dir, out (PNG),
# scaling (0: no rollout-node runs, the right panel is left out; default 1).
set terminal pngcairo size 1200, 560 font ",11" noenhanced
set output out
set datafile separator ","
if (!exists("scaling")) scaling = 1
set multiplot layout 1, (scaling ? 2 : 1) title "dcr refit on a tbf-shaped WAN between network-namespace nodes" font ",13"
set grid
set key below horizontal maxrows 3
set title "time / link limit (1.0 = the WAN saturated throughout)"
set xlabel "changed elements (%)"
set ylabel "measured time / (bytes / WAN rate)"
set logscale y
set format y "%g"
f = sprintf("%s/limit.csv", dir)
# Column 7 is the run's --apply mode (older results have none: streamed). Full refits are the
# streamed runs' (--compare-full streams into a second copy in both modes).
st(c) = strcol(7) ne "staged" ? column(c) : 1/0
sg(c) = strcol(7) eq "staged" ? column(c) : 1/0
plot f using 2:(column(1) == 0.1 ? st(3) : 1/0) with points pt 7 ps 1.3 lc rgb "#9467bd" title "delta, 0.1 Gb/s", \
     f using 2:(column(1) == 0.5 ? st(3) : 1/0) with points pt 7 ps 1.3 lc rgb "#1f77b4" title "delta, 0.5 Gb/s", \
     f using 2:(column(1) == 1 ? st(3) : 1/0) with points pt 7 ps 1.3 lc rgb "#2ca02c" title "delta, 1 Gb/s", \
     f using 2:(column(1) == 5 ? st(3) : 1/0) with points pt 7 ps 1.3 lc rgb "#d62728" title "delta, 5 Gb/s", \
     f using 2:(column(1) == 0.1 ? sg(3) : 1/0) with points pt 6 ps 1.3 lc rgb "#9467bd" title "staged delta, 0.1 Gb/s", \
     f using 2:(column(1) == 0.5 ? sg(3) : 1/0) with points pt 6 ps 1.3 lc rgb "#1f77b4" title "staged delta, 0.5 Gb/s", \
     f using 2:(column(1) == 1 ? sg(3) : 1/0) with points pt 6 ps 1.3 lc rgb "#2ca02c" title "staged delta, 1 Gb/s", \
     f using 2:(column(1) == 5 ? sg(3) : 1/0) with points pt 6 ps 1.3 lc rgb "#d62728" title "staged delta, 5 Gb/s", \
     f using 2:(column(1) == 0.1 ? st(4) : 1/0) with points pt 5 ps 1.1 lc rgb "#9467bd" title "full, 0.1 Gb/s", \
     f using 2:(column(1) == 0.5 ? st(4) : 1/0) with points pt 5 ps 1.1 lc rgb "#1f77b4" title "full, 0.5 Gb/s", \
     f using 2:(column(1) == 1 ? st(4) : 1/0) with points pt 5 ps 1.1 lc rgb "#2ca02c" title "full, 1 Gb/s", \
     f using 2:(column(1) == 5 ? st(4) : 1/0) with points pt 5 ps 1.1 lc rgb "#d62728" title "full, 5 Gb/s", \
     1.2 with lines dt 2 lc rgb "#7f7f7f" title "1.2x (delta goal)"
if (!scaling) { unset multiplot; exit }
unset logscale y
set title "delta refit (v1-v3) as rollout nodes grow"
set xlabel "rollout nodes (one relay each, fanout 2)"
set ylabel "seconds"
set logscale x 2
set xrange [1.6:10]
set xtics (2, 4, 8)
set key inside top left
set yrange [0:*]
g = sprintf("%s/scaling.csv", dir)
# Column 5 is the --apply mode (older results: none, streamed).
s5(c) = strcol(5) ne "staged" ? column(c) : 1/0
g5(c) = strcol(5) eq "staged" ? column(c) : 1/0
plot g using 1:(s5(3)) with linespoints lw 2 pt 7 ps 1.3 lc rgb "#1f77b4" title "measured", \
     g using 1:(g5(3)) with linespoints lw 2 pt 6 ps 1.3 lc rgb "#ff7f0e" title "measured, --apply staged", \
     g using 1:(s5(4)) with linespoints lw 2 pt 5 ps 1.1 dt 2 lc rgb "#7f7f7f" title "link limit (wire bytes / rate)", \
     g using 1:(s5(3)):(sprintf("depth %d", column(2))) with labels offset 0, 1.2 notitle
unset multiplot
