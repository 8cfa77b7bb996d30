#!/usr/bin/env bash
# What each trainer reads of a real checkpoint against its shard (no gather): writes a 4-shard,
# 62.8 MB Llama-style HF checkpoint series with scripts/make_hf_checkpoint.py, refits it with
# TRAINERS (default "1 2 4") trainers, and prints each run's per-trainer "touched / shard MB, peak
# RSS MB" lines (the full refit and MPI_Bcast comparisons are off: the bcast reads the whole model).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/dcr ] || scripts/build.sh
source scripts/mpi_env.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 scripts/make_hf_checkpoint.py --family llama --out "$work/ckpt" --versions 3 --shards 4 \
  --hidden 512 --layers 8 --heads 8 --kv-heads 4 --head-dim 64 --intermediate 1376 --vocab 8000 --rate 0.02 >/dev/null
for t in ${TRAINERS:-1 2 4}; do
  echo "== $t trainer(s)"
  mpirun --oversubscribe -np $((t + 3)) build/dcr refit --trainers "$t" --relays 1 --rollout-tp 2 \
    --checkpoints "$work/ckpt/step-*" --compare-bcast false --compare-full false | grep -E "checkpoint read|^v[0-9]+ +(full|delta)"
done
