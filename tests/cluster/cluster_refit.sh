#!/usr/bin/env bash
# The refit across a cluster on one machine (tests/cluster/cluster.sh): 2 trainer nodes and 2
# rollout nodes, 3 ranks each, the WAN between them shaped to 1 Gbit/s. Open MPI starts the ranks
# through its rsh agent, UCX carries the frames over TCP, `--relays -1` puts one relay on each
# rollout node from the real host names. Cases, each printed with its outcome:
#   healthy      every version committed and bit-exact; the WAN carries each version once;
#   node-dies    every process of a rollout node (its relay, its rollouts, Open MPI's daemon)
#                killed mid-apply; the same command resumes and finishes bit-exact;
#   root-relay   the root relay's node killed mid-stream; the same;
#   wan-outage   the WAN cut mid-stream for longer than --timeout: the job ends within its deadline
#                with an error naming the unreachable peer and its host; the WAN comes back; the
#                same command resumes and finishes bit-exact.
# After every case `dcr state` must find every rank on the last version, and nothing may be
# committed that not every rollout verified (the refit checks each commit; `dcr state` the rest).
# Usage: cluster_refit.sh DCR_BINARY [CASE...]   (exit 77, a skip, where namespaces cannot be made)
set -uo pipefail
dcr=$(realpath "$1")
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(healthy node-dies root-relay wan-outage)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cluster.sh"

timeout_s=8
steps=4
# Open MPI gives a silent node up after this long (jobs/net_env.sh); the WAN outage must end the
# job within 2 x --timeout + 30 s, the deadline dcr's own votes keep.
export DCR_DAEMON_TIMEOUT=$((2 * timeout_s))
work=$(mktemp -d /tmp/dcr-cluster-refit.XXXXXX)
cluster_up --name dcrt --trainer-nodes 2 --rollout-nodes 2 --wan-gbit 1
trap 'cluster_down; rm -rf "$work"' EXIT
# Ranks 0-5 train on the trainer nodes dcrt-n00/n01; rollout node dcrt-n02 holds ranks 6 (relay 0,
# the root) and 7, 8 (rollouts 0, 1); dcrt-n03 ranks 9 (relay 1) and 10, 11 (rollouts 2, 3): one
# TP-2 replica per rollout node.
run_job() {  # run_job LOG STATE-DIR [extra dcr refit options]: the job, bounded by mpirun --timeout
  local log=$1 state=$2
  shift 2
  mkdir -p "$state"
  cluster_mpirun --timeout 180 -np 12 --map-by ppr:3:node "$dcr" refit --model tiny \
    --trainers 6 --relays -1 --rollout-tp 2 --steps "$steps" --timeout "$timeout_s" --compare-full false \
    --compare-bcast false --state-dir "$state" --spool-dir "$state/spool" --json "$state/refit.json" "$@" >"$log" 2>&1
}
# stopped_on NODE: the pid of a process on NODE stopped by a `:stop` fault point (state T).
stopped_on() {
  local p
  for p in $(cluster_node_pids "$1"); do
    # /proc/PID/stat: "pid (comm) state ..."; dcr's comm has no spaces or parentheses.
    [ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" = T ] && { echo "$p"; return 0; }
  done
  return 1
}
wait_stopped() {  # wait_stopped NODE: up to 60 s
  local i
  for ((i = 0; i < 600; ++i)); do stopped_on "$1" >/dev/null && return 0; sleep 0.1; done
  return 1
}
finished_bitexact() {  # finished_bitexact LOG STATE-DIR
  grep -q "^v$steps .*verified" "$1" || { why="the run did not finish v$steps"; return 1; }
  "$dcr" state "$2" >"$2.state" 2>&1 && grep -q "on committed version $steps" "$2.state" ||
    { why="ranks not all on version $steps: $(tail -n 3 "$2.state" | tr '\n' ' ')"; return 1; }
  python3 - "$2/refit.json" <<'EOF' || { why="refit.json: not every version committed and bit-exact"; return 1; }
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
sys.exit(0 if steps and all(s["committed"] and s["bitexact"] for s in steps) else 1)
EOF
}
# half_way_check STATE-DIR: after a fault in version 2, every journal is on version 1 (nothing
# committed half-way, nobody ahead or behind).
half_way_check() {
  "$dcr" state "$1" >"$1.dead.state" 2>&1
  grep -q "all ranks on committed version 1$" "$1.dead.state" ||
    { why="after the fault: $(tail -n 1 "$1.dead.state")"; return 1; }
}
# ranks_left: the dcr processes still running on any node (node:pid ...).
ranks_left() {
  local n p
  for n in "${CLUSTER_NODES[@]}"; do
    for p in $(cluster_node_pids "$n"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dcr ] && echo -n "$n:$p "; done
  done
}
wait_no_ranks() {  # up to 30 s: the ranks cut off by the outage end on their own once it is over
  local i
  for ((i = 0; i < 60; ++i)); do [ -z "$(ranks_left)" ] && return 0; sleep 0.5; done
  return 1
}

case_healthy() {
  local state=$work/healthy before after wire
  before=$(cluster_wan_bytes)
  run_job "$state.log" "$state" || { why="exit $?: $(tail -n 2 "$state.log" | tr '\n' ' ')"; return 1; }
  after=$(cluster_wan_bytes)
  finished_bitexact "$state.log" "$state" || return 1
  grep -q -- "-> 2 relays (fanout 2, depth 2) -> 4 rollouts" "$state.log" &&
    grep -q "relay 0 (root) on dcrt-n02, relay 1 on dcrt-n03; rollouts on dcrt-n02, dcrt-n03$" "$state.log" ||
    { why="not one relay per rollout node: $(grep -m2 'relay' "$state.log" | tr '\n' ' ')"; return 1; }
  wire=$(python3 -c 'import json,sys; print(sum(s["wire_bytes"] for s in json.load(open(sys.argv[1]))["steps"]))' "$state/refit.json")
  # One copy of each version crosses the WAN (the root relay forwards to the other rollout node
  # inside the rollout cluster); the rest is MPI and UCX control traffic.
  local ratio
  ratio=$(awk -v w=$((after - before)) -v f="$wire" 'BEGIN { printf "%.2f", w / f }')
  awk -v r="$ratio" 'BEGIN { exit !(r >= 1.0 && r < 1.6) }' ||
    { why="the WAN carried $((after - before)) bytes for $wire wire bytes (${ratio}x; one copy is 1.0-1.6x)"; return 1; }
  why="v0-v$steps committed and bit-exact, 2 relays on dcrt-n02/n03, WAN bytes ${ratio}x the frames' wire bytes"
}

# kill_node_case NAME POINT NODE: stops the rank at POINT, kills every process of NODE there, then
# runs the same command again.
kill_node_case() {
  local state=$work/$1 point=$2 node=$3 job
  run_job "$state.run1.log" "$state" --fail-at "$point" &
  job=$!
  wait_stopped "$node" || { why="no rank stopped at $point"; kill "$job"; wait "$job"; return 1; }
  cluster_kill_node "$node" KILL
  wait "$job" && { why="the job succeeded with node $node dead"; return 1; }
  half_way_check "$state" || return 1
  run_job "$state.run2.log" "$state" --fail-at "$point" || { why="the rerun failed: $(tail -n 2 "$state.run2.log" | tr '\n' ' ')"; return 1; }
  finished_bitexact "$state.run2.log" "$state" || return 1
  why="killed $node at $point: every journal on v1; rerun: $(grep -o "resumed at committed version [0-9]*" "$state.run2.log" || echo "fresh start"), finished bit-exact"
}
case_node-dies() { kill_node_case node-dies rollout:2:apply:2:stop dcrt-n03; }
case_root-relay() { kill_node_case root-relay relay:0:stream:2:stop dcrt-n02; }

case_wan-outage() {
  local state=$work/wan-outage job start took deadline=$((2 * timeout_s + 30))
  run_job "$state.run1.log" "$state" --fail-at trainer:0:stream:2:stop &
  job=$!
  local pid
  wait_stopped dcrt-n00 || { why="trainer 0 did not stop mid-stream"; kill "$job"; wait "$job"; return 1; }
  pid=$(stopped_on dcrt-n00)
  cluster_wan down
  start=$SECONDS
  kill -CONT "$pid"
  while kill -0 "$job" 2>/dev/null && ((SECONDS - start < deadline + 30)); do sleep 0.5; done
  took=$((SECONDS - start))
  kill -0 "$job" 2>/dev/null && { why="the job still runs ${took} s after the WAN went down"; cluster_wan up; kill "$job"; wait "$job"; return 1; }
  wait "$job" && { why="the job succeeded across a dead WAN"; cluster_wan up; return 1; }
  cluster_wan up
  ((took <= deadline)) || { why="the job took ${took} s to end (deadline ${deadline} s)"; return 1; }
  wait_no_ranks || { why="ranks still run after the job ended: $(ranks_left)"; return 1; }
  half_way_check "$state" || return 1
  local error
  # Who reports first: Open MPI (the node it lost) or a rank (the peer it waited for, and its host).
  error=$(grep -A3 "lost communication with a remote daemon" "$state.run1.log" | grep -m1 -o "Remote daemon: .* on node dcrt-n0[23]" ||
          grep -m1 -o "waiting for frame [0-9]* of [0-9]* from [^:]*\|sending to rank [0-9]* ([a-z]* [0-9]* on dcrt-n[0-9]*)" "$state.run1.log")
  [ -n "$error" ] || { why="no error naming the unreachable peer: $(grep -m2 ERROR "$state.run1.log" | tr '\n' ' ')"; return 1; }
  run_job "$state.run2.log" "$state" --fail-at trainer:0:stream:2:stop || { why="the rerun failed: $(tail -n 2 "$state.run2.log" | tr '\n' ' ')"; return 1; }
  finished_bitexact "$state.run2.log" "$state" || return 1
  why="WAN down mid-stream of v2: ended in ${took} s (deadline ${deadline} s) with \"$error\", every journal on v1; after the WAN came back the rerun $(grep -o "resumed at committed version [0-9]*" "$state.run2.log" || echo "started fresh") and finished bit-exact"
}

passed=0
failed=0
for c in "${cases[@]}"; do
  why=""
  if "case_$c"; then
    printf '  ok    %-11s %s\n' "$c" "$why"
    passed=$((passed + 1))
  else
    printf '  FAIL  %-11s %s\n' "$c" "$why"
    tail -n 15 "$work/$c"*.log 2>/dev/null | sed 's/^/        /'
    failed=$((failed + 1))
  fi
done
echo "cluster refit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
