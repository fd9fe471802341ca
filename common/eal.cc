#include "common/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <mutex>

#include "common/packet.h"

namespace rocefab {

Status InitEal(const std::vector<std::string>& args, EalAffinity affinity) {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [&] {
    std::vector<std::string> all = {"rocefab"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    // EAL pins the calling thread to lcore 0; in-process runs have no poll core to protect.
    cpu_set_t before;
    const bool have_before = affinity == EalAffinity::kKeep && sched_getaffinity(0, sizeof before, &before) == 0;
    int r = rte_eal_init(static_cast<int>(argv.size()), argv.data());
    if (r < 0) {
      status = Status::Error(std::string("EAL init failed: ") + rte_strerror(rte_errno));
    } else if (have_before) {
      pthread_setaffinity_np(pthread_self(), sizeof before, &before);
    }
  });
  return status;
}

std::vector<std::string> NoHugeEalArgs(int mem_mb) {
  return {"--no-huge", "--no-shconf", "-m",         std::to_string(mem_mb),
          "--no-pci",  "-l",          "0",          "--log-level=lib.eal:error",
          "--no-telemetry"};
}

Result<rte_mempool*> CreatePktPool(const std::string& name, unsigned n, uint16_t data_room) {
  rte_mempool* mp =
      rte_pktmbuf_pool_create(name.c_str(), n, n >= 1024 ? 256 : 0, kMbufPrivSize, data_room,
                              SOCKET_ID_ANY);
  if (mp == nullptr) {
    return Result<rte_mempool*>::Error("cannot create mbuf pool " + name + ": " +
                                       rte_strerror(rte_errno));
  }
  return mp;
}

Result<rte_mempool*> CreateHostOnlyPktPool(const std::string& name, unsigned n,
                                           uint16_t data_room) {
  // The steps of rte_pktmbuf_pool_create_by_ops (DPDK 22.11 lib/mbuf/rte_mbuf.c), with the
  // no-IOVA-contiguity flag that function does not expose.
  const unsigned elt_size = sizeof(rte_mbuf) + kMbufPrivSize + data_room;
  rte_mempool* mp = rte_mempool_create_empty(name.c_str(), n, elt_size, n >= 1024 ? 256 : 0,
                                             sizeof(rte_pktmbuf_pool_private), SOCKET_ID_ANY,
                                             RTE_MEMPOOL_F_NO_IOVA_CONTIG);
  if (mp == nullptr) {
    return Result<rte_mempool*>::Error("cannot create mbuf pool " + name + ": " +
                                       rte_strerror(rte_errno));
  }
  int r = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), nullptr);
  if (r == 0) {
    rte_pktmbuf_pool_private priv{};
    priv.mbuf_data_room_size = data_room;
    priv.mbuf_priv_size = kMbufPrivSize;
    rte_pktmbuf_pool_init(mp, &priv);
    r = rte_mempool_populate_default(mp);
  }
  if (r < 0) {
    rte_mempool_free(mp);
    return Result<rte_mempool*>::Error("cannot populate mbuf pool " + name + ": " +
                                       rte_strerror(-r));
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

}  // namespace rocefab
