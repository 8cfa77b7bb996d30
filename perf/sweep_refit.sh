#!/usr/bin/env bash
# Sweeps the refit over transports, relay fan-out / tree depth and rank counts at one change rate,
# in separate jobs on this machine, and writes results/sweep-<ts>/sweep.csv (one row per delta
# version) plus each job's JSON. Env: RATE (percent, default 3), MODEL (default small).
set -euo pipefail
source "$(dirname "$0")/setup.sh" sweep
echo "transport,ranks,trainers,relays,fanout,depth,version,change_rate,wire_bytes,seconds,full_seconds,speedup,bitexact" >"$out/sweep.csv"
# name: np trainers relays fanout rollout-tp
layouts=("5 2 1 2 2" "7 2 1 2 2" "7 2 3 2 2" "8 2 2 1 2")
for transport in ucx mpi; do
  for layout in "${layouts[@]}"; do
    read -r np trainers relays fanout tp <<<"$layout"
    name="$transport-np$np-r$relays-f$fanout"
    mpirun --oversubscribe -np "$np" build/dcr refit --config configs/refit_local.ini --model "${MODEL:-small}" \
      --transport "$transport" --trainers "$trainers" --relays "$relays" --fanout "$fanout" --rollout-tp "$tp" \
      --steps 2 --rates "${RATE:-3}" --compare-bcast false --json "$out/$name.json" >"$out/$name.log" 2>&1
    python3 - "$out/$name.json" "$transport" "$np" "$trainers" "$relays" "$fanout" >>"$out/sweep.csv" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
depth = re.search(r"depth (\d+)", doc["job"]).group(1)
for s in doc["steps"]:
    if s["kind"] == "delta":
        print(",".join(sys.argv[2:7] + [depth, str(s["version"]), "%.5f" % s["change_rate"], str(s["wire_bytes"]),
                       "%.5f" % s["seconds"], "%.5f" % s["full_seconds"], "%.2f" % s["speedup"], str(s["bitexact"]).lower()]))
PY
    echo "$name done"
  done
done
column -s, -t "$out/sweep.csv"
echo "results in $out"
