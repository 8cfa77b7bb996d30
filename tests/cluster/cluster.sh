#!/usr/bin/env bash
# A cluster on one machine. Each "node" is a network namespace with its own host name; trainer
# nodes hang on one bridge, rollout nodes on another, and the two bridges are joined by one veth
# pair, the WAN, shaped with tbf to a given rate in each direction. Bridges and the WAN live in a
# switch namespace of their own, so nothing is added to the host's network. Addresses come from
# 198.18.0.0/15 (RFC 2544, benchmarking only): trainer node i is 198.18.1.(10+i), rollout node j
# 198.18.2.(10+j), all in 198.18.0.0/16. Nodes are named <name>-n00, -n01, ...: the trainer nodes,
# then the rollout nodes. There is no netem in this kernel: the WAN has a rate but no added
# round-trip delay (the RTT is that of veth, tens of microseconds).
# A node is entered through agent.sh, the cluster's ssh (Open MPI's rsh agent too): besides its
# network and host name each login gets the node's own boot id, because UCX takes processes with
# one boot id for one host and would otherwise move frames between nodes through shared memory
# (sysv, cma), past the WAN.
#
# Sourced by every cluster test and benchmark:
#   source tests/cluster/cluster.sh
#   cluster_up --trainer-nodes 2 --rollout-nodes 2 --wan-gbit 1   # tears down on exit, also on Ctrl-C
#   cluster_mpirun -np 8 --map-by ppr:2:node build/dcr refit ...   # mpirun on the head node
# Or run as a command, which brings the cluster up, runs COMMAND on the head node and tears down:
#   tests/cluster/cluster.sh [--trainer-nodes N] [--rollout-nodes M] [--wan-gbit R] [--name P] -- COMMAND...
#
# After cluster_up: CLUSTER_NODES (head node first), CLUSTER_TRAINER_NODES, CLUSTER_ROLLOUT_NODES,
# CLUSTER_DIR (hosts: the /etc/hosts of every node; hostfile; env: the settings a job on this
# cluster needs, sourced by cluster_exec; it carries the caller's UCX_* settings), CLUSTER_NET (the nodes' subnet), CLUSTER_SWITCH (the
# namespace of the bridges and the WAN: wan-t carries trainer -> rollout traffic, wan-r the other
# way), CLUSTER_WAN_GBIT, CLUSTER_ADDRESS[node].
# Exit status 77 (and a message) where namespaces cannot be made: not root, or no permission.

CLUSTER_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER_NET=198.18.0.0/16
CLUSTER_STATE=/run/dcr-cluster

cluster_log() { printf '[cluster %3ds] %s\n' "$SECONDS" "$*" >&2; }
cluster_die() { printf '[cluster %3ds] ERROR: %s\n' "$SECONDS" "$*" >&2; exit "${2:-1}"; }

# Exits 77 unless this process may create namespaces (root with CAP_SYS_ADMIN and CAP_NET_ADMIN).
cluster_require_namespaces() {
  [ "$(id -u)" -eq 0 ] || cluster_die "skipped: network namespaces need root" 77
  local probe="dcr-probe-$$"
  ip netns add "$probe" 2>/dev/null || cluster_die "skipped: 'ip netns add' is not permitted here" 77
  ip netns del "$probe"
  command -v tc >/dev/null || cluster_die "skipped: tc (iproute2) is missing" 77
}

# cluster_up [--name P] [--trainer-nodes N] [--rollout-nodes M] [--wan-gbit R]
cluster_up() {
  local name=dcrc trainers=2 rollouts=2 gbit=1
  while [ $# -gt 0 ]; do
    case $1 in
      --name) name=$2; shift 2 ;;
      --trainer-nodes) trainers=$2; shift 2 ;;
      --rollout-nodes) rollouts=$2; shift 2 ;;
      --wan-gbit) gbit=$2; shift 2 ;;
      *) cluster_die "cluster_up: unknown option $1" ;;
    esac
  done
  [[ $name =~ ^[a-z][a-z0-9]{0,7}$ ]] || cluster_die "--name '$name': 1-8 lower-case letters and digits, a letter first"
  [[ $trainers =~ ^[1-9][0-9]?$ && $rollouts =~ ^[1-9][0-9]?$ ]] ||
    cluster_die "--trainer-nodes and --rollout-nodes must be 1-99 (got $trainers, $rollouts)"
  [[ $gbit =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v g="$gbit" 'BEGIN { exit !(g > 0 && g <= 100) }' ||
    cluster_die "--wan-gbit '$gbit': a rate in Gbit/s, above 0 and at most 100"
  cluster_require_namespaces
  CLUSTER_NAME=$name
  CLUSTER_SWITCH=$name-sw
  CLUSTER_DIR=$CLUSTER_STATE/$name
  CLUSTER_TRAINER_NODES=() CLUSTER_ROLLOUT_NODES=()
  local i
  # Node names number the trainer nodes first, as Slurm and mpirun order nodes by name: ranks fill
  # them in that order, and the first ranks are the trainers.
  for ((i = 0; i < trainers + rollouts; ++i)); do
    if ((i < trainers)); then CLUSTER_TRAINER_NODES+=("$(printf '%s-n%02d' "$name" "$i")")
    else CLUSTER_ROLLOUT_NODES+=("$(printf '%s-n%02d' "$name" "$i")"); fi
  done
  CLUSTER_NODES=("${CLUSTER_TRAINER_NODES[@]}" "${CLUSTER_ROLLOUT_NODES[@]}")
  cluster_refuse_taken
  mkdir -p "$CLUSTER_DIR"
  cluster_share_cgroups
  trap cluster_down EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  cluster_make_switch
  cluster_set_wan_rate "$gbit"
  for ((i = 0; i < trainers; ++i)); do cluster_make_node "${CLUSTER_TRAINER_NODES[i]}" train "198.18.1.$((10 + i))"; done
  for ((i = 0; i < rollouts; ++i)); do cluster_make_node "${CLUSTER_ROLLOUT_NODES[i]}" roll "198.18.2.$((10 + i))"; done
  cluster_write_files
  cluster_check_reachable
  cluster_log "up: $trainers trainer node(s) ${CLUSTER_TRAINER_NODES[*]} | WAN ${gbit} Gbit/s | $rollouts rollout node(s) ${CLUSTER_ROLLOUT_NODES[*]}"
}

# Refuses to touch namespaces, /etc/netns entries or state that another cluster (or anything else)
# already uses under these names.
cluster_refuse_taken() {
  local taken=() n
  for n in "$CLUSTER_SWITCH" "${CLUSTER_NODES[@]}"; do
    [ -e "/run/netns/$n" ] && taken+=("network namespace $n")
    [ -e "/etc/netns/$n" ] && taken+=("/etc/netns/$n")
  done
  [ -e "$CLUSTER_DIR" ] && taken+=("$CLUSTER_DIR")
  [ ${#taken[@]} -eq 0 ] || cluster_die "names already taken: ${taken[*]} (another cluster '$CLUSTER_NAME' is up, or one was killed: tests/cluster/cluster.sh --name $CLUSTER_NAME --down removes it)"
}

cluster_make_switch() {
  ip netns add "$CLUSTER_SWITCH"
  local sw=(ip -n "$CLUSTER_SWITCH")
  "${sw[@]}" link set lo up
  "${sw[@]}" link add br-train type bridge
  "${sw[@]}" link add br-roll type bridge
  "${sw[@]}" link add wan-t type veth peer name wan-r
  "${sw[@]}" link set wan-t master br-train
  "${sw[@]}" link set wan-r master br-roll
  local l
  for l in br-train br-roll wan-t wan-r; do "${sw[@]}" link set "$l" up; done
}

# cluster_set_wan_rate GBIT: the WAN carries GBIT Gbit/s each way (tbf on both ends' egress). The
# bucket holds 4 ms of traffic (at least 64 KiB), the queue 50 ms.
cluster_set_wan_rate() {
  local gbit=$1 burst dev
  burst=$(awk -v g="$gbit" 'BEGIN { b = g * 1e9 / 8 * 0.004; if (b < 65536) b = 65536; printf "%d", b }')
  for dev in wan-t wan-r; do
    ip netns exec "$CLUSTER_SWITCH" tc qdisc replace dev "$dev" root tbf rate "${gbit}gbit" burst "$burst" latency 50ms
  done
  CLUSTER_WAN_GBIT=$gbit
}

# cluster_wan down|up: cuts the WAN (both ends) or restores it; nodes and their addresses stay.
cluster_wan() {
  ip -n "$CLUSTER_SWITCH" link set wan-t "$1"
  ip -n "$CLUSTER_SWITCH" link set wan-r "$1"
  cluster_log "WAN $1"
}

# cluster_wan_bytes: the bytes the WAN has carried trainer -> rollout side (wan-t's tbf counter).
cluster_wan_bytes() { ip netns exec "$CLUSTER_SWITCH" tc -s qdisc show dev wan-t | awk '/Sent/ { print $2; exit }'; }

# cluster_make_node NAME BRIDGE-SUFFIX ADDRESS
cluster_make_node() {
  local node=$1 side=$2 address=$3
  ip netns add "$node"
  ip -n "$CLUSTER_SWITCH" link add "$node" type veth peer name eth0 netns "$node"
  ip -n "$CLUSTER_SWITCH" link set "$node" master "br-$side" up
  ip -n "$node" link set lo up
  ip -n "$node" addr add "$address/16" dev eth0
  ip -n "$node" link set eth0 up
  CLUSTER_ADDRESS[$node]=$address
}
declare -gA CLUSTER_ADDRESS

# `ip netns exec` mounts a sysfs of the node's own, without the host's cgroup file systems under
# /sys/fs/cgroup (slurmd needs them): CLUSTER_DIR/cgroup holds them for agent.sh to mount back.
cluster_share_cgroups() {
  mountpoint -q /sys/fs/cgroup || return 0
  mkdir -p "$CLUSTER_DIR/cgroup"
  mount --rbind /sys/fs/cgroup "$CLUSTER_DIR/cgroup"
  mount --make-rslave "$CLUSTER_DIR/cgroup"
}

# cluster_remove_dir DIR: unmounts DIR/cgroup (never deleting through it), then removes DIR.
cluster_remove_dir() {
  if mountpoint -q "$1/cgroup"; then umount -R "$1/cgroup" || umount -R -l "$1/cgroup"; fi
  mountpoint -q "$1/cgroup" && { cluster_log "could not unmount $1/cgroup: leaving $1"; return 1; }
  rm -rf "$1"
}

# hosts (every node's /etc/hosts, through /etc/netns/<node>/hosts, which `ip netns exec` mounts
# over /etc/hosts), hostfile, and env: what a job on this cluster needs (sourced by cluster_exec).
cluster_write_files() {
  local node
  {
    echo "127.0.0.1 localhost"
    for node in "${CLUSTER_NODES[@]}"; do echo "${CLUSTER_ADDRESS[$node]} $node"; done
  } >"$CLUSTER_DIR/hosts"
  for node in "${CLUSTER_NODES[@]}"; do
    mkdir -p "/etc/netns/$node"
    cp "$CLUSTER_DIR/hosts" "/etc/netns/$node/hosts"
    echo "$node" >"/etc/netns/$node/hostname"
    mkdir -p "$CLUSTER_DIR/$node"
    cat /proc/sys/kernel/random/uuid >"$CLUSTER_DIR/$node/boot_id"
  done
  : >"$CLUSTER_DIR/hostfile"
  for node in "${CLUSTER_NODES[@]}"; do echo "$node slots=${CLUSTER_SLOTS:-8}" >>"$CLUSTER_DIR/hostfile"; done
  # UCX settings of the caller (UCX_TLS, UCX_TCP_TX_SEG_SIZE, ...) hold on every node, as a site's
  # UCX configuration would; net_env.sh's DCR_MPIRUN_X then carries them to the ranks.
  local var
  for var in $(compgen -e | grep -E '^UCX_' || true); do printf 'export %s=%q\n' "$var" "${!var}"; done >"$CLUSTER_DIR/env"
  # Open MPI reaches the other nodes through its rsh agent (our ssh); the rest is what any cluster
  # job would set: root, more ranks than cores, the network the job uses (jobs/net_env.sh).
  cat >>"$CLUSTER_DIR/env" <<EOF
export OMPI_MCA_plm=rsh OMPI_MCA_plm_rsh_agent=$CLUSTER_LIB_DIR/agent.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export DCR_NET=$CLUSTER_NET${DCR_DAEMON_TIMEOUT:+ DCR_DAEMON_TIMEOUT=$DCR_DAEMON_TIMEOUT}
source $(cd "$CLUSTER_LIB_DIR/../.." && pwd)/jobs/net_env.sh
EOF
}

# The head node reaches every node by name and every node the head, across the WAN too (a fresh
# bridge port may drop the first packets: up to 10 tries, 1 s each).
cluster_check_reachable() {
  local head=${CLUSTER_NODES[0]} node
  for node in "${CLUSTER_NODES[@]:1}"; do
    cluster_ping "$head" "$node" && cluster_ping "$node" "$head" || cluster_die "node $head and node $node cannot reach each other"
  done
}
cluster_ping() {
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    cluster_exec "$1" ping -c 1 -W 1 "$2" >/dev/null 2>&1 && return 0
  done
  return 1
}

# cluster_login NODE SCRIPT: runs the bash SCRIPT on NODE as a user logged in there would (through
# agent.sh: its network, host name and /etc/hosts, a fresh environment), in this directory (the
# file system is shared, as a cluster's would be).
cluster_login() { "$CLUSTER_LIB_DIR/agent.sh" "$1" "cd $(printf %q "$PWD") && $2"; }
cluster_words() { printf '%q ' "$@"; }

# cluster_on NODE COMMAND...: runs COMMAND on NODE.
cluster_on() { cluster_login "$1" "exec $(cluster_words "${@:2}")"; }

# cluster_exec NODE COMMAND...: the same with the cluster's job settings (CLUSTER_DIR/env).
cluster_exec() { cluster_login "$1" "source $(printf %q "$CLUSTER_DIR/env") && exec $(cluster_words "${@:2}")"; }

# cluster_mpirun ARGS...: mpirun on the head node with the cluster's hostfile. As the job scripts
# do, it carries the job's UCX_* and DCR_* settings to every rank (DCR_MPIRUN_X, jobs/net_env.sh).
cluster_mpirun() {
  # shellcheck disable=SC2016  # DCR_MPIRUN_X is expanded on the head node, after its env is sourced
  cluster_login "${CLUSTER_NODES[0]}" "source $(printf %q "$CLUSTER_DIR/env") && exec mpirun --hostfile \
    $(printf %q "$CLUSTER_DIR/hostfile") \"\${DCR_MPIRUN_X[@]}\" $(cluster_words "$@")"
}

# cluster_node_pids NODE: the processes running on NODE.
cluster_node_pids() { ip netns pids "$1" 2>/dev/null; }

# cluster_kill_node NODE [SIGNAL]: kills every process on NODE (the node "dies").
cluster_kill_node() {
  local pids
  pids=$(cluster_node_pids "$1")
  [ -n "$pids" ] || return 0
  # shellcheck disable=SC2086
  kill -"${2:-KILL}" $pids 2>/dev/null || true
}

cluster_down() {
  local rc=$? node
  set +e
  [ -n "${CLUSTER_NAME:-}" ] || return "$rc"
  for node in "${CLUSTER_NODES[@]}"; do cluster_kill_node "$node" TERM; done
  sleep 0.5
  for node in "${CLUSTER_NODES[@]}"; do
    cluster_kill_node "$node" KILL
    ip netns del "$node" 2>/dev/null
    rm -rf "/etc/netns/$node"
  done
  ip netns del "$CLUSTER_SWITCH" 2>/dev/null
  cluster_remove_dir "$CLUSTER_DIR"
  rmdir "$CLUSTER_STATE" 2>/dev/null
  cluster_log "down: removed ${CLUSTER_NODES[*]} $CLUSTER_SWITCH"
  CLUSTER_NAME=
  return "$rc"
}

# Removes what a killed run of cluster NAME left (its namespaces, /etc/netns entries, state).
cluster_remove_leftovers() {
  local name=$1 n
  for n in $(ip netns list | awk '{print $1}' | grep -E "^$name-(sw|n[0-9]+)$"); do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$n"
    cluster_log "removed network namespace $n"
  done
  rm -rf /etc/netns/"$name"-n[0-9]*
  [ ! -d "$CLUSTER_STATE/$name" ] || cluster_remove_dir "$CLUSTER_STATE/$name"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  args=()
  name=dcrc
  down=0
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in
      --down) down=1; shift ;;
      --name) name=$2; args+=("$1" "$2"); shift 2 ;;
      -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  [ "${1:-}" = -- ] && shift
  if [ "$down" -eq 1 ]; then cluster_remove_leftovers "$name"; exit 0; fi
  [ $# -gt 0 ] || cluster_die "usage: $0 [options] -- COMMAND... (COMMAND runs on the head node; --help)"
  cluster_up "${args[@]}"
  cluster_exec "${CLUSTER_NODES[0]}" "$@"
fi
