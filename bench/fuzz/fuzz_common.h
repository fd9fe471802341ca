#pragma once
// Shared setup of the fuzz targets: DPDK's EAL without hugepages or root, one mbuf pool, and
// frames built from fuzzer bytes. libFuzzer calls LLVMFuzzerTestOneInput once per input.
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/eal.h"

namespace rocefab::fuzz {

// The pool every target allocates from (4 KB MTU frames), created on first use.
inline rte_mempool* Pool() {
  static rte_mempool* pool = [] {
    Status st = InitEal(NoHugeEalArgs(256), EalAffinity::kKeep);
    if (!st.ok()) {
      std::fprintf(stderr, "fuzz: %s\n", st.message().c_str());
      std::abort();
    }
    auto p = CreateHostOnlyPktPool("fuzzpool", 8191, 4096 + RTE_PKTMBUF_HEADROOM + 384);
    if (!p.ok()) {
      std::fprintf(stderr, "fuzz: %s\n", p.message().c_str());
      std::abort();
    }
    return p.value();
  }();
  return pool;
}

// A frame holding `data` (at most the mbuf's room; the rest is cut), or null if the pool is
// empty (a leak in the target: it aborts below first).
inline rte_mbuf* Frame(const uint8_t* data, size_t size) {
  rte_mbuf* m = rte_pktmbuf_alloc(Pool());
  if (m == nullptr) return nullptr;
  const size_t room = rte_pktmbuf_tailroom(m);
  const auto n = static_cast<uint16_t>(size < room ? size : room);
  char* p = rte_pktmbuf_append(m, n);
  if (n > 0) std::memcpy(p, data, n);
  return m;
}

// Aborts (a finding) unless every mbuf of the pool is back.
inline void ExpectNoMbufInUse(const char* where) {
  const unsigned used = rte_mempool_in_use_count(Pool());
  if (used != 0) {
    std::fprintf(stderr, "fuzz: %u mbufs still in use after %s\n", used, where);
    std::abort();
  }
}

}  // namespace rocefab::fuzz
