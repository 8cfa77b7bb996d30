# Wire bytes of dcr's frames vs the entropy bound and the NeMo RL #2444-style and PULSE-style
# encodings of the same deltas, per change case (perf/bench_codec.sh): MB, and relative to the bound.
# Set by perf/report.sh: data (codec-bytes.csv), bars (cases in it), out (PNG).
set terminal pngcairo size (bars * 110 + 300 > 1300 ? bars * 110 + 300 : 1300), 620 font ",11" noenhanced
set output out
set datafile separator ","
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#404040"
set xtics rotate by -30 nomirror
set grid ytics
set key below horizontal maxrows 2
set multiplot layout 1, 2 title "dcr codec: bytes on the wire per change case" font ",13"
set title "wire bytes (log scale)"
set xlabel "change case (changed elements)"
set ylabel "MB on the wire"
set logscale y
set format y "%g"
plot data using 2:xtic(1) lc rgb "#1f77b4" title "dcr frames", \
     "" using 3 lc rgb "#bbbbbb" title "entropy bound", \
     "" using 4 lc rgb "#ff7f0e" title "NeMo-style (u16/u32 gaps + XOR, zstd-1)", \
     "" using 5 lc rgb "#2ca02c" title "PULSE-style (delta indices + values, zstd-3)"
set title "bytes relative to the entropy bound"
set ylabel "bytes / entropy bound"
unset logscale y
set yrange [0:*]
plot data using ($2 / $3):xtic(1) lc rgb "#1f77b4" title "dcr frames", \
     "" using ($4 / $3) lc rgb "#ff7f0e" title "NeMo-style", \
     "" using ($5 / $3) lc rgb "#2ca02c" title "PULSE-style", \
     1 with lines dt 2 lw 2 lc rgb "black" title "entropy bound"
unset multiplot
