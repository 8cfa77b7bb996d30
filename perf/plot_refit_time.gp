# Refit time vs change rate, one panel per emulated trainer -> relay link: delta refit, full refit
# and MPI_Bcast of the model, measured in the same job (perf/bench_refit.sh).
# Set by perf/report.sh: dir (folder of refit-time-<i>.csv), links (quoted labels), out (PNG).
n = words(links)
cols = n < 3 ? n : 3
rows = (n + cols - 1) / cols
set terminal pngcairo size 520 * cols, 440 * rows + 40 font ",11" noenhanced
set output out
set datafile separator ","
set multiplot layout rows, cols title "dcr refit time vs change rate: delta refit vs full refit vs MPI_Bcast" font ",13"
set xlabel "changed elements (%)"
set ylabel "seconds per refit (log scale)"
set logscale y
set format y "%g"
set grid
set xtics 1
set key below horizontal
set offsets 0.3, 0.3, 0, 0
do for [i = 1:n] {
  set title sprintf("trainer -> relay link: %s", word(links, i))
  f = sprintf("%s/refit-time-%d.csv", dir, i)
  plot f using 1:2 with linespoints lw 2 pt 7 ps 1.3 lc rgb "#1f77b4" title "delta refit", \
       f using 1:3 with linespoints lw 2 pt 5 ps 1.3 dt 2 lc rgb "#d62728" title "full refit", \
       f using 1:4 with linespoints lw 2 pt 9 ps 1.3 dt 3 lc rgb "#7f7f7f" title "MPI_Bcast (in-node, no link limit)"
}
unset multiplot
