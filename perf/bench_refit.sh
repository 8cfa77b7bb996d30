#!/usr/bin/env bash
# Delta refit vs full refit vs MPI_Bcast, measured in the same job, at 1, 3 and 5% change, for
# several emulated trainer -> first-relay links (a token bucket per trainer; 0 = no limit), each
# with every --contexts mode in CONTEXTS and every --apply mode in APPLY (default "stream staged"),
# one after the other in the same sitting.
# Writes results/refit-<timestamp>/{refit-<gbps>-<contexts>-<apply>.json,.csv,.txt}, prints a
# summary, and the apply modes side by side (perf/apply_summary.py: apply.md, apply.json, apply.csv,
# apply.png).
# Usage: perf/bench_refit.sh [extra `dcr refit` options]
#   env: NP, MODEL, LINKS, CONTEXTS, APPLY, STEPS, RATES
#   e.g. LINKS="5 0.1" CONTEXTS="auto true false" MODEL=medium perf/bench_refit.sh
set -euo pipefail
source "$(dirname "$0")/setup.sh" refit
modes=${APPLY:-stream staged}
for mode in $modes; do
  case $mode in stream | staged) ;; *) echo "bench_refit: APPLY: '$mode' is neither stream nor staged" >&2; exit 2 ;; esac
done
for gbps in ${LINKS:-0 5 1 0.2}; do
  for contexts in ${CONTEXTS:-auto}; do
    for mode in $modes; do
      echo "== link ${gbps} Gbit/s per trainer (0: unlimited), --contexts $contexts, --apply $mode"
      name="$out/refit-$gbps-$contexts-$mode"
      mpirun --oversubscribe -np "${NP:-5}" build/dcr refit --config configs/refit_local.ini --model "${MODEL:-small}" \
        --steps "${STEPS:-3}" --rates "${RATES:-1,3,5}" --frame-elements 4194304 --link-gbps "$gbps" \
        --contexts "$contexts" --apply "$mode" --json "$name.json" --csv "$name.csv" "$@" | tee "$name.txt"
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "refit-*.json"))):
    parts = os.path.basename(path)[6:-5].split("-")  # <gbps>-<contexts>[-<apply>]
    gbps, contexts = parts[0], parts[1] if len(parts) > 1 else "auto"
    for s in json.load(open(path))["steps"]:
        if s["kind"] != "delta":
            continue
        st = s["stage_seconds"]
        bound = max(("encode", st["encode"]), ("wire+relay", st["send"] + st["relay"]), ("apply", st["apply"]),
                    ("commit", st["commit"]), key=lambda kv: kv[1])[0]
        rows.append((float(gbps), 100 * s["change_rate"], contexts, s.get("apply", "stream"),
                     "%d/%d" % (s["contexts"]["frames"], s["trainer_frames"]), s["wire_bytes"] / 1e6, s["full_bytes"] / 1e6,
                     s["full_bytes"] / max(1, s["wire_bytes"]), s["seconds"], s.get("pause_seconds", s["seconds"]),
                     s["full_seconds"], s["bcast_seconds"], s["speedup"], bound, s["bitexact"]))
print("%8s %8s %8s %6s %9s %9s %9s %8s %9s %9s %9s %9s %8s %11s %s" % ("link", "changed", "contexts", "apply",
      "ctx frm", "wire MB", "full MB", "bytes x", "delta s", "pause s", "full s", "bcast s", "speedup", "bound by",
      "bit-exact"))
for r in sorted(rows, key=lambda r: (-r[0], r[1], r[2], r[3])):
    print("%8s %7.2f%% %8s %6s %9s %9.3f %9.3f %8.1f %9.4f %9.4f %9.4f %9.4f %7.2fx %11s %s" % (
        "none" if r[0] == 0 else "%g Gb/s" % r[0], *r[1:14], "yes" if r[14] else "NO"))
PY
if [ "$(wc -w <<<"$modes")" -gt 1 ]; then
  python3 perf/apply_summary.py --link "link / trainer" "$out" | tee "$out/apply.md"
fi
echo "results in $out"
