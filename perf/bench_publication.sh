#!/usr/bin/env bash
# What one publication for every rollout layout costs: a publisher promising serving TP {1,2,4,8}
# (--serve-tp 1,2,4,8) against one promising only the follower's layout (--serve-tp 2), side by side
# on the same versions. Per change rate: the bytes put into the store per delta version (frames,
# their headers and the manifests: every PUT's bytes), the frames, and the trainers' encode time;
# on the change model of the `medium` preset and on a training run's real checkpoints
# (perf/training_run.sh: scripts/make_training_run.py's, made once under results/training-run).
# Then a follower's store GETs per version while the store keeps 16 deltas.
# Writes results/publication-<timestamp>/{*.json,summary.json,summary.md} and prints the table.
# Usage: perf/bench_publication.sh   env: MODEL (medium), RATES ("1 3 5"), STEPS (3),
#   PROMISE (1,2,4,8), SINGLE (2), RUN (results/training-run: rate-R/step-* of each rate; "" to skip),
#   KEEP_STEPS (20)
set -euo pipefail
source "$(dirname "$0")/setup.sh" publication
model=${MODEL:-medium}
rates=${RATES:-1 3 5}
steps=${STEPS:-3}
promise=${PROMISE:-1,2,4,8}
single=${SINGLE:-2}
run=""
if [ "${RUN-unset}" != "" ]; then
  source perf/training_run.sh  # $run: the training run's checkpoints, made once
fi

publish() {  # name serve-tp [source options]
  local name=$1 tp=$2; shift 2
  mpirun --oversubscribe -np 2 build/dcr refit --role publish --store "file://$PWD/$out/store-$name" --trainers 2 \
    --serve-tp "$tp" --full-every 1000 --json "$out/$name.json" "$@" >"$out/$name.txt" 2>&1 ||
    { tail -n 20 "$out/$name.txt"; exit 1; }
}
for rate in $rates; do
  for tp in "$single" "$promise"; do  # side by side: the same versions, one promise then the other
    publish "$model-r$rate-tp${tp//,/-}" "$tp" --model "$model" --steps "$steps" --rates "$rate"
    [ -n "$run" ] && publish "run-r$rate-tp${tp//,/-}" "$tp" --checkpoints "$run/rate-$rate/step-*"
  done
done
# A follower's store requests with 16 deltas kept: a TP 2 follower started with a publisher of
# KEEP_STEPS (20) versions of the `small` preset (--spool-keep 16, a snapshot every 4), polling
# every 0.1 s; its records give each version's GETs (polls included) and frames.
keep="--model small --steps ${KEEP_STEPS:-20} --rates 3 --serve-tp $promise"
mkdir -p "$out/follower"
mpirun --oversubscribe -np 3 build/dcr refit --role follow --store "file://$PWD/$out/store-keep" --relays 1 \
  --rollout-tp 2 $keep --verify false --transport mpi --poll 0.1 --follow-timeout 120 \
  --state-dir "$out/follower" --json "$out/follow-keep.json" >"$out/follow-keep.txt" 2>&1 &
follower=$!
mpirun --oversubscribe -np 2 build/dcr refit --role publish --store "file://$PWD/$out/store-keep" --trainers 2 \
  $keep --spool-keep 16 --full-every 4 --json "$out/publish-keep.json" >"$out/publish-keep.txt" 2>&1 ||
  { tail -n 20 "$out/publish-keep.txt"; exit 1; }
wait $follower || { tail -n 20 "$out/follow-keep.txt"; exit 1; }
python3 - "$out" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
steps = [s for s in json.load(open(os.path.join(out, "follow-keep.json")))["steps"] if s["kind"] == "delta"]
late = [s for s in steps if s["version"] >= 17]  # the store keeps 16 deltas by then
def med(key, of=late):
    return statistics.median(key(s) for s in of)
summary = {"versions": len(steps), "kept_from": 17, "gets_per_version": med(lambda s: s["store"]["gets"]),
           "frames_per_version": med(lambda s: s["trainer_frames"]),
           "lists_per_version": med(lambda s: s["store"]["lists"]),
           "gets_beyond_frames": [s["store"]["gets"] - s["trainer_frames"] for s in late]}
json.dump(summary, open(os.path.join(out, "follow-keep-summary.json"), "w"), indent=2)
print("follower with 16 deltas kept (v17-v%d): GETs per version %.0f (frames %.0f; beyond them: %s), LISTs %.0f" % (
    max(s["version"] for s in late), summary["gets_per_version"], summary["frames_per_version"],
    summary["gets_beyond_frames"], summary["lists_per_version"]))
PY
python3 - "$out" "$model" "$rates" "$single" "$promise" "$run" <<'PY'
import json, os, statistics, sys
out, model, rates, single, promise, run = sys.argv[1:]
rows = []
for source in [model] + (["run"] if run else []):
    for rate in rates.split():
        def load(tp):
            doc = json.load(open(os.path.join(out, "%s-r%s-tp%s.json" % (source, rate, tp.replace(",", "-")))))
            deltas = [s for s in doc["steps"] if s["kind"] == "delta"]
            return {"put_bytes": statistics.median(s["store"]["put_bytes"] for s in deltas),
                    "wire_bytes": statistics.median(s["wire_bytes"] for s in deltas),
                    "frames": deltas[0]["trainer_frames"],
                    "encode_s": statistics.median(s["stage_seconds"]["encode"] for s in deltas),
                    "change_rate": statistics.median(s["change_rate"] for s in deltas),
                    "model_bytes": doc["model_bytes"]}
        one, many = load(single), load(promise)
        rows.append({"source": source if source != "run" else "training run", "rate": float(rate),
                     "changed": many["change_rate"], "single": one, "promised": many,
                     "put_ratio": many["put_bytes"] / one["put_bytes"],
                     "encode_ratio": many["encode_s"] / one["encode_s"] if one["encode_s"] else None})
json.dump({"single": single, "promised": promise, "rows": rows}, open(os.path.join(out, "summary.json"), "w"), indent=2)
lines = ["| source | changed | frames TP %s | frames TP {%s} | MB put TP %s | MB put TP {%s} | put ratio | encode s TP %s | encode s TP {%s} | encode ratio |" % (single, promise, single, promise, single, promise),
         "|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    lines.append("| %s | %.2f%% | %d | %d | %.3f | %.3f | **%.3f** | %.4f | %.4f | %.2f |" % (
        r["source"], 100 * r["changed"], r["single"]["frames"], r["promised"]["frames"],
        r["single"]["put_bytes"] / 1e6, r["promised"]["put_bytes"] / 1e6, r["put_ratio"],
        r["single"]["encode_s"], r["promised"]["encode_s"], r["encode_ratio"] or float("nan")))
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
print("results in", out)
PY
