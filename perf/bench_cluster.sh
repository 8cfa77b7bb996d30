#!/usr/bin/env bash
# The refit on a cluster on one machine (tests/cluster/cluster.sh: network-namespace nodes, a
# tbf-shaped WAN between the trainer bridge and the rollout bridge), against the link's limit.
#   1. for each WAN rate (WAN_GBIT, default "0.1 0.5 1 5" Gbit/s), on 1 trainer node + 2 rollout nodes
#      (3 ranks each: 3 trainers; per rollout node its relay and one TP-2 replica): the delta refit
#      and the full refit of the same versions over the same link (--compare-full), at 1, 3 and 5%
#      changed, for each preset in MODELS (default "small medium") and the HF checkpoint sequence
#      of scripts/make_training_run.py at 3% (RUN, made once when torch is there; skipped without it
#      or with CHECKPOINTS=0);
#      each beside wire bytes / link rate, the least time the link allows;
#   2. at SCALE_GBIT (default 1), the delta refit as rollout nodes grow (SCALE_NODES, default
#      "2 4 8": one relay and one rollout each, fanout 2): the WAN carries each version once, so the
#      time follows the tree's depth, not the node count;
#   3. at SCALE_GBIT, the in-process link emulation (--link-gbps, one token bucket per trainer, so
#      each gets rate / trainers) over an unshaped WAN, against the shaped WAN, same job.
# Writes results/cluster-<timestamp>/: each run's refit JSON and log, summary.json, summary.md (the
# tables) and cluster.png (gnuplot, when installed). Needs root (network namespaces).
# Usage: perf/bench_cluster.sh [extra `dcr refit` options]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/dcr ] || scripts/build.sh
source tests/cluster/cluster.sh
out=results/cluster-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
wan_rates=${WAN_GBIT:-0.1 0.5 1 5}
models=${MODELS:-small medium}
scale_gbit=${SCALE_GBIT:-1}
run=${RUN:-results/training-run}
if [ "${CHECKPOINTS:-1}" = 0 ]; then
  run=/nonexistent
elif [ ! -d "$run/rate-3" ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  /usr/bin/python3 scripts/make_training_run.py --out "$run" --rates 3
fi
extra=("$@")

# refit NAME NP PPR [dcr refit options]: one job on the cluster that is up; its JSON gets the WAN's
# rate and the bytes the WAN carried trainer -> rollouts.
refit() {
  local name=$1 np=$2 ppr=$3 before after
  shift 3
  before=$(cluster_wan_bytes)
  echo "== $name: $np ranks, WAN ${CLUSTER_WAN_GBIT} Gbit/s"
  cluster_mpirun -np "$np" --map-by "ppr:$ppr:node" build/dcr refit --relays -1 --compare-bcast false \
    --timeout 300 --json "$out/$name.json" "$@" "${extra[@]}" 2>&1 | tee "$out/$name.log" | grep -E '^v[0-9]'
  after=$(cluster_wan_bytes)
  /usr/bin/python3 - "$out/$name.json" "$CLUSTER_WAN_GBIT" $((after - before)) <<'PY'
import json, sys
path, gbit, wan = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
d = json.load(open(path))
d["wan_gbit"], d["wan_bytes"] = gbit, wan
json.dump(d, open(path, "w"), indent=1)
PY
}

# 1. delta vs full against the link, per WAN rate.
cluster_up --name dcrb --trainer-nodes 1 --rollout-nodes 2 --wan-gbit 1
for gbit in $wan_rates; do
  cluster_set_wan_rate "$gbit"
  for model in $models; do
    refit "rate-$gbit-$model" 9 3 --model "$model" --trainers 3 --rollout-tp 2 --steps 3 --rates 1,3,5 \
      --frame-elements 4194304 --compare-full true
  done
  if [ -d "$run/rate-3" ]; then
    refit "rate-$gbit-checkpoints" 9 3 --checkpoints "$run/rate-3/step-*" --trainers 3 --rollout-tp 2 --compare-full true
  fi
done

# 3. --link-gbps (per trainer) over an unshaped WAN against the shaped WAN.
cluster_set_wan_rate 100
refit "emulated-$scale_gbit" 9 3 --model small --trainers 3 --rollout-tp 2 --steps 3 --rates 1,3,5 \
  --frame-elements 4194304 --compare-full true --link-gbps "$(awk -v g="$scale_gbit" 'BEGIN { print g / 3 }')"
cluster_set_wan_rate "$scale_gbit"
refit "shaped-$scale_gbit" 9 3 --model small --trainers 3 --rollout-tp 2 --steps 3 --rates 1,3,5 \
  --frame-elements 4194304 --compare-full true
cluster_down

# 2. rollout nodes 2, 4, 8: one trainer node of 2 trainers, each rollout node a relay and a rollout.
for nodes in ${SCALE_NODES:-2 4 8}; do
  cluster_up --name dcrb --trainer-nodes 1 --rollout-nodes "$nodes" --wan-gbit "$scale_gbit"
  refit "nodes-$nodes" $((2 * (nodes + 1))) 2 --model small --trainers 2 --rollout-tp 1 --steps 3 --rates 1,3,5 \
    --frame-elements 4194304 --compare-full false
  cluster_down
done

/usr/bin/python3 perf/cluster_summary.py "$out" | tee "$out/summary.md"
if command -v gnuplot >/dev/null; then
  gnuplot -e "dir='$out'; out='$out/cluster.png'" perf/plot_cluster.gp && echo "plot: $out/cluster.png"
fi
echo "results in $out"
