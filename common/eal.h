#pragma once
/// @file eal.h
/// DPDK EAL start-up and mbuf pools shared by tests, the sim runner and the live runner.

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace rocefab {

/// What EAL may do to the calling thread's CPU affinity.
enum class EalAffinity : uint8_t {
  kPinToMainLcore,  ///< EAL's default: pin to the main lcore (the live runner's poll thread)
  kKeep,            ///< restore the affinity the process started with (taskset, cgroups): for
                    ///< in-process runs, so two sims started side by side use both cores
};

/// Starts EAL once per process with `args` (argv[0] is added). Tests and the sim runner pass
/// NoHugeEalArgs() and EalAffinity::kKeep; calling it again returns the first call's status.
Status InitEal(const std::vector<std::string>& args, EalAffinity affinity = EalAffinity::kPinToMainLcore);

/// EAL arguments that need no root and no hugepages: --no-huge --no-shconf -m <mem_mb>, no PCI,
/// one lcore, quiet logging.
std::vector<std::string> NoHugeEalArgs(int mem_mb = 512);

/// Creates an mbuf pool of `n` mbufs with PacketMeta room in the private area. The default data
/// room (2048 B + headroom) holds a 1500-byte-MTU frame; pass a larger one for jumbo frames.
Result<rte_mempool*> CreatePktPool(const std::string& name, unsigned n,
                                   uint16_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE);

/// The same pool for in-process use only (sim runner, tests): no device ever DMAs from it, so
/// it is populated with RTE_MEMPOOL_F_NO_IOVA_CONTIG. rte_pktmbuf_pool_create first reserves an
/// IOVA-contiguous zone, which under --no-huge fails after touching (and zeroing on free) the
/// pages, and then populates page by page: peak RSS is about 1.6x the pool. Measured for 131,071
/// mbufs of 2,176 B: 567 MiB with rte_pktmbuf_pool_create, 362 MiB with this (EAL alone: 40 MiB).
Result<rte_mempool*> CreateHostOnlyPktPool(const std::string& name, unsigned n,
                                           uint16_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE);

}  // namespace rocefab
