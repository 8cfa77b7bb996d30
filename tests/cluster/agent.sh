#!/usr/bin/env bash
# The cluster's ssh: Open MPI's rsh launcher (plm_rsh_agent) runs `agent.sh [options] HOST COMMAND...`
# to start its daemon on HOST. As ssh would, this runs the words of COMMAND, joined by spaces, in a
# fresh login environment on HOST: its network namespace, its host name, its /etc/hosts. Nothing of
# the caller's environment goes along (as with ssh), so a job must export what its ranks need.
set -euo pipefail
while [[ ${1:-} == -* ]]; do shift; done  # ssh-style options (-x, -o ...): none are needed here
[ $# -ge 2 ] || { echo "usage: $0 [options] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
[ -e "/run/netns/$host" ] || { echo "agent.sh: no such node: $host" >&2; exit 255; }
node_dir=/run/dcr-cluster/${host%-*}
[ -s "$node_dir/$host/boot_id" ] || { echo "agent.sh: $node_dir/$host/boot_id is missing (not a node of tests/cluster/cluster.sh?)" >&2; exit 255; }
# `ip netns exec` gives each login a mount namespace of its own. There the node gets a boot id of
# its own (UCX takes processes with one boot id for one host, and would use shared memory between
# nodes), the host's cgroup file systems back (cluster.sh), and in a UTS namespace its host name.
# shellcheck disable=SC2016  # expanded by the inner bash
exec ip netns exec "$host" unshare --uts env -i HOME="${HOME:-/root}" USER="$(id -un)" LOGNAME="$(id -un)" \
  SHELL=/bin/bash PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -c 'mount --bind "$2/$1/boot_id" /proc/sys/kernel/random/boot_id &&
           { ! mountpoint -q "$2/cgroup" || mount --rbind "$2/cgroup" /sys/fs/cgroup; } &&
           hostname "$1" && eval "$3"' agent "$host" "$node_dir" "$*"
