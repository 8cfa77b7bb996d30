#!/usr/bin/env bash
# Slurm CI check: the job scripts on a real Slurm cluster on this machine.
#   scripts/slurm_ci.sh [--nodes N] [dcr refit options for the jobs]
#   1. installs Debian's slurm-wlm and munge if missing (no service is started by the packages);
#   2. starts munged, writes /etc/slurm/slurm.conf and starts slurmctld and slurmd as root, without
#      systemd or cgroups, and waits for the nodes to be idle. With --nodes 1 (the default) the
#      node is this machine. With --nodes N > 1 the nodes are network namespaces with host names of
#      their own (tests/cluster/cluster.sh: N/2 trainer nodes, the rest rollout nodes, a 1 Gbit/s
#      WAN between them): slurmctld runs on the first, one slurmd on each (each its own node name,
#      pid file, spool and log, %n in slurm.conf), all sharing this machine's munged through its
#      socket. Where namespaces cannot be made, --nodes N falls back to one node, and says so;
#   3. submits jobs/refit.sbatch unchanged, as a user would, with CONFIG=configs/refit_slurm_ci.ini
#      (one node: 5 tasks; N nodes: 3 tasks per node, 3N/2 trainers, so `--relays -1` puts one relay
#      on each rollout node), waits for it and checks results/job-<id>/refit.json (every step
#      committed and bit-exact). With N nodes it then submits jobs/restart_loop.sbatch with a rollout
#      killed (kill -9) mid-apply in the first attempt: the second attempt must resume and finish
#      bit-exact, every rank on the last version;
#   4. stops the daemons it started, removes its slurm.conf (restoring one that was there) and the
#      namespaces.
# Run as root from anywhere after scripts/build.sh; exits non-zero with a message on any failure.
# Every wait has a timeout, and all of them together are cut to a budget (SLURM_CI_LIMIT, default
# 230 s, or 330 s with several nodes) that leaves time for the cleanup (at most ~65 s).
# Environment: SLURM_CI_LIMIT, SLURM_CI_JOB_TIMEOUT (each job's wait, default 200 s; a passing job
# takes 5-30 s here), SLURM_CI_CPUS (CPUs each node claims, default max(real, 8)),
# SLURM_CI_KEEP=1 (leave the cluster running for debugging; the next run cleans it up; one node only).
set -euo pipefail
cd "$(dirname "$0")/.."

nodes=1
if [ "${1:-}" = --nodes ]; then nodes=$2; shift 2; fi
[[ $nodes =~ ^[1-9][0-9]?$ ]] && { [ "$nodes" -eq 1 ] || [ $((nodes % 2)) -eq 0 ]; } ||
  { echo "slurm_ci.sh: --nodes $nodes: 1, or an even number of nodes (half trainer, half rollout)" >&2; exit 2; }
limit=${SLURM_CI_LIMIT:-$((nodes > 1 ? 330 : 230))}
job_timeout=${SLURM_CI_JOB_TIMEOUT:-200}
node_timeout=60
state=/run/dcr-slurm-ci            # our pid files and markers
conf=/etc/slurm/slurm.conf
conf_backup=/etc/slurm/slurm.conf.before-dcr-slurm-ci
conf_mark="# dcr-slurm-ci: written by scripts/slurm_ci.sh"
config=configs/refit_slurm_ci.ini
host=$(hostname -s)

log() { printf '[slurm_ci %3ds] %s\n' "$SECONDS" "$*"; }
fail() { printf '[slurm_ci %3ds] FAILED: %s\n' "$SECONDS" "$*" >&2; exit 1; }
# Seconds a wait may take: its own limit, cut to what is left of the whole-run budget (at least 1).
budget() {
  local want=$1 left=$((limit - SECONDS))
  ((left > 1)) || left=1
  echo $((want < left ? want : left))
}
# wait_for SECONDS WHAT COMMAND...: polls COMMAND every second until it succeeds.
wait_for() {
  local secs what end
  secs=$(budget "$1"); what=$2; shift 2
  end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || { log "timed out after ${secs}s waiting for $what"; return 1; }
    sleep 1
  done
}
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
# pid_of NAME PIDFILE: the pid in PIDFILE if that process is alive and is NAME.
pid_of() {
  local pid
  pid=$(cat "$2" 2>/dev/null || true)
  alive "$pid" && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$1" ] && echo "$pid"
  return 0
}
# stop NAME PIDFILE: TERM, up to 15 s, then KILL; only the process named in PIDFILE.
stop() {
  local pid
  pid=$(pid_of "$1" "$2")
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 30); do alive "$pid" || break; sleep 0.5; done
  if alive "$pid"; then log "$1 (pid $pid) ignored TERM: killing it"; kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$2"
  log "stopped $1 (pid $pid)"
}
show_logs() {
  local f
  for f in "$@"; do
    [ -s "$f" ] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 40 "$f" >&2
  done
}
munge_ok() { munge -n -t 10 | unmunge; }
# on_head COMMAND...: a Slurm client command where slurmctld can be reached (with several nodes:
# on the head node, in a clean environment, as a user logged in there).
on_head() { if [ "$nodes" -gt 1 ]; then cluster_on "${CLUSTER_NODES[0]}" "$@"; else "$@"; fi; }

jobid=""
cleanup() {
  local rc=$?
  set +e
  [ "$own_policy" -eq 0 ] || rm -f /usr/sbin/policy-rc.d
  if [ "${SLURM_CI_KEEP:-0}" = 1 ]; then
    log "SLURM_CI_KEEP=1: leaving munged, slurmctld, slurmd and $conf in place"
  else
    if [ -n "$jobid" ] && on_head timeout 10 squeue -h -j "$jobid" 2>/dev/null | grep -q .; then
      log "cancelling job $jobid"
      on_head timeout 10 scancel "$jobid"
      wait_for 20 "job $jobid to leave the queue" on_head bash -c "! timeout 5 squeue -h -j $jobid | grep -q ." || true
    fi
    for n in "${slurm_nodes[@]}"; do stop slurmd "$(slurmd_pid_file "$n")"; done
    stop slurmctld "$state/slurmctld.pid"
    if [ -e "$state/munged.ours" ]; then
      stop munged /run/munge/munged.pid
      rm -f "$state/munged.ours"
    fi
    if [ -f "$conf" ] && grep -qF "$conf_mark" "$conf"; then
      if [ -f "$conf_backup" ]; then mv -f "$conf_backup" "$conf"; else rm -f "$conf"; fi
    fi
    rm -f "$state/submitted"
    rmdir "$state" 2>/dev/null
  fi
  [ "$nodes" -eq 1 ] || cluster_down
  if [ "$rc" -eq 0 ]; then log "PASSED in ${SECONDS}s"; else log "FAILED (exit $rc) after ${SECONDS}s" >&2; fi
  exit "$rc"
}

[ "$(id -u)" -eq 0 ] || fail "run as root: it installs packages and starts the Slurm and munge daemons"
[ -x build/dcr ] || fail "build/dcr is missing: run scripts/setup.sh and scripts/build.sh first"
command -v mpirun >/dev/null || fail "mpirun is missing: run scripts/setup.sh first"
[ -f "$config" ] || fail "$config is missing"

own_policy=0
slurm_nodes=("$host")
# With several nodes, each slurmd has its own pid file, log and spool: "-<node>" in their names
# ("-%n" in slurm.conf); one node keeps the plain names.
node_suffix() { if [ "$nodes" -gt 1 ]; then echo "-$1"; fi; }
slurmd_pid_file() { echo "$state/slurmd$(node_suffix "$1").pid"; }
slurmd_log() { echo "/var/log/slurm/slurmd$(node_suffix "$1").log"; }
mkdir -p "$state"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. packages -------------------------------------------------------------------------------
packages=(slurm-wlm slurmctld slurmd slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  # Keep the packages' maintainer scripts from starting munge/slurm services themselves: this
  # script starts (and stops) the daemons it needs. Only when the image has no policy already.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d && own_policy=1
  fi
  apt_rc=0
  apt_log=$(mktemp /tmp/slurm_ci-apt.XXXXXX)
  timeout "$(budget 120)" apt-get update -qq >"$apt_log" 2>&1 || apt_rc=$?
  if [ "$apt_rc" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive timeout "$(budget 150)" apt-get install -y -qq --no-install-recommends \
      -o Dpkg::Use-Pty=0 "${missing[@]}" >>"$apt_log" 2>&1 || apt_rc=$?
  fi
  [ "$own_policy" -eq 0 ] || rm -f /usr/sbin/policy-rc.d
  own_policy=0
  if [ "$apt_rc" -ne 0 ]; then
    show_logs "$apt_log"
    fail "apt-get could not install ${missing[*]} (exit $apt_rc; 124 = timed out)"
  fi
  rm -f "$apt_log"
  log "installed ${missing[*]}"
else
  log "packages already installed: ${packages[*]}"
fi

# --- 2a. munge ---------------------------------------------------------------------------------
key=/etc/munge/munge.key
install -d -o munge -g munge -m 0700 /etc/munge /var/log/munge
install -d -o munge -g munge -m 0711 /var/lib/munge
install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s "$key" ]; then
  log "creating the munge key $key"
  mungekey --create --keyfile="$key" 2>/dev/null ||
    dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
fi
chown munge:munge "$key"
chmod 0400 "$key"
if munge_ok >/dev/null 2>&1; then
  if [ -e "$state/munged.ours" ]; then log "munged already running (left by an earlier run): reusing it"
  else log "munged already running (not started here): using it and leaving it running"; fi
else
  rm -f "$state/munged.ours"
  log "starting munged"
  runuser -u munge -- munged || { show_logs /var/log/munge/munged.log; fail "munged did not start"; }
  touch "$state/munged.ours"
  wait_for 15 "munged to answer" munge_ok || { show_logs /var/log/munge/munged.log; fail "munged does not answer"; }
fi

# --- 2b. the nodes -----------------------------------------------------------------------------
if [ "$nodes" -gt 1 ]; then
  ( source tests/cluster/cluster.sh && cluster_require_namespaces ) || {
    log "network namespaces cannot be made here: running the one-node check instead of $nodes nodes"
    nodes=1
  }
fi
if [ "$nodes" -gt 1 ]; then
  source tests/cluster/cluster.sh
  cluster_up --name dcrs --trainer-nodes $((nodes / 2)) --rollout-nodes $((nodes / 2)) --wan-gbit 1
  trap cleanup EXIT  # cleanup ends with cluster_down
  slurm_nodes=("${CLUSTER_NODES[@]}")
  ctld_addr=${CLUSTER_ADDRESS[${CLUSTER_NODES[0]}]}
  node_addr() { echo "${CLUSTER_ADDRESS[$1]}"; }
  on_node() { local n=$1; shift; cluster_on "$n" "$@"; }
else
  ctld_addr=127.0.0.1
  node_addr() { echo 127.0.0.1; }
  on_node() { shift; "$@"; }
fi
head_node=${slurm_nodes[0]}

# --- 2c. slurm.conf ----------------------------------------------------------------------------
# Daemons left by an earlier one-node run that was killed: cancel their jobs, stop them (ours only,
# by pid file). (A killed cluster run leaves its namespaces: tests/cluster/cluster.sh --name dcrs
# --down removes them and what ran in them.)
if [ "$nodes" -eq 1 ] && [ -n "$(pid_of slurmctld "$state/slurmctld.pid")" ] && [ -f "$conf" ] && grep -qF "$conf_mark" "$conf"; then
  left=$(timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ' || true)
  if [ -n "${left// /}" ]; then
    log "cancelling jobs left by an earlier run: $left"
    # shellcheck disable=SC2086
    timeout 10 scancel $left || true
    # shellcheck disable=SC2016  # expanded by the inner bash
    wait_for 30 "the earlier jobs to end" bash -c '[ -z "$(timeout 5 squeue -h -o %i)" ]' || true
  fi
fi
stop slurmd "$state/slurmd.pid"
stop slurmctld "$state/slurmctld.pid"
for d in slurmctld slurmd; do
  others=$(pgrep -x "$d" | tr '\n' ' ' || true)
  [ -z "$others" ] || fail "a $d not started by this script is running (pid $others): stop it first"
done
# Each node: this machine's memory as slurmd sees it, and at least 8 CPUs. Slurm refuses a job
# whose tasks on a node outnumber the node's CPUs (even with --overcommit), and the job runs 5 ranks
# on one node; on a 2-core machine a node therefore claims more CPUs than it has (slots, like
# mpirun --oversubscribe), and SlurmdParameters=config_overrides makes slurmd register these values
# instead of draining the node for the mismatch with the hardware.
real_cpus=$(slurmd -C 2>/dev/null | sed -n 's/^NodeName=.* CPUs=\([0-9]*\) .*/\1/p' | head -n1)
real_mem=$(slurmd -C 2>/dev/null | sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' | head -n1)
: "${real_cpus:=$(nproc)}" "${real_mem:=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024))}"
cpus=${SLURM_CI_CPUS:-$((real_cpus > 8 ? real_cpus : 8))}
hw="CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$real_mem"
if [ -f "$conf" ] && ! grep -qF "$conf_mark" "$conf"; then
  log "saving the existing $conf as $conf_backup (restored at the end)"
  mv -f "$conf" "$conf_backup"
fi
per_node=$(node_suffix %n)
node_list=$(IFS=,; echo "${slurm_nodes[*]}")
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
{
  cat <<EOF
$conf_mark ($nodes-node CI cluster); removed when it ends.
ClusterName=dcr-ci
SlurmctldHost=$head_node($ctld_addr)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
# No cgroups, no systemd: plain process tracking, no task binding, no accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd$per_node.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd$per_node.log
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd$per_node
SlurmctldTimeout=60
SlurmdTimeout=120
InactiveLimit=0
KillWait=10
MinJobAge=300
EOF
  for n in "${slurm_nodes[@]}"; do echo "NodeName=$n NodeAddr=$(node_addr "$n") $hw State=UNKNOWN"; done
  echo "PartitionName=debug Nodes=$node_list Default=YES MaxTime=INFINITE State=UP"
} >"$conf"
log "wrote $conf: node(s) $node_list ($hw each; $real_cpus real CPUs)"

# --- 2d. slurmctld and slurmd ------------------------------------------------------------------
: >/var/log/slurm/slurmctld.log
for n in "${slurm_nodes[@]}"; do
  : >"$(slurmd_log "$n")"
  mkdir -p "/var/spool/slurmd$(node_suffix "$n")"
done
log "starting slurmctld on $head_node and slurmd on $node_list"
on_head slurmctld -c || { show_logs /var/log/slurm/slurmctld.log; fail "slurmctld did not start"; }
wait_for 30 "slurmctld to answer" on_head bash -c 'timeout 5 scontrol ping | grep -q UP' ||
  { show_logs /var/log/slurm/slurmctld.log; fail "slurmctld does not answer"; }
for n in "${slurm_nodes[@]}"; do
  on_node "$n" slurmd -c -N "$n" || { show_logs "$(slurmd_log "$n")"; fail "slurmd did not start on $n"; }
done
nodes_idle() { [ "$(on_head timeout 5 sinfo -h -N -n "$node_list" -o %t | grep -cx 'idle')" -eq ${#slurm_nodes[@]} ]; }
wait_for "$node_timeout" "node(s) $node_list to be idle" nodes_idle || {
  on_head sinfo -N -l >&2 || true
  show_logs /var/log/slurm/slurmctld.log "$(slurmd_log "$head_node")"
  fail "node(s) $node_list not all idle after ${node_timeout}s"
}
log "node(s) idle: $(on_head sinfo -h -o '%P %D nodes %c cpus %m MB')"

# --- 3. the jobs -------------------------------------------------------------------------------
job_field() { on_head timeout 10 scontrol show job -o "$jobid" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p"; }
job_done() {
  case "$(job_field JobState)" in
    PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | REQUEUE* | RESIZING | SIGNALING | STAGE_OUT | "") return 1 ;;
  esac
}
# run_job SCRIPT SBATCH-ARGS... -- JOB-ARGS...: submits SCRIPT unchanged, as a user on the head node
# would, waits for it and fails unless it COMPLETED; sets jobid and out (its Slurm log).
run_job() {
  local script=$1 sb=() args=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sb+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  args=("$@")
  log "sbatch ${sb[*]} $script ${args[*]}"
  # Job ids repeat across clusters (fresh state starts at 1), so results/job-<id>/ may hold an
  # older run's files: only results written after this point count.
  touch "$state/submitted"
  jobid=$(on_head sbatch --parsable -D "$PWD" "${sb[@]}" "$script" "${args[@]}") || fail "sbatch refused $script"
  jobid=${jobid%%;*}
  out="results/slurm-ci-$jobid.out"
  log "submitted job $jobid; waiting for it (up to ${job_timeout}s)"
  if ! wait_for "$job_timeout" "job $jobid" job_done; then
    on_head scontrol show job "$jobid" >&2 || true
    show_logs "$out" "$(slurmd_log "$head_node")"
    fail "job $jobid did not finish within ${job_timeout}s (state $(job_field JobState))"
  fi
  local job_state job_exit
  job_state=$(job_field JobState)
  job_exit=$(job_field ExitCode)
  log "job $jobid finished: $job_state, exit code $job_exit"
  if [ "$job_state" != COMPLETED ]; then
    show_logs "$out" "$(slurmd_log "$head_node")"
    fail "job $jobid ended $job_state (exit code $job_exit); its log is $out"
  fi
}
# check_steps FILE: every step in a refit.json committed and bit-exact, and at least one delta.
check_steps() {
  local result=$1 check
  if [ ! -s "$result" ] || [ "$state/submitted" -nt "$result" ]; then
    show_logs "$out"
    fail "job $jobid completed but wrote no $result"
  fi
  check=$(python3 - "$result" <<'EOF'
import json, sys
steps = json.load(open(sys.argv[1])).get("steps", [])
bad = [s.get("version") for s in steps if s.get("committed") is not True or s.get("bitexact") is not True]
if not steps or bad or not any(s.get("kind") == "delta" for s in steps):
    print("%d steps (%d delta); not both committed and bit-exact: versions %s"
          % (len(steps), sum(s.get("kind") == "delta" for s in steps), bad))
    sys.exit(1)
deltas = sum(s.get("kind") == "delta" for s in steps)
print("%d steps (%d full, %d delta), all committed and bit-exact" % (len(steps), len(steps) - deltas, deltas))
EOF
  ) || { show_logs "$out"; fail "$result: $check"; }
  log "job $jobid: $check ($result)"
}

# Command-line flags override the job scripts' #SBATCH lines: the tasks below, a time limit inside
# the CI wait, the Slurm log under results/ (ignored by git). Root's mpirun needs the
# OMPI_ALLOW_RUN_AS_ROOT pair; --export=ALL carries it into the job, and DCR_NET (jobs/net_env.sh)
# keeps Open MPI and UCX on the nodes' network.
mkdir -p results
common=(--time=00:04:00 --output="results/slurm-ci-%j.out")
exports="ALL,CONFIG=$config,OMPI_ALLOW_RUN_AS_ROOT=1,OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
if [ "$nodes" -eq 1 ]; then
  # 5 tasks: 2 trainers, 1 relay, 2 rollouts.
  run_job jobs/refit.sbatch "${common[@]}" --nodes=1 --ntasks=5 --ntasks-per-node=5 --export="$exports" -- "$@"
  check_steps "results/job-$jobid/refit.json"
  sed -n '/^v[0-9]/p' "$out"
  exit 0
fi
# N nodes x 3 tasks: the trainer nodes' ranks train, each rollout node holds one relay and one
# TP-2 replica.
trainers=$((3 * nodes / 2))
# The namespace nodes share this machine's cores, each claiming 8: Open MPI would bind every node's
# ranks to the same few cores (3 ranks spinning on one core stall each other's sends for minutes),
# so binding is off, as mpirun's oversubscribed launches have it.
exports="$exports,DCR_NET=$CLUSTER_NET,OMPI_MCA_hwloc_base_binding_policy=none"
run_job jobs/refit.sbatch "${common[@]}" --nodes="$nodes" --ntasks-per-node=3 --export="$exports" -- \
  --trainers "$trainers" "$@"
check_steps "results/job-$jobid/refit.json"
want="relay 0 (root) on ${CLUSTER_ROLLOUT_NODES[0]}"
for ((i = 1; i < nodes / 2; ++i)); do want="$want, relay $i on ${CLUSTER_ROLLOUT_NODES[i]}"; done
grep -qF -- "$want;" "$out" || { show_logs "$out"; fail "job $jobid: not one relay per rollout node ($want)"; }
sed -n '/^dcr refit: [0-9t]/p; /^v[0-9]/p' "$out"

# The restart loop: rollout 2 (on the second rollout node) is killed mid-apply of version 2 in the
# first attempt; the loop runs the same command again, which resumes from the shared state.
state_name=slurm-ci-$$
run_job jobs/restart_loop.sbatch "${common[@]}" --nodes="$nodes" --ntasks-per-node=3 \
  --export="$exports,STATE_NAME=$state_name,RETRY_DELAY=1,MAX_ATTEMPTS=3" -- \
  --trainers "$trainers" --fail-at rollout:2:apply:2 "$@"
grep -q "injected kill -9" "$out" && grep -q "^== attempt 2" "$out" ||
  { show_logs "$out"; fail "job $jobid: the first attempt was not killed and retried"; }
last=$(sed -n 's/^v\([0-9]*\) .*verified.*/\1/p' "$out" | tail -n 1)
grep -q "on committed version $last" "$out" || { show_logs "$out"; fail "job $jobid: ranks not all on version $last"; }
check_steps "results/job-$jobid/refit-2.json"
log "job $jobid: killed in attempt 1, $(grep -o "resumed at committed version [0-9]*" "$out" | head -n 1), every rank on version $last"
rm -rf "results/state-$state_name"
