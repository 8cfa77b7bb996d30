#!/usr/bin/env bash
# Two builds of dcr_endpoint_rate (perf/endpoint_rate.cc) side by side in one sitting: each run of
# one is followed by a run of the other, unsealed and sealed (HMAC-SHA-256), and the medians of
# their medians are printed with the ratio after/before, so a machine that slows down mid-run moves
# both sides together.
# Usage: perf/compare_endpoint_rate.sh BEFORE_BINARY AFTER_BINARY [RUNS (default 7)]
set -euo pipefail
before=$1 after=$2 runs=${3:-7}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for key in "" --key; do
  for i in $(seq "$runs"); do
    "$before" $key --json "$out/before${key}-$i.json" >/dev/null
    "$after" $key --json "$out/after${key}-$i.json" >/dev/null
  done
done
/usr/bin/python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def med(build, key, field):
    return statistics.median(json.load(open(f"{out}/{build}{key}-{i}.json"))[field] for i in range(1, runs + 1))
rows = [("relay frames / s of forward", "relay_frames_per_s"), ("relay frames / CPU s", "relay_frames_per_cpu_s"),
        ("rollout frames / s of apply", "apply_frames_per_s"), ("rollout frames / CPU s", "rollout_frames_per_cpu_s")]
print("| frames | measure | before | after | after / before |")
print("|---|---|---|---|---|")
for key, name in (("", "unsealed"), ("--key", "sealed (HMAC-SHA-256)")):
    for label, field in rows:
        b, a = med("before", key, field), med("after", key, field)
        print(f"| {name} | {label} | {b:,.0f} | {a:,.0f} | {a / b:.2f} |")
PY
