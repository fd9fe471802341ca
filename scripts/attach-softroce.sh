#!/usr/bin/env bash
# Attaches a SoftRoCE device (Linux rdma_rxe) to the veth of a rocefab namespace host, so real
# verbs applications (perftest's ib_write_bw, rping, ...) in that namespace send RoCEv2 through
# the emulated fabric.
#
# usage: scripts/attach-softroce.sh NETNS [IFACE]     (IFACE defaults to eth0)
#        scripts/attach-softroce.sh --check            (exit 0 if rdma_rxe can be used here)
# Exit codes: 0 attached (prints the device name), 77 skipped because this kernel has no
# rdma_rxe (CONFIG_RDMA_RXE unset, e.g. the CI VM), 2 usage, 1 other failure.
set -euo pipefail

have_rxe() {
  [ -d /sys/module/rdma_rxe ] && return 0
  modprobe rdma_rxe 2>/dev/null && return 0
  return 1
}

if [ "${1:-}" = "--check" ]; then
  if have_rxe; then echo "rdma_rxe available"; exit 0; fi
  echo "skip: this kernel has no rdma_rxe (CONFIG_RDMA_RXE is not set); SoftRoCE cannot be attached"
  exit 77
fi
[ $# -ge 1 ] || { sed -n '2,10p' "$0"; exit 2; }
ns=$1
iface=${2:-eth0}
ip netns list | grep -qw -- "$ns" || { echo "attach-softroce: no network namespace '$ns'" >&2; exit 1; }
if ! have_rxe; then
  echo "skip: this kernel has no rdma_rxe (CONFIG_RDMA_RXE is not set); SoftRoCE cannot be attached"
  exit 77
fi
command -v rdma >/dev/null || { echo "attach-softroce: the 'rdma' tool (iproute2) is missing" >&2; exit 1; }
dev="rxe_${ns: -6}"
ip netns exec "$ns" rdma link add "$dev" type rxe netdev "$iface"
ip netns exec "$ns" rdma link show "$dev/1" >/dev/null
echo "$dev"
