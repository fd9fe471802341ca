#include "common/eal.h"

#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_ring.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "common/packet.h"
#include "common/sanitizer.h"

namespace rocefab {
namespace {

// Set while GrowPool populates a chunk on this thread: the pool's enqueue op (called by DPDK
// for each new object, before it is an initialised mbuf) puts the objects here instead of in
// the free ring, where another thread could take them half made.
thread_local std::vector<void*>* t_staging = nullptr;

bool Stage(void* const* objs, unsigned n) {
  if (t_staging == nullptr) return false;
  t_staging->insert(t_staging->end(), objs, objs + n);
  return true;
}

// What a growable pool keeps besides the mempool: its mp->pool_config, which no other pool
// of this program sets (rte_pktmbuf_pool_create_by_ops passes none); deleted with the pool by
// its ops' free.
struct GrowState {
  std::mutex mu;
  unsigned step_min = 1;
  std::atomic<unsigned> frames{0};  // mp->populated_size, published for other threads
};

GrowState* GrowOf(const rte_mempool* mp) { return static_cast<GrowState*>(mp->pool_config); }

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

void FreeListFree(rte_mempool* mp) {
  delete FreeListOf(mp);
  delete GrowOf(mp);
}

int FreeListEnqueue(rte_mempool* mp, void* const* objs, unsigned n) {
  if (Stage(objs, n)) return 0;
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

// Growable pools' ops outside TSan: DPDK's multi-producer/multi-consumer ring, as its own
// "ring_mp_mc" ops (drivers/mempool/ring), with the staging above.
int RingAlloc(rte_mempool* mp) {
  char name[RTE_RING_NAMESIZE];
  std::snprintf(name, sizeof name, "rf_%s", mp->name);
  rte_ring* r = rte_ring_create(name, rte_align32pow2(mp->size + 1), mp->socket_id, 0);
  if (r == nullptr) return -rte_errno;
  mp->pool_data = r;
  return 0;
}

void RingFree(rte_mempool* mp) {
  rte_ring_free(static_cast<rte_ring*>(mp->pool_data));
  delete GrowOf(mp);
}

int RingEnqueue(rte_mempool* mp, void* const* objs, unsigned n) {
  if (Stage(objs, n)) return 0;
  return rte_ring_mp_enqueue_bulk(static_cast<rte_ring*>(mp->pool_data), objs, n, nullptr) == 0
             ? -ENOBUFS
             : 0;
}

int RingDequeue(rte_mempool* mp, void** objs, unsigned n) {
  return rte_ring_mc_dequeue_bulk(static_cast<rte_ring*>(mp->pool_data), objs, n, nullptr) == 0
             ? -ENOBUFS
             : 0;
}

unsigned RingCount(const rte_mempool* mp) {
  return rte_ring_count(static_cast<const rte_ring*>(mp->pool_data));
}

// Fills `ops` (a static of the caller's: DPDK keeps the name) and registers it, as DPDK's
// MEMPOOL_REGISTER_OPS does; returns the name, or null if DPDK's ops table is full.
const char* RegisterOps(rte_mempool_ops* ops, const char* name, rte_mempool_alloc_t alloc,
                        rte_mempool_free_t free, rte_mempool_enqueue_t enq,
                        rte_mempool_dequeue_t deq, rte_mempool_get_count count) {
  std::strncpy(ops->name, name, sizeof ops->name - 1);
  ops->alloc = alloc;
  ops->free = free;
  ops->enqueue = enq;
  ops->dequeue = deq;
  ops->get_count = count;
  return rte_mempool_register_ops(ops) >= 0 ? ops->name : nullptr;
}

// The ops name pools are created with: null (DPDK's best) unless this is a TSan build.
const char* PoolOpsName() {
  if constexpr (!kTsanBuild) return nullptr;
  static rte_mempool_ops ops{};
  static const char* name = RegisterOps(&ops, "rocefab_tsan", FreeListAlloc, FreeListFree,
                                        FreeListEnqueue, FreeListDequeue, FreeListCount);
  return name;
}

// The ops of growable pools: the TSan free list in a TSan build, else the staging ring above.
const char* GrowableOpsName() {
  if constexpr (kTsanBuild) return PoolOpsName();
  static rte_mempool_ops ops{};
  static const char* name =
      RegisterOps(&ops, "rocefab_ring", RingAlloc, RingFree, RingEnqueue, RingDequeue, RingCount);
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

// Adds up to `n` objects (as many as whole 2 MiB pages for n hold, at most the pool's size) on
// private anonymous memory advised for transparent 2 MiB pages. EAL's --no-huge memory is a
// shared memfd, which the kernel backs with 4 KiB pages only (shmem THP is off by default); a
// sim pool spans hundreds of MiB, so with 4 KiB pages nearly every frame a node touches is a TLB
// miss. Returns the objects added (> 0), or kUseEalMemory when nothing was added (the pool's
// flags rule this out, or the mmap or populate failed).
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
  if (r <= 0) {
    // One chunk or none (see above): on failure nothing was added and the callback not called.
    munmap(aligned, need);
    return kUseEalMemory;
  }
  return r;  // the chunk belongs to the pool now (rte_mempool_free unmaps it)
}

// rte_mempool_create_empty and the pktmbuf private area, as rte_pktmbuf_pool_create_by_ops
// (DPDK 22.11 lib/mbuf/rte_mbuf.c) does, with the no-IOVA-contiguity flag that function does not
// expose; `ops` null: DPDK's best. Not yet populated.
Result<rte_mempool*> CreateEmptyPktPool(const std::string& name, unsigned n, uint16_t data_room,
                                        const char* ops, void* pool_config) {
  const unsigned elt_size = sizeof(rte_mbuf) + kMbufPrivSize + data_room;
  rte_mempool* mp = rte_mempool_create_empty(name.c_str(), n, elt_size, n >= 1024 ? 256 : 0,
                                             sizeof(rte_pktmbuf_pool_private), SOCKET_ID_ANY,
                                             RTE_MEMPOOL_F_NO_IOVA_CONTIG);
  if (mp == nullptr) {
    return Result<rte_mempool*>::Error("cannot create mbuf pool " + name + ": " +
                                       rte_strerror(rte_errno));
  }
  const int r = rte_mempool_set_ops_byname(mp, ops != nullptr ? ops : rte_mbuf_best_mempool_ops(),
                                           pool_config);
  if (r < 0) {
    rte_mempool_free(mp);
    return Result<rte_mempool*>::Error("cannot create mbuf pool " + name + ": " + rte_strerror(-r));
  }
  rte_pktmbuf_pool_private priv{};
  priv.mbuf_data_room_size = data_room;
  priv.mbuf_priv_size = kMbufPrivSize;
  rte_pktmbuf_pool_init(mp, &priv);
  return mp;
}

}  // namespace

Result<rte_mempool*> CreateHostOnlyPktPool(const std::string& name, unsigned n,
                                           uint16_t data_room) {
  auto made = CreateEmptyPktPool(name, n, data_room, PoolOpsName(), nullptr);
  if (!made.ok()) return made;
  rte_mempool* mp = made.value();
  int r = PopulateOnHugeAnonMemory(mp, n);
  if (r == kUseEalMemory) r = rte_mempool_populate_default(mp);
  if (r >= 0 && mp->populated_size < mp->size) r = -ENOMEM;
  if (r < 0) {
    rte_mempool_free(mp);
    return Result<rte_mempool*>::Error("cannot populate mbuf pool " + name + ": " +
                                       rte_strerror(-r));
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

Result<rte_mempool*> CreateGrowablePktPool(const std::string& name, unsigned cap, unsigned initial,
                                           uint16_t data_room) {
  if (cap == 0 || cap > (1u << 31) || initial == 0) {
    return Result<rte_mempool*>::Error("mbuf pool " + name + ": cap " + std::to_string(cap) +
                                       " and initial " + std::to_string(initial) +
                                       " must be 1..2^31 and at least 1");
  }
  const char* ops = GrowableOpsName();
  if (ops == nullptr)
    return Result<rte_mempool*>::Error("cannot register the rocefab_ring mempool ops");
  auto* g = new GrowState;
  g->step_min = std::min(initial, cap);
  auto made = CreateEmptyPktPool(name, cap, data_room, ops, g);
  if (!made.ok()) {
    delete g;
    return made;
  }
  rte_mempool* mp = made.value();  // from here the pool owns g (its ops' free deletes it)
  if (!GrowPool(mp)) {             // the first chunk
    rte_mempool_free(mp);
    return Result<rte_mempool*>::Error("cannot populate mbuf pool " + name + ": " +
                                       rte_strerror(ENOMEM));
  }
  return mp;
}

bool GrowPool(rte_mempool* mp) {
  GrowState* g = GrowOf(mp);
  if (g == nullptr) return false;
  std::lock_guard<std::mutex> lock(g->mu);
  // Frames came back, or another thread added a chunk while this one waited for the lock.
  if (mp->populated_size > 0 && rte_mempool_get_ops(mp->ops_index)->get_count(mp) > 0) return true;
  if (mp->populated_size >= mp->size) return false;
  const unsigned add =
      std::min(mp->size - mp->populated_size, std::max(g->step_min, mp->populated_size / 4));
  std::vector<void*> staged;
  staged.reserve(add + add / 8 + 64);
  t_staging = &staged;
  const int r = PopulateOnHugeAnonMemory(mp, add);
  t_staging = nullptr;
  if (r <= 0) return false;  // nothing was added (no EAL fallback: it would need a contiguous zone)
  for (void* obj : staged) rte_pktmbuf_init(mp, nullptr, obj, 0);
  if (rte_mempool_ops_enqueue_bulk(mp, staged.data(), static_cast<unsigned>(staged.size())) < 0) {
    std::fprintf(stderr, "rocefab: mbuf pool %s: the free ring refused %zu new frames\n", mp->name,
                 staged.size());
    std::abort();  // the ring is sized for the cap: cannot happen
  }
  g->frames.store(mp->populated_size, std::memory_order_release);
  return true;
}

unsigned PoolFrames(const rte_mempool* mp) {
  const GrowState* g = GrowOf(mp);
  return g != nullptr ? g->frames.load(std::memory_order_acquire) : mp->populated_size;
}

}  // namespace rocefab
