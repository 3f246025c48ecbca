#!/usr/bin/env bash
# Several "hosts" on this machine, for running MPI jobs across hosts without a cluster: each host is
# a network namespace (its own loopback and address on a private bridge) entered with a UTS
# namespace of its own (its own host name); they share the file system, so a run directory written
# by all ranks is one directory. Needs root and iproute2.
#
#   scripts/testhosts.sh up [N]   create hosts mlh1..mlhN (default 2) on bridge mlbr0, 10.77.0.0/24
#   scripts/testhosts.sh down     remove them
#   scripts/testhost-rsh HOST CMD the rsh agent that runs CMD "on" HOST, for the launchers:
#       mpirun.openmpi --mca plm_rsh_agent scripts/testhost-rsh --mca plm_rsh_no_tree_spawn 1 \
#           --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
#           --host mlh1:2,mlh2:2 -np 4 ./app
#       mpirun.mpich -launcher ssh -launcher-exec scripts/testhost-rsh -iface mlbr0 \
#           -hosts mlh1:2,mlh2:2 -np 4 ./app
# Traffic stays between namespaces this script made (the bridge has no route out).
set -euo pipefail

bridge=mlbr0
net=10.77.0

up() {
  local n=${1:-2}
  [ "$(id -u)" -eq 0 ] || { echo "testhosts.sh: needs root" >&2; exit 1; }
  command -v ip >/dev/null || { echo "testhosts.sh: needs iproute2 (ip)" >&2; exit 1; }
  down
  ip link add "$bridge" type bridge
  ip addr add "$net.1/24" dev "$bridge"
  ip link set "$bridge" up
  local i
  for ((i = 1; i <= n; i++)); do
    ip netns add "mlh$i"
    ip link add "mlv$i" type veth peer name eth0 netns "mlh$i"
    ip link set "mlv$i" master "$bridge" up
    ip -n "mlh$i" addr add "$net.$((10 + i))/24" dev eth0
    ip -n "mlh$i" link set eth0 up
    ip -n "mlh$i" link set lo up
  done
}

down() {
  local h l
  # the host side of each veth pair first: deleting it removes both ends at once, whereas a
  # namespace's devices go away some time after `ip netns del` returns (an `up` right after a
  # `down` then met "File exists")
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^mlv[0-9]+@/ {split($2, a, "@"); print a[1]}'); do
    ip link del "$l" 2>/dev/null || true
  done
  for h in $(ip netns list 2>/dev/null | awk '/^mlh[0-9]+/ {print $1}'); do
    ip netns pids "$h" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$h"
  done
  if ip link show "$bridge" >/dev/null 2>&1; then ip link del "$bridge"; fi
}

case "${1:-}" in
  up) up "${2:-2}" ;;
  down) down ;;
  *) echo "usage: scripts/testhosts.sh up [N] | down" >&2; exit 2 ;;
esac
