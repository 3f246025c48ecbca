#!/usr/bin/env bash
# A single-machine Slurm cluster from Debian's packages (slurm-wlm, munge), to run mpilens under a
# real Slurm: slurmctld and slurmd on this host, authenticated by a munged of its own, with PMIx
# (Open MPI) and PMI2 (MPICH) for srun. Nothing outside its directory is changed: no systemd, no
# /etc/slurm, no /etc/munge.
#
#   scripts/slurm.sh up     start it (installs the packages when missing) and print the line that
#                           points srun/sbatch/salloc at it: export SLURM_CONF=...
#   scripts/slurm.sh down   stop it and remove its directory
#   scripts/slurm.sh env    print the export line of a cluster that is up
#
# MPILENS_SLURM_DIR (default /tmp/mpilens-slurm) holds its configuration, state, logs and sockets;
# MPILENS_SLURM_PORT (default 6817) is slurmctld's port, the slurmds take the next ones.
# MPILENS_SLURM_NODES (default 1) slurmds run on this host as nodes node1..nodeN, each with
# MPILENS_SLURM_CPUS CPUs (default 8, more than a small machine has, so that 4- and 8-rank jobs fit
# without -O; slurmd is told to accept the configured count). With several nodes, multi-node
# allocations work (salloc -N 2, sbatch -N 2, srun -N 2 --mpi=pmi2), but not a direct srun launch
# with PMIx (Open MPI's --mpi=pmix) across them: the PMIx plugins of two slurmstepds of one step on
# one host both create the same client directory /tmp/spmix_appdir_<uid>_<job>.<step> and the second
# fails ("File exists"); Slurm offers no per-node setting for it (PMIxCliTmpDirBase does not expand
# %n). On one node, srun --mpi=pmix works.
# Needs root (slurmd starts the job steps as the submitting user).
set -euo pipefail

dir=${MPILENS_SLURM_DIR:-/tmp/mpilens-slurm}
cpus=${MPILENS_SLURM_CPUS:-8}
nodes=${MPILENS_SLURM_NODES:-1}
port=${MPILENS_SLURM_PORT:-6817}
conf=$dir/slurm.conf

die() { echo "slurm.sh: $*" >&2; exit 1; }

install_packages() {
  local missing=()
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "need root to install ${missing[*]}"
  echo "slurm.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for() { # command, what, seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    if eval "$1" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  die "$2 did not start within $3 s (logs in $dir/log)"
}

up() {
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd runs job steps as their user)"
  install_packages
  if alive "$dir/run/slurmctld.pid" && alive "$dir/run/slurmd-node1.pid"; then
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  down >/dev/null 2>&1 || true
  mkdir -p "$dir"/{run,log,state,munge}
  local i
  for ((i = 1; i <= nodes; i++)); do mkdir -p "$dir/spool/node$i"; done
  chmod 0700 "$dir/munge"
  local host
  host=$(hostname -s)

  # munge: a key of its own; munged refuses to run as root without --force
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munge.seed"
  wait_for "munge -S '$dir/munge/munge.socket' -n </dev/null | unmunge -S '$dir/munge/munge.socket'" munged 10

  cat >"$conf" <<EOF
# written by scripts/slurm.sh: a one-node test cluster
ClusterName=mpilens
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmctldPort=$port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
KillWait=5
InactiveLimit=0
MinJobAge=10
EOF
  for ((i = 1; i <= nodes; i++)); do
    echo "NodeName=node$i NodeHostname=$host Port=$((port + i)) CPUs=$cpus State=UNKNOWN" >>"$conf"
  done
  echo "PartitionName=debug Nodes=node[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >>"$conf"
  export SLURM_CONF=$conf
  slurmctld -f "$conf"
  wait_for "scontrol ping | grep -q UP" slurmctld 20
  for ((i = 1; i <= nodes; i++)); do slurmd -f "$conf" -N "node$i"; done
  wait_for "[ \$(sinfo -h -N -o %T | grep -Ec '^(idle|mixed|allocated)') -eq $nodes ]" slurmd 30
  echo "export SLURM_CONF=$conf"
}

down() {
  local f
  for f in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"; do
    if alive "$f"; then kill "$(cat "$f")" 2>/dev/null || true; fi
  done
  for f in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"; do
    for _ in $(seq 50); do alive "$f" || break; sleep 0.1; done
    if alive "$f"; then kill -9 "$(cat "$f")" 2>/dev/null || true; fi
  done
  # their forked helpers (slurmstepd, the daemons' children) carry the directory on their command line
  for _ in $(seq 50); do pgrep -f "$dir/" >/dev/null || break; sleep 0.1; done
  pkill -9 -f "$dir/" 2>/dev/null || true
  case "$dir" in /|"") die "refusing to remove '$dir'" ;; esac
  rm -rf "$dir"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env)
    alive "$dir/run/slurmctld.pid" || die "no cluster is up in $dir (scripts/slurm.sh up)"
    echo "export SLURM_CONF=$conf" ;;
  *) echo "usage: scripts/slurm.sh up|down|env" >&2; exit 2 ;;
esac
