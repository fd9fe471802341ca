#!/usr/bin/env bash
# Installs everything rocefab needs on Debian 12 (bookworm), reserves 2 MB hugepages and mounts
# hugetlbfs. Idempotent: safe to run again; packages already present are not reinstalled.
#
# Usage: scripts/setup.sh [--no-hugepages]
#   ROCEFAB_HUGEPAGES=N   number of 2 MB pages to reserve (default 256 = 512 MiB)
set -euo pipefail

want_huge=1
for arg in "$@"; do
  case "$arg" in
    --no-hugepages) want_huge=0 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential pkg-config meson ninja-build
  libdpdk-dev dpdk dpdk-dev
  libboost-program-options-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  rdma-core libibverbs-dev ibverbs-utils perftest
  iproute2 ethtool iperf3 iputils-ping tshark
  python3 python3-matplotlib python3-numpy chromium
  libpcap-dev zlib1g-dev libisal-dev libabsl-dev libmurmurhash-dev xz-utils
  libcpp-httplib-dev python3-prometheus-client prometheus curl
  clang libclang-rt-14-dev llvm
  openmpi-bin libopenmpi-dev openssh-client
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # tshark asks whether non-root users may capture; answer no without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

if [ "$want_huge" = 1 ]; then
  pages=${ROCEFAB_HUGEPAGES:-256}
  if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/vm/nr_hugepages ]; then
    cur=$(cat /proc/sys/vm/nr_hugepages)
    if [ "$cur" -lt "$pages" ]; then
      echo "$pages" > /proc/sys/vm/nr_hugepages || true
    fi
    if ! mountpoint -q /dev/hugepages 2>/dev/null; then
      mkdir -p /dev/hugepages
      mount -t hugetlbfs nodev /dev/hugepages || echo "setup: could not mount hugetlbfs (live runner will fall back to --no-huge)"
    fi
    echo "setup: hugepages $(cat /proc/sys/vm/nr_hugepages) x 2 MB"
  else
    echo "setup: not root; skipping hugepages (tests and the sim runner do not need them)"
  fi
fi
