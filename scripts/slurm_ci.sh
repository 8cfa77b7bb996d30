#!/usr/bin/env bash
# Slurm CI check: the refit job on a real (one-node) Slurm cluster on this machine.
#   1. installs Debian's slurm-wlm and munge if missing (no service is started by the packages);
#   2. starts munged, writes /etc/slurm/slurm.conf for this node and starts slurmctld and slurmd
#      as root, without systemd or cgroups, and waits for the node to be idle;
#   3. submits jobs/refit.sbatch unchanged, as a user would, on one node with 5 tasks and
#      CONFIG=configs/refit_slurm_ci.ini, waits for it and checks results/job-<id>/refit.json
#      (every step committed and bit-exact);
#   4. stops the daemons it started and removes its slurm.conf (restoring one that was there).
# Run as root from anywhere after scripts/build.sh; exits non-zero with a message on any failure.
# Extra arguments go to the job script, i.e. to `dcr refit` (e.g. `--transport mpi`).
# Every wait has a timeout, and all of them together are cut to a budget (SLURM_CI_LIMIT, default
# 230 s) that leaves time for the cleanup (at most ~65 s), so a run ends within 5 minutes.
# Environment: SLURM_CI_LIMIT, SLURM_CI_JOB_TIMEOUT (the job's wait, default 200 s; a passing job
# takes 5-20 s here), SLURM_CI_CPUS (CPUs the node claims, default max(real, 8)),
# SLURM_CI_KEEP=1 (leave the cluster running for debugging; the next run cleans it up).
set -euo pipefail
cd "$(dirname "$0")/.."

limit=${SLURM_CI_LIMIT:-230}
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

jobid=""
cleanup() {
  local rc=$?
  set +e
  [ "$own_policy" -eq 0 ] || rm -f /usr/sbin/policy-rc.d
  if [ "${SLURM_CI_KEEP:-0}" = 1 ]; then
    log "SLURM_CI_KEEP=1: leaving munged, slurmctld, slurmd and $conf in place"
  else
    if [ -n "$jobid" ] && timeout 10 squeue -h -j "$jobid" 2>/dev/null | grep -q .; then
      log "cancelling job $jobid"
      timeout 10 scancel "$jobid"
      wait_for 20 "job $jobid to leave the queue" bash -c "! timeout 5 squeue -h -j $jobid | grep -q ." || true
    fi
    stop slurmd "$state/slurmd.pid"
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
  if [ "$rc" -eq 0 ]; then log "PASSED in ${SECONDS}s"; else log "FAILED (exit $rc) after ${SECONDS}s" >&2; fi
  exit "$rc"
}

[ "$(id -u)" -eq 0 ] || fail "run as root: it installs packages and starts the Slurm and munge daemons"
[ -x build/dcr ] || fail "build/dcr is missing: run scripts/setup.sh and scripts/build.sh first"
command -v mpirun >/dev/null || fail "mpirun is missing: run scripts/setup.sh first"
[ -f "$config" ] || fail "$config is missing"

own_policy=0
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

# --- 2b. slurm.conf ----------------------------------------------------------------------------
# Daemons left by an earlier run that was killed: cancel their jobs, stop them (ours only, by pid
# file).
if [ -n "$(pid_of slurmctld "$state/slurmctld.pid")" ] && [ -f "$conf" ] && grep -qF "$conf_mark" "$conf"; then
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
# The node: its memory as slurmd sees it, and at least 8 CPUs. Slurm refuses a job whose tasks on
# a node outnumber the node's CPUs (even with --overcommit), and the job runs 5 ranks; on a 2-core
# machine the node therefore claims more CPUs than it has (slots, like mpirun --oversubscribe),
# and SlurmdParameters=config_overrides makes slurmd register these values instead of draining the
# node for the mismatch with the hardware.
real_cpus=$(slurmd -C 2>/dev/null | sed -n 's/^NodeName=.* CPUs=\([0-9]*\) .*/\1/p' | head -n1)
real_mem=$(slurmd -C 2>/dev/null | sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' | head -n1)
: "${real_cpus:=$(nproc)}" "${real_mem:=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024))}"
cpus=${SLURM_CI_CPUS:-$((real_cpus > 8 ? real_cpus : 8))}
hw="CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$real_mem"
if [ -f "$conf" ] && ! grep -qF "$conf_mark" "$conf"; then
  log "saving the existing $conf as $conf_backup (restored at the end)"
  mv -f "$conf" "$conf_backup"
fi
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
cat >"$conf" <<EOF
$conf_mark (one-node CI cluster); removed when it ends.
ClusterName=dcr-ci
SlurmctldHost=$host(127.0.0.1)
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
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldTimeout=60
SlurmdTimeout=120
InactiveLimit=0
KillWait=10
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
log "wrote $conf: node $host ($hw; $real_cpus real CPUs)"

# --- 2c. slurmctld and slurmd ------------------------------------------------------------------
: >/var/log/slurm/slurmctld.log
: >/var/log/slurm/slurmd.log
log "starting slurmctld and slurmd"
slurmctld -c || { show_logs /var/log/slurm/slurmctld.log; fail "slurmctld did not start"; }
wait_for 30 "slurmctld to answer" bash -c 'timeout 5 scontrol ping | grep -q UP' ||
  { show_logs /var/log/slurm/slurmctld.log; fail "slurmctld does not answer"; }
slurmd -c || { show_logs /var/log/slurm/slurmd.log; fail "slurmd did not start"; }
node_idle() { timeout 5 sinfo -h -n "$host" -o %t | grep -qx 'idle'; }
wait_for "$node_timeout" "node $host to be idle" node_idle || {
  sinfo -N -l >&2 || true
  scontrol show node "$host" >&2 || true
  show_logs /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log
  fail "node $host is not idle after ${node_timeout}s"
}
log "node $host is idle: $(sinfo -h -o '%P %D nodes %c cpus %m MB')"

# --- 3. the job --------------------------------------------------------------------------------
# The job script is submitted unchanged. Command-line flags override its #SBATCH lines (2 nodes x
# 4 tasks): one node, 5 tasks (2 trainers, 1 relay, 2 rollouts), a time limit inside the CI wait,
# the Slurm log under results/ (ignored by git).
# Root's mpirun needs the OMPI_ALLOW_RUN_AS_ROOT pair; --export=ALL carries it into the job.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p results
sbatch_args=(--parsable --nodes=1 --ntasks=5 --ntasks-per-node=5 --time=00:04:00
  --output="results/slurm-ci-%j.out" --export="ALL,CONFIG=$config")
log "sbatch ${sbatch_args[*]} jobs/refit.sbatch $*"
# Job ids repeat across clusters (fresh state starts at 1), so results/job-<id>/ may hold an older
# run's files: only a refit.json written after this point counts.
touch "$state/submitted"
jobid=$(sbatch "${sbatch_args[@]}" jobs/refit.sbatch "$@") || fail "sbatch refused the job"
jobid=${jobid%%;*}
out="results/slurm-ci-$jobid.out"
log "submitted job $jobid; waiting for it (up to ${job_timeout}s)"
job_field() { timeout 10 scontrol show job -o "$jobid" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p"; }
job_done() {
  case "$(job_field JobState)" in
    PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | REQUEUE* | RESIZING | SIGNALING | STAGE_OUT | "") return 1 ;;
  esac
}
if ! wait_for "$job_timeout" "job $jobid" job_done; then
  scontrol show job "$jobid" >&2 || true
  show_logs "$out" /var/log/slurm/slurmd.log
  fail "job $jobid did not finish within ${job_timeout}s (state $(job_field JobState))"
fi
job_state=$(job_field JobState)
job_exit=$(job_field ExitCode)
log "job $jobid finished: $job_state, exit code $job_exit"
if [ "$job_state" != COMPLETED ]; then
  show_logs "$out" /var/log/slurm/slurmd.log
  fail "job $jobid ended $job_state (exit code $job_exit); its log is $out"
fi

result="results/job-$jobid/refit.json"
if [ ! -s "$result" ] || [ "$state/submitted" -nt "$result" ]; then
  show_logs "$out"
  fail "job $jobid completed but wrote no $result"
fi
if command -v python3 >/dev/null; then
  check=$(python3 - "$result" <<'EOF'
import json, sys
steps = json.load(open(sys.argv[1])).get("steps", [])
bad = [s.get("version") for s in steps if s.get("committed") is not True or s.get("bitexact") is not True]
if not steps or bad or not any(s.get("kind") == "delta" for s in steps):
    print("%d steps (%d delta); not both committed and bit-exact: versions %s"
          % (len(steps), sum(s.get("kind") == "delta" for s in steps), bad))
    sys.exit(1)
print("%d steps (1 full + %d delta), all committed and bit-exact" % (len(steps), len(steps) - 1))
EOF
  ) || { show_logs "$out"; fail "$result: $check"; }
else
  n=$(grep -c '"committed"' "$result" || true)
  c=$(grep -c '"committed": true' "$result" || true)
  b=$(grep -c '"bitexact": true' "$result" || true)
  if [ "$n" -lt 2 ] || [ "$c" -ne "$n" ] || [ "$b" -ne "$n" ]; then
    show_logs "$out"
    fail "$result: $n steps, $c committed, $b bit-exact"
  fi
  check="$n steps, all committed and bit-exact"
fi
log "job $jobid: $check ($result)"
sed -n '/^v[0-9]/p' "$out"
