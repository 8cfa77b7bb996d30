# Encode and apply speed of dcr's codec per change case (perf/bench_codec.sh), one thread: GB/s of
# model bytes beside memcpy of the same model and XXH3 of each frame's base and target bits (what
# every delta encode must read and hash) in the same run, and as a share of that memcpy.
# Set by perf/report.sh: data (codec-speed.csv), bars (cases in it), out (PNG).
set terminal pngcairo size (bars * 110 + 300 > 1300 ? bars * 110 + 300 : 1300), 620 font ",11" noenhanced
set output out
set datafile separator ","
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#404040"
set xtics rotate by -30 nomirror
set grid ytics
set key below horizontal
set yrange [0:*]
set multiplot layout 1, 2 title "dcr codec: encode and apply speed per change case (one thread)" font ",13"
set title "GB/s of model bytes"
set xlabel "change case (changed elements)"
set ylabel "GB/s"
plot data using 2:xtic(1) lc rgb "#1f77b4" title "encode", \
     "" using 3 lc rgb "#ff7f0e" title "apply", \
     "" using 4 lc rgb "#bbbbbb" title "memcpy", \
     "" using 5 lc rgb "#7f7f7f" title "XXH3 of base + target"
set title "share of memcpy bandwidth"
set ylabel "GB/s / memcpy GB/s"
plot data using ($2 / $4):xtic(1) lc rgb "#1f77b4" title "encode", \
     "" using ($3 / $4) lc rgb "#ff7f0e" title "apply", \
     0.5 with lines dt 2 lw 2 lc rgb "black" title "0.5x memcpy"
unset multiplot
