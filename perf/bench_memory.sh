#!/usr/bin/env bash
# Where a refit's memory goes: each role's peak anonymous memory (RssAnon, sampled every 20 ms by
# every rank and carried by every record) against the bytes it holds, for HF checkpoint sequences
# of two sizes (about 0.3 GB and 1.1 GB, scripts/make_hf_checkpoint.py, llama) and the change
# model's presets. Each case: 2 trainers -> 1 relay -> 2 rollouts at TP 2, 3 versions, with and
# without --state-dir (rollout snapshots), and with the trainers' baseline in a file-backed mapping
# (--baseline-dir); --compare-full false (the full-refit comparison keeps a second copy of the
# serving buffers; a benchmark aid). Each case also gives its delta versions' median seconds.
# Writes results/memory-<timestamp>/{<case>.json,summary.json,summary.md,memory.png} and prints the
# table. Usage: perf/bench_memory.sh   env: SIZES ("0.3 1.1"), PRESETS ("small medium")
set -euo pipefail
source "$(dirname "$0")/setup.sh" memory
sizes=${SIZES:-0.3 1.1}
presets=${PRESETS:-small medium}

# make_hf_checkpoint.py options of a llama of about $1 GB (bf16, untied embeddings, vocab 32000).
geometry() {
  case $1 in
    0.3) echo "--hidden 1024 --layers 8 --intermediate 2816 --heads 16 --kv-heads 8 --head-dim 64" ;;
    1.1) echo "--hidden 2048 --layers 9 --intermediate 5632 --heads 16 --kv-heads 8 --head-dim 128" ;;
    *) echo "unknown size $1 (0.3 or 1.1)" >&2; exit 2 ;;
  esac
}
checkpoints() {  # size -> directory of step-0000..step-0002, made once under results/
  local dir=results/memory-checkpoints-$1
  if [ ! -d "$dir/step-0002" ]; then
    # shellcheck disable=SC2046
    /usr/bin/python3 scripts/make_hf_checkpoint.py --family llama --out "$dir" --versions 3 --shards 4 \
      --vocab 32000 --rate 0.03 $(geometry "$1") >&2
  fi
  echo "$dir"
}
refit() {  # case [options]
  local name=$1; shift
  mpirun --oversubscribe -np 5 build/dcr refit --trainers 2 --relays 1 --rollout-tp 2 --compare-full false \
    --compare-bcast false --transport mpi --timeout 300 --json "$out/$name.json" "$@" >"$out/$name.txt" 2>&1 ||
    { tail -n 20 "$out/$name.txt"; exit 1; }
  echo "  $name done" >&2
}
for size in $sizes; do
  ck=$(checkpoints "$size")
  refit "ckpt-${size}G-state" --checkpoints "$ck/step-*" --state-dir "$out/state-$size"
  refit "ckpt-${size}G" --checkpoints "$ck/step-*"
  refit "ckpt-${size}G-baseline-file" --checkpoints "$ck/step-*" --baseline-dir "$out/baseline-$size"
done
for p in $presets; do
  refit "$p-state" --model "$p" --steps 2 --rates 3 --state-dir "$out/state-$p"
  refit "$p" --model "$p" --steps 2 --rates 3
done

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = []
for name in sorted(f[:-5] for f in os.listdir(out) if f.endswith(".json") and f != "summary.json"):
    steps = json.load(open(os.path.join(out, name + ".json")))["steps"]
    m = lambda role, key: max(s["memory"][role][key] for s in steps)
    deltas = sorted(s["seconds"] for s in steps if s["kind"] == "delta")
    rows.append({"case": name, "trainer_anon": m("trainer", "peak_anon"), "trainer_shard": m("trainer", "shard"),
                 "delta_seconds": deltas[len(deltas) // 2] if deltas else 0,
                 "relay_anon": m("relay", "peak_anon"), "rollout_anon": m("rollout", "peak_anon"),
                 "rollout_shard": m("rollout", "shard")})
json.dump(rows, open(os.path.join(out, "summary.json"), "w"), indent=2)
mb = lambda b: b / 1e6
lines = ["| case | trainer shard MB | trainer peak anon MB | trainer / shard | rollout serving MB | rollout peak anon MB | rollout - serving MB | relay peak anon MB | delta s |",
         "|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    lines.append("| %s | %.1f | %.1f | **%.2f** | %.1f | %.1f | **%.1f** | %.1f | %.3f |" % (
        r["case"], mb(r["trainer_shard"]), mb(r["trainer_anon"]), r["trainer_anon"] / r["trainer_shard"],
        mb(r["rollout_shard"]), mb(r["rollout_anon"]), mb(r["rollout_anon"] - r["rollout_shard"]), mb(r["relay_anon"]),
        r["delta_seconds"]))
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
with open(os.path.join(out, "memory.dat"), "w") as f:
    for r in rows:
        f.write("%s %.1f %.1f %.1f %.1f %.1f\n" % (r["case"], mb(r["trainer_shard"]), mb(r["trainer_anon"]),
                                                   mb(r["rollout_shard"]), mb(r["rollout_anon"]), mb(r["relay_anon"])))
print("\n".join(lines))
PY
if command -v gnuplot >/dev/null; then
  gnuplot -e "data='$out/memory.dat'; out='$out/memory.png'" perf/plot_memory.gp && echo "plot: $out/memory.png"
fi
echo "results in $out"
