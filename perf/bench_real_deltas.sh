#!/usr/bin/env bash
# The codec on real training deltas: trains the small Llama-style model of
# scripts/make_training_run.py (once; reused from RUN when there), then runs `dcr bench codec
# --checkpoints` on each rate's consecutive checkpoints and writes one table of the figures issue 16
# asks for: wire bytes against the i.i.d. XOR, ulp-delta and exponent-conditioned bounds and the
# #2444-style and PULSE-style encodings, encode and apply beside memcpy, and bit-exactness.
# Usage: perf/bench_real_deltas.sh [extra `dcr bench codec` options], e.g. --reps 7 or --bundle-below 0
# Env: RUN (training run dir, default results/training-run), RATES (default "1 3 5").
set -euo pipefail
cd "$(dirname "$0")/.."
source perf/training_run.sh
out=results/real-deltas-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
# Each rate with and without value packing contexts, one after the other.
for rate in $rates; do
  for contexts in false true; do
    build/dcr bench codec --checkpoints "$run/rate-$rate/step-*" --contexts $contexts \
      --json "$out/rate-$rate-contexts-$contexts.json" "$@" > "$out/rate-$rate-contexts-$contexts.txt"
  done
done
/usr/bin/python3 - "$out" $rates <<'PY' | tee "$out/summary.md"
import json, statistics, sys
out, rates = sys.argv[1], sys.argv[2:]
print("| rate | contexts | changed | wire KB | wire / i.i.d. | wire / ulp | wire / exp | #2444-style / wire | PULSE-style / wire "
      "| encode / memcpy | apply / memcpy | bit-exact |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for rate, contexts in ((r, c) for r in rates for c in ("false", "true")):
    records = json.load(open(f"{out}/rate-{rate}-contexts-{contexts}.json"))["records"]
    def med(f):
        return statistics.median(f(r) for r in records)
    print(f"| {rate}% | {contexts} | {100 * med(lambda r: r['change_rate']):.2f}% | {med(lambda r: r['wire_bytes']) / 1e3:.1f} "
          f"| {med(lambda r: r['wire_bytes'] / r['entropy_bound_bytes']):.3f} "
          f"| {med(lambda r: r['wire_bytes'] / r['entropy_bound_delta_bytes']):.3f} "
          f"| {med(lambda r: r['ratio_to_exponent_bound']):.3f} "
          f"| {med(lambda r: r['nemo_style_bytes'] / r['wire_bytes']):.2f} "
          f"| {med(lambda r: r['pulse_style_bytes'] / r['wire_bytes']):.2f} "
          f"| {med(lambda r: r['encode_to_memcpy']['median']):.2f} "
          f"| {med(lambda r: r['apply_to_memcpy']['median']):.2f} "
          f"| {'yes' if all(r['bitexact'] for r in records) else 'NO'} |")
print(f"\nmedians over each rate's {len(records)} consecutive checkpoint pairs (encode and apply / memcpy: of each "
      f"pair's median over its repetitions, each paired with the memcpy timed just before it); per-pair figures in "
      f"{out}/rate-*.txt")
PY
echo "results in $out"
