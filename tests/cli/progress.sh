#!/usr/bin/env bash
# Progress of a long version: a full sync over an emulated slow link (--link-gbps 0.004, about 5 s
# for the `tiny` preset) with --progress 0.5 prints progress lines while it runs, and writes the
# same events to --progress-json: at least four, frames and bytes never going back, seconds
# growing, every phase one of the step's, and the last one "committed" at 100%. A short delta
# prints none.
# Usage: progress.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/../hostile/checks.sh"
timeout 120 mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1 --rollout-tp 2 --steps 1 \
  --compare-full false --compare-bcast false --transport mpi --link-gbps 0.004 --window 2 --frame-elements 65536 \
  --progress 0.5 --progress-json "$work/progress.jsonl" >"$work/out" 2>&1
rc=$?
why=""
[ "$rc" -eq 0 ] || why="exit $rc"
report "$why" "a slow full sync with --progress 0.5" "$(grep -c '^      v0 ' "$work/out") progress lines"
check=$("$py" - "$work/progress.jsonl" <<'PY'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
if len(events) < 4:
    sys.exit(f"{len(events)} events")
if any(e["version"] != 0 for e in events):
    sys.exit("an event of a version that took under --progress")
phases = {"sending", "staging", "applying", "committing", "committed"}
for a, b in zip(events, events[1:]):
    if b["frames"] < a["frames"] or b["bytes"] < a["bytes"] or b["percent"] < a["percent"] or b["seconds"] <= a["seconds"]:
        sys.exit(f"went back: {a} then {b}")
if any(e["phase"] not in phases for e in events):
    sys.exit("unknown phase")
last = events[-1]
if not (last["last"] and last["phase"] == "committed" and last["percent"] == 100 and last["frames"] == last["frames_total"]):
    sys.exit(f"does not end committed at 100%: {last}")
if not any(0 < e["percent"] < 100 for e in events):
    sys.exit("no event between 0 and 100%")
print(f"{len(events)} events, {events[0]['percent']:.0f}% .. 100%, {last['frames_total']} frames")
PY
)
[ $? -eq 0 ] && report "" "--progress-json" "$check" || report "$check" "--progress-json" ""
finish
