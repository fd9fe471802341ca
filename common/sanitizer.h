#pragma once
/// @file sanitizer.h
/// ThreadSanitizer annotations for hand-offs it cannot see.
///
/// DPDK is not built with TSan, and on x86 its rte_ring moves head and tail with plain volatile
/// stores, compiler barriers and inline `lock cmpxchg` (rte_ring_generic_pvt.h), none of which
/// TSan understands as synchronisation. A frame handed from one thread to another through such
/// a ring would be reported as a data race on its bytes. The sender calls TsanReleasing(q)
/// before it enqueues, the receiver TsanAcquired(q) after it dequeued: TSan then orders every
/// write the sender made before the hand-off before every access the receiver makes after it.
/// In a build without TSan both are empty and vanish. The mbuf pools of a TSan build use a
/// mutex-protected free list instead of DPDK's ring (common/eal.cc), so mbufs freed on one
/// thread and allocated on another need no annotation.
///
/// scripts/tsan.sh builds with -fsanitize=thread (ROCEFAB_TSAN is then defined here) and
/// suppresses only the ring's own internal accesses (scripts/tsan.supp).

#if defined(__SANITIZE_THREAD__)
#define ROCEFAB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ROCEFAB_TSAN 1
#endif
#endif

#ifdef ROCEFAB_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace rocefab {

/// Before handing memory to another thread through queue `q` (any address both sides agree on).
inline void TsanReleasing([[maybe_unused]] void* q) {
#ifdef ROCEFAB_TSAN
  __tsan_release(q);
#endif
}

/// After taking memory another thread handed over through queue `q`.
inline void TsanAcquired([[maybe_unused]] void* q) {
#ifdef ROCEFAB_TSAN
  __tsan_acquire(q);
#endif
}

/// True in a ThreadSanitizer build.
constexpr bool kTsanBuild =
#ifdef ROCEFAB_TSAN
    true;
#else
    false;
#endif

}  // namespace rocefab
