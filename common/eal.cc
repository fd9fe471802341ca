#include "common/eal.h"

#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "common/packet.h"
#include "common/sanitizer.h"

namespace rocefab {
namespace {

// The mempool ops of a ThreadSanitizer build: a free list under a mutex. DPDK's ring ops are
// not instrumented, so TSan cannot see that an mbuf freed on one partition's thread and taken
// by another's was handed over, and would report the second owner's writes as races with the
// first's (common/sanitizer.h). Here the hand-off is a mutex TSan understands. Only a TSan
// build registers them; other builds use DPDK's best ops (ring_mp_mc).
struct LockedFreeList {
  std::mutex mu;
  std::vector<void*> objs;
};

LockedFreeList* FreeListOf(const rte_mempool* mp) { return static_cast<LockedFreeList*>(mp->pool_data); }

int FreeListAlloc(rte_mempool* mp) {
  auto* fl = new (std::nothrow) LockedFreeList;
  if (fl == nullptr) return -ENOMEM;
  fl->objs.reserve(mp->size);
  mp->pool_data = fl;
  return 0;
}

void FreeListFree(rte_mempool* mp) { delete FreeListOf(mp); }

int FreeListEnqueue(rte_mempool* mp, void* const* objs, unsigned n) {
  LockedFreeList* fl = FreeListOf(mp);
  std::lock_guard<std::mutex> lock(fl->mu);
  fl->objs.insert(fl->objs.end(), objs, objs + n);
  return 0;
}

int FreeListDequeue(rte_mempool* mp, void** objs, unsigned n) {
  LockedFreeList* fl = FreeListOf(mp);
  std::lock_guard<std::mutex> lock(fl->mu);
  if (fl->objs.size() < n) return -ENOBUFS;  // all or nothing, as the ring ops
  std::copy(fl->objs.end() - n, fl->objs.end(), objs);
  fl->objs.resize(fl->objs.size() - n);
  return 0;
}

unsigned FreeListCount(const rte_mempool* mp) {
  LockedFreeList* fl = FreeListOf(mp);
  std::lock_guard<std::mutex> lock(fl->mu);
  return static_cast<unsigned>(fl->objs.size());
}

// The ops name pools are created with: null (DPDK's best) unless this is a TSan build.
const char* PoolOpsName() {
  if constexpr (!kTsanBuild) return nullptr;
  static const char* name = [] {
    static rte_mempool_ops ops{};
    std::strncpy(ops.name, "rocefab_tsan", sizeof ops.name - 1);
    ops.alloc = FreeListAlloc;
    ops.free = FreeListFree;
    ops.enqueue = FreeListEnqueue;
    ops.dequeue = FreeListDequeue;
    ops.get_count = FreeListCount;
    return rte_mempool_register_ops(&ops) >= 0 ? ops.name : nullptr;
  }();
  return name;
}

}  // namespace

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
    const bool have_before =
        affinity == EalAffinity::kKeep && sched_getaffinity(0, sizeof before, &before) == 0;
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
  return {"--no-huge",     "--no-shconf", "-m", std::to_string(mem_mb),
          "--no-pci",      "-l",          "0",  "--log-level=lib.eal:error",
          "--no-telemetry"};
}

Result<rte_mempool*> CreatePktPool(const std::string& name, unsigned n, uint16_t data_room) {
  rte_mempool* mp = rte_pktmbuf_pool_create_by_ops(name.c_str(), n, n >= 1024 ? 256 : 0,
                                                   kMbufPrivSize, data_room, SOCKET_ID_ANY,
                                                   PoolOpsName());
  if (mp == nullptr) {
    return Result<rte_mempool*>::Error("cannot create mbuf pool " + name + ": " +
                                       rte_strerror(rte_errno));
  }
  return mp;
}

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

void UnmapChunk(rte_mempool_memhdr* memhdr, void* /*opaque*/) { munmap(memhdr->addr, memhdr->len); }

// Backs the pool with private anonymous memory advised for transparent 2 MiB pages. EAL's
// --no-huge memory is a shared memfd, which the kernel backs with 4 KiB pages only (shmem THP
// is off by default); a sim pool spans ~300 MiB, so with 4 KiB pages nearly every frame a node
// touches is a TLB miss. Returns 0 when populated, kUseEalMemory when nothing was added (the
// caller then uses EAL's memory), another negative errno when the pool is partly populated.
constexpr int kUseEalMemory = -1000;
int PopulateOnHugeAnonMemory(rte_mempool* mp, unsigned n) {
  // Without this flag populate_virt splits the range into per-page chunks and hands the free
  // callback to the first only; with it the range is one chunk, unmapped by UnmapChunk.
  if (!(mp->flags & RTE_MEMPOOL_F_NO_IOVA_CONTIG)) return kUseEalMemory;
  rte_mempool_objsz sz{};
  rte_mempool_calc_obj_size(mp->elt_size, mp->flags, &sz);
  const size_t need = RTE_ALIGN_CEIL((size_t{n} + 1) * sz.total_size, kHugePage);
  void* raw =
      mmap(nullptr, need + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return kUseEalMemory;
  // Trim to a 2 MiB-aligned range so every huge page is whole.
  auto* base = static_cast<char*>(raw);
  char* aligned = RTE_PTR_ALIGN_CEIL(base, kHugePage);
  if (aligned != base) munmap(base, static_cast<size_t>(aligned - base));
  const size_t tail = static_cast<size_t>(base + need + kHugePage - (aligned + need));
  if (tail > 0) munmap(aligned + need, tail);
  madvise(aligned, need, MADV_HUGEPAGE);
  const int r = rte_mempool_populate_virt(mp, aligned, need, kHugePage, UnmapChunk, nullptr);
  if (r < 0) {
    // One chunk or none (see above): on failure nothing was added and the callback not called.
    munmap(aligned, need);
    return kUseEalMemory;
  }
  // The chunk belongs to the pool now (rte_mempool_free unmaps it).
  return mp->populated_size < mp->size ? -ENOMEM : 0;
}

}  // namespace

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
  const char* ops = PoolOpsName();
  int r = rte_mempool_set_ops_byname(mp, ops != nullptr ? ops : rte_mbuf_best_mempool_ops(), nullptr);
  if (r == 0) {
    rte_pktmbuf_pool_private priv{};
    priv.mbuf_data_room_size = data_room;
    priv.mbuf_priv_size = kMbufPrivSize;
    rte_pktmbuf_pool_init(mp, &priv);
    r = PopulateOnHugeAnonMemory(mp, n);
    if (r == kUseEalMemory) r = rte_mempool_populate_default(mp);
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
