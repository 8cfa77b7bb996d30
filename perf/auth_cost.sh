#!/usr/bin/env bash
# The cost of sealed frames: refit time of delta versions at 1, 3 and 5% change with no key, with
# HMAC-SHA-256 (--key-file) and with AES-256-GCM (--key-file --encrypt true), the three modes run
# back to back REPS times (interleaved, so machine noise hits them alike). Prints, per rate, the
# median refit seconds of each mode and their ratios to the unsealed run.
# Usage: perf/auth_cost.sh [MODEL=medium] [REPS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/dcr ] || scripts/build.sh
source scripts/mpi_env.sh
model=${MODEL:-medium}
reps=${REPS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build/dcr keygen "$work/job.key" >/dev/null
declare -A modes=([none]="" [hmac]="--key-file $work/job.key" [gcm]="--key-file $work/job.key --encrypt true")
for r in $(seq "$reps"); do
  for m in none hmac gcm; do
    # shellcheck disable=SC2086
    mpirun --oversubscribe -np 5 build/dcr refit --model "$model" --trainers 2 --relays 1 --rollout-tp 2 \
      --steps 3 --rates 1,3,5 --compare-full false --compare-bcast false ${modes[$m]} \
      --json "$work/$m-$r.json" >/dev/null
  done
  echo "rep $r of $reps done" >&2
done
/usr/bin/python3 - "$work" "$reps" "$model" <<'PY'
import json, statistics, sys
work, reps, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def seconds(mode):
    by_rate = {}
    for r in range(1, reps + 1):
        for step in json.load(open(f"{work}/{mode}-{r}.json"))["steps"]:
            if step["kind"] == "delta":
                by_rate.setdefault(round(100 * step["change_rate"]), []).append(step["seconds"])
    return {k: statistics.median(v) for k, v in by_rate.items()}
s = {m: seconds(m) for m in ("none", "hmac", "gcm")}
print(f"sealed-frame cost, model {model}, median of {reps} interleaved runs (delta refit seconds)")
print(f"{'changed':>8} {'none s':>9} {'hmac s':>9} {'gcm s':>9} {'hmac/none':>10} {'gcm/none':>9}")
for rate in sorted(s["none"]):
    n, h, g = s["none"][rate], s["hmac"][rate], s["gcm"][rate]
    print(f"{rate:>7}% {n:>9.4f} {h:>9.4f} {g:>9.4f} {h / n:>10.3f} {g / n:>9.3f}")
PY
