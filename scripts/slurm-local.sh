#!/usr/bin/env bash
# A real single-node Slurm on this machine, for the cluster tests (docs/cluster.md).
#
#   scripts/slurm-local.sh start   # prints `export SLURM_CONF=...` (idempotent)
#   scripts/slurm-local.sh stop    # stops only the daemons this script started
#   scripts/slurm-local.sh env     # prints `export SLURM_CONF=...`
#
# Needs root and Debian's packages (bookworm: slurm 22.05.8):
#   apt-get install slurmctld slurmd slurm-client munge
# Everything lives in $STDMCP_SLURM_DIR (default /tmp/stdmcp-slurm): its own munge key and
# socket, a generated slurm.conf (proctrack/linuxproc, task/none, this machine's CPUs and
# memory, one partition `debug`), state, logs and pid files. Nothing under /etc is changed,
# and no daemon this script did not start is touched: clients find this cluster through
# SLURM_CONF. The controller and node daemon take the first pair of ports from 16817 on
# that nobody listens on (daemons of an earlier run this script cannot see, say in another
# PID namespace, may still hold 16817), each pair with its own state directory; a pid file
# counts only while its process is the daemon it names.
set -euo pipefail

DIR=${STDMCP_SLURM_DIR:-/tmp/stdmcp-slurm}
CONF=$DIR/slurm.conf

die() { echo "slurm-local: $*" >&2; exit 1; }

# ours NAME: the daemon NAME this script started runs (its pid file names a process called
# NAME: a pid reused by another process, or one from another PID namespace, does not count).
ours() {
  local f=$DIR/$1.pid pid
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ]
}

# busy PORT: something listens on PORT.
busy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_ports: the first pair PORT, PORT+1 from 16817 on where nobody listens.
free_ports() {
  local port=16817
  while busy "$port" || busy $((port + 1)); do
    port=$((port + 2))
    [ "$port" -lt 16917 ] || die "no free pair of ports in 16817-16916"
  done
  echo "$port"
}

write_conf() {
  local cpus mem host port=$1
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ { print int($2 / 1024) - 256 }' /proc/meminfo)
  cat >"$CONF" <<EOF
ClusterName=stdmcp
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge.socket
CredType=cred/munge
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$DIR/state-$port
SlurmdSpoolDir=$DIR/spool-$port
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=2
KillWait=2
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
MaxJobCount=10000
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [ "$(id -u)" = 0 ] || die "must run as root (slurmd runs jobs as their users)"
  for p in munged slurmctld slurmd sinfo; do
    command -v "$p" >/dev/null || die "$p not found: apt-get install slurmctld slurmd slurm-client munge"
  done
  mkdir -p "$DIR"
  chmod 700 "$DIR"
  export SLURM_CONF=$CONF
  if ! ours munged; then
    [ -s "$DIR/munge.key" ] || { head -c 128 /dev/urandom >"$DIR/munge.key"; chmod 400 "$DIR/munge.key"; }
    munged --force --socket="$DIR/munge.socket" --key-file="$DIR/munge.key" \
      --pid-file="$DIR/munged.pid" --log-file="$DIR/munged.log" --seed-file="$DIR/munged.seed"
  fi
  if ! ours slurmctld && ! ours slurmd; then
    local port
    port=$(free_ports)
    mkdir -p "$DIR/state-$port" "$DIR/spool-$port"
    write_conf "$port"
  fi
  ours slurmctld || slurmctld -f "$CONF"
  ours slurmd || slurmd -f "$CONF"
  # Up when the node is idle (or already running jobs).
  local i state
  for i in $(seq 1 300); do
    state=$(sinfo -h -N -o '%t' 2>/dev/null | head -1 || true)
    case $state in idle*|mix*|alloc*) echo "export SLURM_CONF=$CONF"; return 0 ;; esac
    sleep 0.1
  done
  die "the node did not come up (state '${state:-none}'); logs in $DIR"
}

stop() {
  local f pid i
  for f in slurmd slurmctld munged; do
    ours "$f" || continue
    pid=$(cat "$DIR/$f.pid")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    rm -f "$DIR/$f.pid"
  done
  return 0
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) die "usage: $0 start|stop|env" ;;
esac
