#!/usr/bin/env bash
# Each role's peak anonymous memory on an HF checkpoint sequence (a 0.3 GB llama, 3 versions; 2
# trainers -> 1 relay -> 2 rollouts at TP 2), as the ranks measure it (RssAnon sampled every 20 ms,
# in every record), against the bounds a refit must hold: a trainer at most 1.15x its shard plus
# 64 MB (one baseline; the version is read where the checkpoint maps it), a rollout at most its
# serving buffers plus 64 MB, with --state-dir (snapshots) and without, and a relay below 64 MB
# (--window 8: 2 trainers x 8 frames of at most 2 MB in flight);
# with --baseline-dir the same bits and the trainer's baseline out of its anonymous memory.
# Usage: memory_bounds.sh DCR_BINARY
set -uo pipefail
dcr=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/scripts/make_hf_checkpoint.py" --family llama --out "$work/ck" --versions 3 --shards 4 \
  --vocab 32000 --rate 0.03 --hidden 1024 --layers 8 --intermediate 2816 --heads 16 --kv-heads 8 --head-dim 64 \
  >/dev/null || { echo "FAIL: making the checkpoints"; exit 1; }
failed=0
for state in "--state-dir $work/state" ""; do
  # shellcheck disable=SC2086
  timeout 600 mpirun --oversubscribe -np 5 "$dcr" refit --trainers 2 --relays 1 --rollout-tp 2 --window 8 --compare-full false \
    --compare-bcast false --transport mpi --timeout 300 --checkpoints "$work/ck/step-*" --json "$work/r.json" \
    $state >"$work/log" 2>&1 || { tail -20 "$work/log"; echo "FAIL: the refit"; exit 1; }
  /usr/bin/python3 - "$work/r.json" "${state:+with --state-dir}" <<'PY' || failed=1
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
what = sys.argv[2] or "without --state-dir"
MB = 1 << 20
ok = True
for s in steps:
    m = s["memory"]
    t, r, relay = m["trainer"], m["rollout"], m["relay"]["peak_anon"]
    bounds = [("trainer", t["peak_anon"], 1.15 * t["shard"] + 64 * MB, "1.15 x shard %.0f MB + 64 MB" % (t["shard"] / 1e6)),
              ("rollout", r["peak_anon"], r["shard"] + 64 * MB, "serving %.0f MB + 64 MB" % (r["shard"] / 1e6)),
              ("relay", relay, 64 * MB, "64 MB")]
    for role, peak, bound, said in bounds:
        good = 0 < peak <= bound
        ok &= good
        print("  %s v%d %s: peak anonymous %.1f MB, bound %.1f MB (%s) %s" % (
            what, s["version"], role, peak / 1e6, bound / 1e6, said, "ok" if good else "FAIL"))
sys.exit(0 if ok else 1)
PY
done
# --baseline-dir: the baseline in a file-backed mapping; the same bits, and the trainer's anonymous
# memory below the in-memory run's by most of its shard.
cp "$work/r.json" "$work/in-memory.json"
timeout 600 mpirun --oversubscribe -np 5 "$dcr" refit --trainers 2 --relays 1 --rollout-tp 2 --window 8 --compare-full false \
  --compare-bcast false --transport mpi --timeout 300 --checkpoints "$work/ck/step-*" --json "$work/r.json" \
  --baseline-dir "$work/baseline" >"$work/log" 2>&1 || { tail -20 "$work/log"; echo "FAIL: the refit with --baseline-dir"; exit 1; }
/usr/bin/python3 - "$work/in-memory.json" "$work/r.json" <<'PY' || failed=1
import json, sys
mem, filed = (json.load(open(p))["steps"] for p in sys.argv[1:3])
ok = True
for a, b in zip(mem, filed):
    shard, was, now = b["memory"]["trainer"]["shard"], a["memory"]["trainer"]["peak_anon"], b["memory"]["trainer"]["peak_anon"]
    good = b["committed"] and b["bitexact"] and now <= was - 0.8 * shard
    ok &= good
    print("  --baseline-dir v%d: %s, trainer peak anonymous %.1f MB (in memory %.1f MB, shard %.1f MB) %s" % (
        b["version"], "verified" if b["bitexact"] else "NOT VERIFIED", now / 1e6, was / 1e6, shard / 1e6, "ok" if good else "FAIL"))
sys.exit(0 if ok else 1)
PY
[ "$failed" -eq 0 ] && echo "every role within its bound" || echo "FAIL: a role past its bound"
exit "$failed"
