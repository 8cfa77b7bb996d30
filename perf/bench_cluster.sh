#!/usr/bin/env bash
# The refit on a cluster on one machine (tests/cluster/cluster.sh: network-namespace nodes, a
# tbf-shaped WAN between the trainer bridge and the rollout bridge), against the link's limit.
#   1. for each WAN rate (WAN_GBIT, default "0.1 0.5 1 5" Gbit/s), on 1 trainer node + 2 rollout nodes
#      (3 ranks each: 3 trainers; per rollout node its relay and one TP-2 replica): the delta refit
#      and the full refit of the same versions over the same link (--compare-full), at RATES
#      (default 1,3,5) % changed, for each preset in MODELS (default "small medium") and the HF
#      checkpoint sequence of scripts/make_training_run.py at 3% (RUN, made once when torch is
#      there; skipped without it or with CHECKPOINTS=0);
#      each beside wire bytes / link rate, the least time the link allows;
#   2. at SCALE_GBIT (default 1), the delta refit as rollout nodes grow (SCALE_NODES, default
#      "2 4 8": one relay and one rollout each, fanout 2): the WAN carries each version once, so the
#      time follows the tree's depth, not the node count;
#   3. at SCALE_GBIT, the in-process link emulation (--link-gbps, one token bucket per trainer, so
#      each gets rate / trainers) over an unshaped WAN, against the shaped WAN, same job.
#   SCALE=0 skips parts 2 and 3.
# Every job runs once per `--apply` mode in APPLY (default "stream staged"), the modes back to back
# on the same cluster and link, same options otherwise (a job's first version is always streamed;
# its deltas go as the mode says).
# Writes results/cluster-<timestamp>/: each run's refit JSON and log (<job>-<mode>.json, .log),
# summary.json, summary.md (the tables) and cluster.png (gnuplot, when installed); and the modes side
# by side (perf/apply_summary.py): apply.md, apply.json, apply.csv and apply.png. Needs root
# (network namespaces).
# Usage: perf/bench_cluster.sh [extra `dcr refit` options]
#   env: WAN_GBIT, MODELS, RATES, CHECKPOINTS, RUN, APPLY, SCALE, SCALE_GBIT, SCALE_NODES
#   e.g. WAN_GBIT="0.1 1" MODELS=medium RATES=3 SCALE=0 perf/bench_cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/dcr ] || scripts/build.sh
source tests/cluster/cluster.sh
out=results/cluster-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
wan_rates=${WAN_GBIT:-0.1 0.5 1 5}
models=${MODELS:-small medium}
rates=${RATES:-1,3,5}
modes=${APPLY:-stream staged}
for mode in $modes; do
  case $mode in stream | staged) ;; *) echo "bench_cluster: APPLY: '$mode' is neither stream nor staged" >&2; exit 2 ;; esac
done
scale_gbit=${SCALE_GBIT:-1}
run=${RUN:-results/training-run}
if [ "${CHECKPOINTS:-1}" = 0 ]; then
  run=/nonexistent
elif [ ! -d "$run/rate-3" ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  /usr/bin/python3 scripts/make_training_run.py --out "$run" --rates 3
fi
extra=("$@")

# refit NAME NP PPR [dcr refit options]: one job on the cluster that is up, once per mode in APPLY,
# back to back (NAME-<mode>.json, .log); each JSON gets the WAN's rate and the bytes the WAN carried
# trainer -> rollouts.
refit() {
  local name=$1 np=$2 ppr=$3 before after mode
  shift 3
  for mode in $modes; do
    before=$(cluster_wan_bytes)
    echo "== $name, --apply $mode: $np ranks, WAN ${CLUSTER_WAN_GBIT} Gbit/s"
    cluster_mpirun -np "$np" --map-by "ppr:$ppr:node" build/dcr refit --relays -1 --compare-bcast false \
      --timeout 300 --json "$out/$name-$mode.json" "$@" --apply "$mode" "${extra[@]}" 2>&1 |
      tee "$out/$name-$mode.log" | grep -E '^v[0-9]|^ +staged:'
    after=$(cluster_wan_bytes)
    /usr/bin/python3 - "$out/$name-$mode.json" "$CLUSTER_WAN_GBIT" $((after - before)) <<'PY'
import json, sys
path, gbit, wan = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
d = json.load(open(path))
d["wan_gbit"], d["wan_bytes"] = gbit, wan
json.dump(d, open(path, "w"), indent=1)
PY
  done
}

# 1. delta vs full against the link, per WAN rate.
cluster_up --name dcrb --trainer-nodes 1 --rollout-nodes 2 --wan-gbit 1
for gbit in $wan_rates; do
  cluster_set_wan_rate "$gbit"
  for model in $models; do
    refit "rate-$gbit-$model" 9 3 --model "$model" --trainers 3 --rollout-tp 2 --steps 3 --rates "$rates" \
      --frame-elements 4194304 --compare-full true
  done
  if [ -d "$run/rate-3" ]; then
    refit "rate-$gbit-checkpoints" 9 3 --checkpoints "$run/rate-3/step-*" --trainers 3 --rollout-tp 2 --compare-full true
  fi
done

# 3. --link-gbps (per trainer) over an unshaped WAN against the shaped WAN.
if [ "${SCALE:-1}" != 0 ]; then
  cluster_set_wan_rate 100
  refit "emulated-$scale_gbit" 9 3 --model small --trainers 3 --rollout-tp 2 --steps 3 --rates 1,3,5 \
    --frame-elements 4194304 --compare-full true --link-gbps "$(awk -v g="$scale_gbit" 'BEGIN { print g / 3 }')"
  cluster_set_wan_rate "$scale_gbit"
  refit "shaped-$scale_gbit" 9 3 --model small --trainers 3 --rollout-tp 2 --steps 3 --rates 1,3,5 \
    --frame-elements 4194304 --compare-full true
fi
cluster_down

# 2. rollout nodes 2, 4, 8: one trainer node of 2 trainers, each rollout node a relay and a rollout.
scale_nodes=${SCALE_NODES:-2 4 8}
[ "${SCALE:-1}" != 0 ] || scale_nodes=
for nodes in $scale_nodes; do
  cluster_up --name dcrb --trainer-nodes 1 --rollout-nodes "$nodes" --wan-gbit "$scale_gbit"
  refit "nodes-$nodes" $((2 * (nodes + 1))) 2 --model small --trainers 2 --rollout-tp 1 --steps 3 --rates 1,3,5 \
    --frame-elements 4194304 --compare-full false
  cluster_down
done

/usr/bin/python3 perf/cluster_summary.py "$out" | tee "$out/summary.md"
if command -v gnuplot >/dev/null; then
  scaling=$(grep -vc '^#' "$out/scaling.csv" || true)
  gnuplot -e "dir='$out'; out='$out/cluster.png'; scaling=${scaling:-0}" perf/plot_cluster.gp && echo "plot: $out/cluster.png"
fi
if [ "$(wc -w <<<"$modes")" -gt 1 ]; then
  /usr/bin/python3 perf/apply_summary.py --link WAN "$out" | tee "$out/apply.md"
fi
echo "results in $out"
