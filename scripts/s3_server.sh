#!/usr/bin/env bash
# A real S3 server for the tests: radosgw (Ceph 16, Debian's packages) on a single-node cluster of
# one monitor and one OSD (memstore: objects live in the OSD's memory), no mgr, no cephx. Everything
# (config, data, logs, pid files, sockets) lives under DIR; nothing in /etc/ceph or /var/lib/ceph.
#
#   scripts/s3_server.sh start DIR [PORT]   a fresh cluster, radosgw on 127.0.0.1:PORT (7480; "auto": a
#                                           free one of 7000..7990, as tests running side by side need), a test
#                                           user; prints the AWS_* lines (also in DIR/env)
#   scripts/s3_server.sh stop DIR           stops all of it (the data goes with it)
#   scripts/s3_server.sh stop-rgw DIR       stops only radosgw (the cluster keeps the objects)
#   scripts/s3_server.sh start-rgw DIR      starts it again, waits until it answers
#
# The monitor listens on PORT+1, the OSD on PORT+2..PORT+9, so two servers with ports 10 apart do
# not meet. Needs ceph-mon ceph-osd radosgw ceph-common (scripts/setup.sh installs them).
set -euo pipefail

readonly ACCESS_KEY="DCRTESTACCESSKEY0001"
readonly SECRET_KEY="dcr-test-secret-key-0000000000000000000"
readonly REGION="us-east-1"
readonly WAIT_S=90

die() { echo "s3_server: $*" >&2; exit 1; }

usage() { die "usage: $0 start DIR [PORT] | stop DIR | stop-rgw DIR | start-rgw DIR"; }

need_tools() {
  local t
  for t in ceph ceph-mon ceph-osd radosgw radosgw-admin monmaptool curl; do
    command -v "$t" >/dev/null || die "'$t' is not installed (run scripts/setup.sh: ceph-mon ceph-osd radosgw ceph-common)"
  done
}

# The port radosgw serves, from DIR/port.
rgw_port() { cat "$DIR/port" 2>/dev/null || die "$DIR holds no server (no $DIR/port): run '$0 start $DIR' first"; }

write_conf() {
  local port=$1 fsid=$2
  cat >"$DIR/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$((port + 1))
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind port min = $((port + 2))
ms bind port max = $((port + 9))
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
keyring = $DIR/keyring
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
crash dir = $DIR/crash
mon cluster log file = $DIR/log/cluster.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false

[mon]
mon data = $DIR/mon/\$cluster-\$id
mon data avail warn = 1
mon data avail crit = 0
paxos propose interval = 0.01
paxos min wait = 0.001

[osd]
osd data = $DIR/osd/\$cluster-\$id
osd objectstore = memstore
memstore device bytes = 4294967296
osd op num threads per shard = 1
osd op num shards = 2

[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$port tcp_nodelay=1
rgw data = $DIR/rgw
rgw thread pool size = 32
# Background threads that only slow a stop (lifecycle, garbage collection of overwritten objects'
# tails, resharding, quota): a test server does without them.
rgw enable lc threads = false
rgw enable gc threads = false
rgw enable quota threads = false
rgw dynamic resharding = false
EOF
}

# Runs a ceph tool against DIR's cluster.
on_cluster() { "$@" -c "$DIR/ceph.conf"; }

# Starts a daemon of DIR's cluster holding none of our descriptors but stdin/out/err: one it
# inherited (a test's lock, a harness's pipe) would stay open as long as the daemon runs.
start_daemon() {
  (
    for fd in "/proc/$BASHPID/fd"/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
    done
    exec "$@" -c "$DIR/ceph.conf"
  ) </dev/null >>"$DIR/log/setup.log" 2>&1
}

start_mon() {
  local fsid=$1 port=$2
  monmaptool --create --fsid "$fsid" --addv a "v2:127.0.0.1:$((port + 1))" "$DIR/monmap" >/dev/null
  on_cluster ceph-mon --mkfs -i a --monmap "$DIR/monmap" >>"$DIR/log/setup.log" 2>&1 ||
    die "ceph-mon --mkfs failed (see $DIR/log/setup.log and $DIR/log/mon.a.log)"
  start_daemon ceph-mon -i a || die "ceph-mon did not start (see $DIR/log/mon.a.log)"
}

start_osd() {
  local uuid
  uuid=$(cat /proc/sys/kernel/random/uuid)
  mkdir -p "$DIR/osd/ceph-0"
  on_cluster ceph --connect-timeout 30 osd new "$uuid" >>"$DIR/log/setup.log" 2>&1 ||
    die "'ceph osd new' failed: the monitor does not answer (see $DIR/log/mon.a.log)"
  on_cluster ceph-osd -i 0 --mkfs --osd-uuid "$uuid" >>"$DIR/log/setup.log" 2>&1 ||
    die "ceph-osd --mkfs failed (see $DIR/log/setup.log and $DIR/log/osd.0.log)"
  start_daemon ceph-osd -i 0 || die "ceph-osd did not start (see $DIR/log/osd.0.log)"
}

# Waits until anything answers HTTP on the port (radosgw answers / with a bucket listing or 403).
wait_rgw() {
  local port=$1 deadline=$((SECONDS + WAIT_S))
  until curl -s -o /dev/null -m 2 "http://127.0.0.1:$port/"; do
    if [ -e "$DIR/run/client.rgw.a.pid" ] && ! alive client.rgw.a; then
      die "radosgw exited (see $DIR/log/client.rgw.a.log)"
    fi
    [ $SECONDS -lt $deadline ] || die "radosgw did not answer on 127.0.0.1:$port within ${WAIT_S}s (see $DIR/log/client.rgw.a.log)"
    sleep 0.1
  done
}

# Fails when something listens on 127.0.0.1:port (radosgw would not bind, and we would wait on it).
need_free_port() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    die "port $1 on 127.0.0.1 is in use (another server?): choose another PORT"
  fi
}

# A PORT in 7000..7990 whose ten ports are all free.
free_port() {
  local try p i
  for try in $(seq 50); do
    p=$((7000 + 10 * (RANDOM % 100)))
    for i in $(seq 0 9); do (exec 3<>"/dev/tcp/127.0.0.1/$((p + i))") 2>/dev/null && continue 2; done
    echo "$p"
    return
  done
  die "no free port range found in 7000..7999"
}

start_rgw() {
  local port
  port=$(rgw_port)
  alive client.rgw.a && die "radosgw of $DIR is already running (pid $(cat "$DIR/run/client.rgw.a.pid"))"
  need_free_port "$port"
  start_daemon radosgw -n client.rgw.a || die "radosgw did not start (see $DIR/log/client.rgw.a.log)"
  wait_rgw "$port"
}

make_user() {
  on_cluster radosgw-admin user create --uid=dcr-test --display-name="dcr tests" \
    --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >>"$DIR/log/setup.log" 2>&1 ||
    die "radosgw-admin user create failed (see $DIR/log/setup.log)"
}

# Whether the daemon `name` (mon.a, osd.0, client.rgw.a) of DIR runs.
alive() {
  local pid
  pid=$(cat "$DIR/run/$1.pid" 2>/dev/null) || return 1
  alive_pids "$pid"
}

# Stops the daemons named (mon.a, osd.0, client.rgw.a) together with `signal`, then KILL after 5 s;
# returns once they are gone.
stop_daemons() {
  local signal=$1 name pid pids=()
  shift
  for name in "$@"; do
    pid=$(cat "$DIR/run/$name.pid" 2>/dev/null) || continue
    kill "-$signal" "$pid" 2>/dev/null && pids+=("$pid")
    rm -f "$DIR/run/$name.pid"
  done
  for _ in $(seq 100); do
    alive_pids "${pids[@]}" || return 0
    sleep 0.05
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for _ in $(seq 40); do alive_pids "${pids[@]}" || return 0; sleep 0.05; done
  die "could not stop pids ${pids[*]}"
}

# Whether any of the pids still runs. A zombie does not: the daemons are children of init, which
# may take seconds to reap them.
alive_pids() {
  local pid stat
  for pid in "$@"; do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    stat=${stat##*) }
    [ "${stat:0:1}" = Z ] || return 0
  done
  return 1
}

cmd_start() {
  local port=$1 fsid d begin=$SECONDS
  need_tools
  [ "$port" != auto ] || port=$(free_port)
  if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1024 ] || [ "$port" -gt 65000 ]; then
    die "port '$port' is not a number in 1024..65000"
  fi
  for d in mon.a osd.0 client.rgw.a; do
    alive "$d" && die "$DIR already runs a server ($d): run '$0 stop $DIR' first"
  done
  need_free_port "$port"
  need_free_port $((port + 1))
  rm -rf "$DIR/mon" "$DIR/osd" "$DIR/rgw" "$DIR/run" "$DIR/log" "$DIR/crash" "$DIR/monmap" "$DIR/env"
  mkdir -p "$DIR/mon" "$DIR/osd" "$DIR/rgw" "$DIR/run" "$DIR/log" "$DIR/crash"
  echo "$port" >"$DIR/port"
  : >"$DIR/keyring"
  fsid=$(cat /proc/sys/kernel/random/uuid)
  write_conf "$port" "$fsid"
  start_mon "$fsid" "$port"
  start_osd
  start_rgw
  make_user
  {
    echo "AWS_ENDPOINT_URL=http://127.0.0.1:$port"
    echo "AWS_ACCESS_KEY_ID=$ACCESS_KEY"
    echo "AWS_SECRET_ACCESS_KEY=$SECRET_KEY"
    echo "AWS_REGION=$REGION"
  } >"$DIR/env"
  cat "$DIR/env"
  echo "s3_server: radosgw up on 127.0.0.1:$port in $((SECONDS - begin))s (logs in $DIR/log)" >&2
}

# The data goes anyway (the next start makes a fresh cluster): no need to wait for a clean exit.
cmd_stop() { stop_daemons KILL client.rgw.a osd.0 mon.a; }

[ $# -ge 2 ] || usage
ACTION=$1
if [ "$ACTION" = start ]; then mkdir -p "$2"; fi
[ -d "$2" ] || die "no directory '$2' (nothing was started there)"
DIR=$(cd "$2" && pwd)
export CEPH_CONF="$DIR/ceph.conf"
case "$ACTION" in
  start) [ $# -le 3 ] || usage; cmd_start "${3:-7480}" ;;
  stop) cmd_stop ;;
  stop-rgw) stop_daemons TERM client.rgw.a ;;
  start-rgw) need_tools; start_rgw ;;
  *) usage ;;
esac
