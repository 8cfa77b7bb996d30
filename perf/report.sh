#!/usr/bin/env bash
# PNG plots (into DIR) of a benchmark's results, drawn with gnuplot from CSV files extracted here
# into DIR/plots/:
#   perf/bench_refit.sh output (refit-<gbps>-<contexts>-<apply>.csv): refit-time.png (delta vs full refit vs MPI_Bcast
#     per link) and refit-stages.png (seconds per stage of every delta refit);
#   perf/bench_codec.sh output (codec.json): codec-bytes.png (wire bytes vs the entropy bound and
#     the NeMo-style and PULSE-style encodings) and codec-speed.png (encode and apply GB/s beside
#     memcpy, and their share of it).
# Usage: perf/report.sh DIR   (needs gnuplot: apt-get install gnuplot-nox)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: perf/report.sh DIR (a results/refit-* or results/codec-* directory)}
[ -d "$dir" ] || { echo "perf/report.sh: '$dir' is not a directory" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "perf/report.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
compgen -G "$dir/refit-*.csv" >/dev/null || [ -f "$dir/codec.json" ] ||
  { echo "perf/report.sh: no refit-*.csv or codec.json in '$dir'" >&2; exit 1; }
mkdir -p "$dir/plots"

# refit-<gbps>-<contexts>-<apply>.csv -> plots/refit-time-<i>.csv (one per link and mode) and plots/refit-stages.csv; prints
# the link labels (quoted, fastest first) and the number of delta steps.
refit_csvs() {
  python3 - "$1" <<'PY'
import csv, glob, os, sys
d = sys.argv[1]
paths = glob.glob(os.path.join(d, "refit-*.csv"))
def link_of(path):  # refit-<gbps>-<contexts>-<apply>.csv (older runs: refit-<gbps>[-<contexts>].csv)
    parts = os.path.basename(path)[6:-4].split("-")
    contexts = parts[1] if len(parts) > 1 else "auto"
    return float(parts[0]), contexts + (", apply " + parts[2] if len(parts) > 2 else ""), path
links = sorted(link_of(p) for p in paths)
links = [l for l in links if l[0] == 0] + sorted((l for l in links if l[0] > 0), key=lambda l: (-l[0], l[1]))
labels, stages = [], []
for i, (gbps, contexts, path) in enumerate(links, 1):
    label = ("unlimited" if gbps == 0 else "%g Gbit/s" % gbps) + ", contexts " + contexts
    labels.append('"%s"' % label)
    rows = [r for r in csv.DictReader(open(path)) if r["kind"] == "delta"]
    with open(os.path.join(d, "plots", "refit-time-%d.csv" % i), "w") as out:
        out.write("# changed_percent,delta_s,full_s,bcast_s\n")
        for r in rows:
            out.write("%.3f,%s,%s,%s\n" % (100 * float(r["change_rate"]), r["seconds"], r["full_seconds"],
                                           r["bcast_seconds"]))
    for r in rows:
        stages.append(["%g%% | %s" % (round(100 * float(r["change_rate"]), 1), label.replace(",", ""))] +
                      [r[k] for k in ("encode_s", "send_s", "relay_s", "apply_s", "commit_s", "seconds")])
with open(os.path.join(d, "plots", "refit-stages.csv"), "w") as out:
    out.write("# case,encode_s,send_s,relay_s,apply_s,commit_s,seconds\n")
    for s in stages:
        out.write(",".join(s) + "\n")
print(" ".join(labels))
print(len(stages))
PY
}

# codec.json -> plots/codec-bytes.csv (MB per case) and plots/codec-speed.csv (GB/s per case).
codec_csv() {
  python3 - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
records = json.load(open(os.path.join(d, "codec.json")))["records"]
with open(os.path.join(d, "plots", "codec-bytes.csv"), "w") as out:
    out.write("# case,dcr_mb,entropy_bound_mb,nemo_style_mb,pulse_style_mb\n")
    for r in records:
        out.write("%s (%.2f%%),%.6f,%.6f,%.6f,%.6f\n" % (
            r["case"].split(" ")[0], 100 * r["change_rate"], r["wire_bytes"] / 1e6, r["entropy_bound_bytes"] / 1e6,
            r["nemo_style_bytes"] / 1e6, r["pulse_style_bytes"] / 1e6))
def spread(r, key, fast, slow):  # results from before per-repetition ratios plot the ratio of the medians
    s = r.get(key) or {"median": r[fast] / r[slow], "min": r[fast] / r[slow], "max": r[fast] / r[slow]}
    return s["median"], s["min"], s["max"]
nan = float("nan")
with open(os.path.join(d, "plots", "codec-speed.csv"), "w") as out:
    out.write("# case,encode_gbps,apply_gbps,memcpy_gbps,hash_gbps,threaded_encode_gbps,threaded_memcpy_gbps,"
              "encode_to_memcpy median,min,max,apply_to_memcpy median,min,max,threaded_encode_to_memcpy median,min,max\n")
    for r in records:  # results from before hash_gbps or threads were measured plot without those bars
        threaded = r.get("threaded_encode_to_memcpy")
        row = [r["encode_gbps"], r["apply_gbps"], r["memcpy_gbps"], r.get("hash_gbps", nan),
               r.get("threaded_encode_gbps", nan), r.get("threaded_memcpy_gbps", nan)]
        row += spread(r, "encode_to_memcpy", "encode_gbps", "memcpy_gbps")
        row += spread(r, "apply_to_memcpy", "apply_gbps", "memcpy_gbps")
        row += (threaded["median"], threaded["min"], threaded["max"]) if threaded else (nan, nan, nan)
        out.write("%s (%.2f%%),%s\n" % (r["case"].split(" ")[0], 100 * r["change_rate"],
                                         ",".join("%.4f" % v for v in row)))
threads = max((r.get("encode_threads", 1) for r in records), default=1)
with open(os.path.join(d, "plots", "codec-threads.txt"), "w") as out:
    out.write("%d\n" % threads)
print(len(records))
PY
}

if compgen -G "$dir/refit-*.csv" >/dev/null; then
  { read -r links; read -r steps; } < <(refit_csvs "$dir")
  gnuplot -e "dir='$dir/plots'; links='$links'; out='$dir/refit-time.png'" "$here/plot_refit_time.gp"
  gnuplot -e "data='$dir/plots/refit-stages.csv'; bars=$steps; out='$dir/refit-stages.png'" "$here/plot_refit_stages.gp"
  echo "$dir/refit-time.png $dir/refit-stages.png"
fi
if [ -f "$dir/codec.json" ]; then
  cases=$(codec_csv "$dir")
  gnuplot -e "data='$dir/plots/codec-bytes.csv'; bars=$cases; out='$dir/codec-bytes.png'" "$here/plot_codec_bytes.gp"
  threads=$(cat "$dir/plots/codec-threads.txt")
  gnuplot -e "data='$dir/plots/codec-speed.csv'; bars=$cases; threads=$threads; out='$dir/codec-speed.png'" \
    "$here/plot_codec_speed.gp"
  echo "$dir/codec-bytes.png $dir/codec-speed.png"
fi
