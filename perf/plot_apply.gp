# --apply stream against --apply staged, per configuration (perf/apply_summary.py): the refit's
# time and the time serving stops (pause), per mode; medians over the delta versions, log scale.
# Set by perf/apply_summary.py: data (apply.csv), bars (rows in it), out (PNG).
set terminal pngcairo size (bars * 150 + 360 > 1000 ? bars * 150 + 360 : 1000), 560 font ",11" noenhanced
set output out
set datafile separator ","
set title "dcr refit: refit time and serving pause, --apply stream vs --apply staged (delta versions, medians)" font ",13"
set xlabel "link, model, changed"
set ylabel "seconds (log scale)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#404040"
set xtics rotate by -20 nomirror
set grid ytics
set key below horizontal maxrows 2
set logscale y
set format y "%g"
plot data using 2:xtic(1) lc rgb "#1f77b4" title "stream: refit (= serving pause)", \
     "" using 4 lc rgb "#aec7e8" title "stream: apply + commit stages", \
     "" using 5 lc rgb "#ff7f0e" title "staged: refit (staging + pause)", \
     "" using 6 lc rgb "#d62728" title "staged: serving pause"
