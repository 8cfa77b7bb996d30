# Seconds per stage of every delta refit (slowest rank per stage), stacked, with the measured refit
# time: the stages stream concurrently, so the stack can exceed it (perf/bench_refit.sh).
# Set by perf/report.sh: data (refit-stages.csv), bars (rows in it), out (PNG).
set terminal pngcairo size (bars * 90 + 360 > 1000 ? bars * 90 + 360 : 1000), 560 font ",11" noenhanced
set output out
set datafile separator ","
set title "dcr delta refit: seconds per stage (slowest rank of each) vs the measured refit time" font ",13"
set xlabel "change rate | trainer -> relay link"
set ylabel "seconds"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb "#404040"
set boxwidth 0.7
set xtics rotate by -30 nomirror
set grid ytics
set key outside right top
set yrange [0:*]
plot data using 2:xtic(1) lc rgb "#1f77b4" title "encode", \
     "" using 3 lc rgb "#ff7f0e" title "send (window / link)", \
     "" using 4 lc rgb "#2ca02c" title "relay forward", \
     "" using 5 lc rgb "#9467bd" title "apply", \
     "" using 6 lc rgb "#8c564b" title "commit", \
     "" using 0:7 with points pt 7 ps 1.6 lc rgb "black" title "measured refit time"
