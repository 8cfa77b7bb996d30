# Peak anonymous memory per role against what it holds (perf/bench_memory.sh): one group of bars
# per case. Set by perf/bench_memory.sh: data (memory.dat: case, trainer shard, trainer peak,
# rollout serving, rollout peak, relay peak; MB), out (PNG).
set terminal pngcairo size 1100, 560 font ",11" noenhanced
set output out
set title "dcr refit: peak anonymous memory per role (largest rank) against the bytes it holds" font ",13"
set ylabel "MB"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#404040"
set xtics rotate by -20 nomirror
set grid ytics
set key below horizontal
plot data using 2:xtic(1) lc rgb "#aec7e8" title "trainer shard", \
     "" using 3 lc rgb "#1f77b4" title "trainer peak anon", \
     "" using 4 lc rgb "#ffbb78" title "rollout serving buffers", \
     "" using 5 lc rgb "#ff7f0e" title "rollout peak anon", \
     "" using 6 lc rgb "#2ca02c" title "relay peak anon"
