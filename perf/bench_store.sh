#!/usr/bin/env bash
# Two jobs through an object store: a publisher (--role publish) and a follower (--role follow)
# started together, as on two clusters. Per version: the bytes put into the store (the delta, and
# the full snapshot where one is due) against a full checkpoint, and how long after the publisher
# finished a version the follower had it committed (its lag).
# Writes results/store-<timestamp>/{publish,follow}.{json,txt} and prints the table.
# Usage: perf/bench_store.sh [STORE_URL]   (default: a file:// store under the results directory;
#   for S3, export the AWS_* settings, e.g. from `scripts/s3_server.sh start DIR`, and give
#   s3://bucket/prefix)   env: MODEL (small), STEPS (8), RATES (1,3,5), FULL_EVERY (4)
set -euo pipefail
source "$(dirname "$0")/setup.sh" store
store=${1:-file://$PWD/$out/store}
layout=(--model "${MODEL:-small}" --trainers 2 --rollout-tp 2 --steps "${STEPS:-8}" --rates "${RATES:-1,3,5}")
mpirun --oversubscribe -np 3 build/dcr refit --role follow --store "$store" --relays 1 "${layout[@]}" \
  --transport mpi --poll 0.05 --follow-timeout 120 --state-dir "$out/follower" --json "$out/follow.json" \
  >"$out/follow.txt" 2>&1 &
follower=$!
mpirun --oversubscribe -np 2 build/dcr refit --role publish --store "$store" "${layout[@]}" \
  --full-every "${FULL_EVERY:-4}" --json "$out/publish.json" | tee "$out/publish.txt"
wait $follower || { tail -n 20 "$out/follow.txt"; exit 1; }
python3 - "$out" "$store" <<'PY'
import json, os, sys
out, store = sys.argv[1:]
pub = json.load(open(os.path.join(out, "publish.json")))
fol = {s["version"]: s for s in json.load(open(os.path.join(out, "follow.json")))["steps"]}
model = pub["model_bytes"]
print("store %s, model %.2f MB (a full checkpoint per version)" % (store, model / 1e6))
print("%4s %8s %11s %12s %11s %9s %10s %9s %s" % ("v", "changed", "delta MB", "snapshot MB", "put MB", "put/full",
      "follower", "lag s", "bit-exact"))
total = 0
for s in pub["steps"]:
    put = (s["wire_bytes"] if s["kind"] == "delta" else 0) + s["full_bytes"]
    total += put
    f = fol.get(s["version"], {})
    print("%4d %7.2f%% %11.3f %12.3f %11.3f %9.4f %10s %9.3f %s" % (
        s["version"], 100 * s["change_rate"], s["wire_bytes"] / 1e6 if s["kind"] == "delta" else 0,
        s["full_bytes"] / 1e6, put / 1e6, put / model, f.get("kind", "-"), f.get("lag_seconds", 0),
        f.get("bitexact", "-")))
n = len(pub["steps"])
print("all %d versions: %.3f MB put, %.3f x a full checkpoint per version" % (n, total / 1e6, total / (n * model)))
PY
