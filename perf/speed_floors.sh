#!/usr/bin/env bash
# The codec's CPU speed floors (README, "Speed floors"): RUNS runs (default 3) of perf/bench_codec.sh's
# `dcr bench codec` on one thread at 1, 3 and 5% changed, contexts off and on in turn within each
# run, then per case the median and range over the runs of each run's median per-repetition ratio to memcpy,
# beside its floor (off: encode 0.6x, apply 0.7x; on: 0.5x both; 5%: no floor).
# Usage: perf/speed_floors.sh [extra `dcr bench codec` options]   (env: RUNS)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/dcr ] || scripts/build.sh
out=results/floors-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
for run in $(seq "${RUNS:-3}"); do
  for contexts in false true; do
    echo "== run $run, --contexts $contexts"
    build/dcr bench codec --config configs/bench_codec.ini --rates 1,3,5 --dense false --uniform false --encode-threads 1 --contexts "$contexts" \
      --json "$out/codec-$run-$contexts.json" "$@" >"$out/codec-$run-$contexts.txt"
  done
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
floors = {("false", 1): (0.6, 0.7), ("false", 3): (0.6, 0.7), ("true", 1): (0.5, 0.5), ("true", 3): (0.5, 0.5)}
runs = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "codec-*.json"))):
    contexts = os.path.basename(path)[:-5].rsplit("-", 1)[1]
    for r in json.load(open(path))["records"]:
        key = (contexts, round(100 * r["change_rate"]))
        runs.setdefault(key, []).append((r["encode_to_memcpy"]["median"], r["apply_to_memcpy"]["median"], r["bitexact"]))
def cell(values, floor):
    m = statistics.median(values)
    verdict = "" if floor is None else (" >= %.1f ok" % floor if m >= floor else " < %.1f MISSED" % floor)
    return "%.2f [%.2f-%.2f]%s" % (m, min(values), max(values), verdict)
print("%-9s %-8s %-30s %-30s %s" % ("contexts", "changed", "enc/cpy median [range]", "app/cpy median [range]", "bit-exact"))
for key in sorted(runs):
    rows, floor = runs[key], floors.get(key, (None, None))
    print("%-9s %6d%%  %-30s %-30s %s" % (key[0], key[1], cell([r[0] for r in rows], floor[0]),
                                           cell([r[1] for r in rows], floor[1]), all(r[2] for r in rows)))
PY
echo "results in $out"
