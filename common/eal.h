#pragma once
/// @file eal.h
/// DPDK EAL start-up and mbuf pools shared by tests, the sim runner and the live runner.

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace rocefab {

/// Starts EAL once per process with `args` (argv[0] is added). Tests and the sim runner pass
/// NoHugeEalArgs(); calling it again returns the first call's status.
Status InitEal(const std::vector<std::string>& args);

/// EAL arguments that need no root and no hugepages: --no-huge --no-shconf -m <mem_mb>, no PCI,
/// one lcore, quiet logging.
std::vector<std::string> NoHugeEalArgs(int mem_mb = 512);

/// Creates an mbuf pool of `n` mbufs with PacketMeta room in the private area. The default data
/// room (2048 B + headroom) holds a 1500-byte-MTU frame; pass a larger one for jumbo frames.
Result<rte_mempool*> CreatePktPool(const std::string& name, unsigned n,
                                   uint16_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE);

}  // namespace rocefab
