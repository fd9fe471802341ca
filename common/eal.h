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

/// An in-process pool (as CreateHostOnlyPktPool) that takes memory as frames are needed: it may
/// hold up to `cap` mbufs (1..2^31) but starts with about `initial` (at least 1; rounded up to
/// whole 2 MiB pages of frames). When it is empty, AllocMbuf and CopyMbuf add a chunk of
/// max(`initial`, a quarter of what it holds), so a run's pool ends at most ~25 % above the
/// most frames it held at once. Its DPDK ring is sized for `cap` (8 B per mbuf, untouched until
/// used). What makes this safe while other threads allocate and free: the new frames are
/// initialised before any of them enters the free ring.
Result<rte_mempool*> CreateGrowablePktPool(const std::string& name, unsigned cap, unsigned initial,
                                           uint16_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE);

/// Adds a chunk to an empty pool made by CreateGrowablePktPool. True: the pool has free frames
/// now (added here, or by another thread meanwhile); false: it is at its cap, adding memory
/// failed, or `mp` is not growable. Thread-safe; called only when an allocation failed.
bool GrowPool(rte_mempool* mp);

/// rte_pktmbuf_alloc that grows a growable pool instead of failing. nullptr: none left.
inline rte_mbuf* AllocMbuf(rte_mempool* mp) {
  rte_mbuf* m = rte_pktmbuf_alloc(mp);
  while (__builtin_expect(m == nullptr, 0) && GrowPool(mp)) m = rte_pktmbuf_alloc(mp);
  return m;
}

/// rte_pktmbuf_copy (whole frame, from offset 0) into `mp`, growing it as AllocMbuf does.
inline rte_mbuf* CopyMbuf(const rte_mbuf* m, rte_mempool* mp) {
  rte_mbuf* c = rte_pktmbuf_copy(m, mp, 0, UINT32_MAX);
  while (__builtin_expect(c == nullptr, 0) && GrowPool(mp))
    c = rte_pktmbuf_copy(m, mp, 0, UINT32_MAX);
  return c;
}

/// The mbufs a pool holds now (populated; a growable pool's grows up to its cap, mp->size).
/// Safe to call while other threads grow the pool.
unsigned PoolFrames(const rte_mempool* mp);

/// The mbufs out of the pool (PoolFrames less the free ones, per-lcore caches included). DPDK's
/// rte_mempool_in_use_count counts against the cap instead, so it is wrong for a growable pool.
inline unsigned PoolInUse(const rte_mempool* mp) {
  const unsigned frames = PoolFrames(mp), avail = rte_mempool_avail_count(mp);
  return avail > frames ? 0 : frames - avail;  // (a chunk added between the two reads)
}

}  // namespace rocefab
