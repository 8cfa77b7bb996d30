#!/usr/bin/env bash
# FP8 rollouts on real training deltas: trains the small Llama-style model of
# scripts/make_training_run.py (once; reused from RUN when there), then runs `dcr bench codec
# --checkpoints ... --serve-quant fp8-block` on each rate's consecutive checkpoints. Each pair is
# benched twice, as the checkpoint's own bf16 delta and as rollouts serving block FP8 receive it
# (E4M3 bytes + weight_scale_inv per 128 x 128 block, the rest as it is), and the table gives what
# changed of each, the wire against the bf16 delta and against the whole FP8 model (a full refit),
# and against the entropy bounds.
# Usage: perf/bench_fp8.sh [extra `dcr bench codec` options], e.g. --reps 5
# Env: RUN (training run dir, default results/training-run), RATES (default "1 3 5").
set -euo pipefail
cd "$(dirname "$0")/.."
source perf/training_run.sh
out=results/fp8-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
for rate in $rates; do
  build/dcr bench codec --checkpoints "$run/rate-$rate/step-*" --serve-quant fp8-block \
    --json "$out/rate-$rate.json" "$@" > "$out/rate-$rate.txt"
done
/usr/bin/python3 - "$out" $rates <<'PY' | tee "$out/summary.md"
import json, statistics, sys
out, rates = sys.argv[1], sys.argv[2:]
print("| rate | bf16 changed | E4M3 bytes changed | scales changed | bf16 delta KB | FP8 delta KB | FP8 / bf16 delta "
      "| FP8 model KB | FP8 delta / FP8 model | FP8 wire / i.i.d. bound | FP8 wire / exp bound | bit-exact |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for rate in rates:
    records = json.load(open(f"{out}/rate-{rate}.json"))["records"]
    bf16 = [r for r in records if "groups" not in r]
    fp8 = [r for r in records if "groups" in r]
    def med(rs, f):
        return statistics.median(f(r) for r in rs)
    def part(r, group):
        g = r["groups"].get(group, {"elements": 0, "changed": 0})
        return g["changed"] / g["elements"] if g["elements"] else 0
    scales = sum(r["groups"]["scales"]["changed"] for r in fp8)
    blocks = sum(r["groups"]["scales"]["elements"] for r in fp8)
    print(f"| {rate}% | {100 * med(bf16, lambda r: r['change_rate']):.2f}% "
          f"| {100 * med(fp8, lambda r: part(r, 'fp8')):.3f}% "
          f"| {scales} of {blocks} ({100 * scales / blocks:.2f}%) "
          f"| {med(bf16, lambda r: r['wire_bytes']) / 1e3:.1f} | {med(fp8, lambda r: r['wire_bytes']) / 1e3:.1f} "
          f"| {med(fp8, lambda r: r['wire_bytes'] / r['checkpoint_wire_bytes']):.3f} "
          f"| {med(fp8, lambda r: r['model_bytes']) / 1e3:.0f} "
          f"| {100 * med(fp8, lambda r: r['wire_bytes'] / r['model_bytes']):.2f}% "
          f"| {med(fp8, lambda r: r['ratio_to_bound']):.3f} | {med(fp8, lambda r: r['ratio_to_exponent_bound']):.3f} "
          f"| {'yes' if all(r['bitexact'] for r in records) else 'NO'} |")
print(f"\nmedians over each rate's {len(fp8)} consecutive checkpoint pairs (scales changed: summed over them); "
      f"per-pair figures, with the changes of the tensors served as they are, in {out}/rate-*.txt")
PY
echo "results in $out"
