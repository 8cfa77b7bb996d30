# Encode and apply speed of dcr's codec per change case (perf/bench_codec.sh): GB/s of model bytes
# beside memcpy of the same model and XXH3 of each frame's base and target bits (what every delta
# encode must read and hash) in the same run; and each repetition's encode and apply speed over the
# memcpy timed just before it, median with its min-max range, with the issue's targets drawn in.
# With encode threads (threads > 1) the encode on that many threads is drawn too.
# Set by perf/report.sh: data (codec-speed.csv), bars (cases in it), threads, out (PNG).
set terminal pngcairo size (bars * 130 + 300 > 1400 ? bars * 130 + 300 : 1400), 640 font ",11" noenhanced
set output out
set datafile separator ","
set datafile missing "nan"
set style data histograms
set style fill solid 0.85 border rgb "#404040"
set xtics rotate by -30 nomirror
set grid ytics
set key below horizontal
set yrange [0:*]
enc_n = sprintf("encode, %d threads", threads)
set multiplot layout 1, 2 title "dcr codec: encode and apply speed per change case" font ",13"
set style histogram clustered gap 1
set title "GB/s of model bytes (median of the repetitions)"
set xlabel "change case (changed elements)"
set ylabel "GB/s"
if (threads > 1) {
  plot data using 2:xtic(1) lc rgb "#1f77b4" title "encode", \
       "" using 3 lc rgb "#ff7f0e" title "apply", \
       "" using 6 lc rgb "#2ca02c" title enc_n, \
       "" using 4 lc rgb "#bbbbbb" title "memcpy", \
       "" using 7 lc rgb "#dddddd" title sprintf("memcpy, %d threads", threads), \
       "" using 5 lc rgb "#7f7f7f" title "XXH3 of base + target"
} else {
  plot data using 2:xtic(1) lc rgb "#1f77b4" title "encode", \
       "" using 3 lc rgb "#ff7f0e" title "apply", \
       "" using 4 lc rgb "#bbbbbb" title "memcpy", \
       "" using 5 lc rgb "#7f7f7f" title "XXH3 of base + target"
}
set style histogram errorbars gap 1 lw 1
set title "speed / one thread's memcpy beside it (median, min-max)"
set ylabel "ratio"
if (threads > 1) {
  plot data using 8:9:10:xtic(1) lc rgb "#1f77b4" title "encode", \
       "" using 11:12:13 lc rgb "#ff7f0e" title "apply", \
       "" using 14:15:16 lc rgb "#2ca02c" title enc_n, \
       0.6 with lines dt 2 lw 2 lc rgb "#1f77b4" title "0.6x", \
       0.7 with lines dt 2 lw 2 lc rgb "#ff7f0e" title "0.7x", \
       0.8 with lines dt 2 lw 2 lc rgb "#2ca02c" title "0.8x"
} else {
  plot data using 8:9:10:xtic(1) lc rgb "#1f77b4" title "encode", \
       "" using 11:12:13 lc rgb "#ff7f0e" title "apply", \
       0.6 with lines dt 2 lw 2 lc rgb "#1f77b4" title "0.6x", \
       0.7 with lines dt 2 lw 2 lc rgb "#ff7f0e" title "0.7x"
}
unset multiplot
