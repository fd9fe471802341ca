#include "switch/scheduler.h"

#include <rte_prefetch.h>

namespace rocefab {

EgressScheduler::EgressScheduler(const SchedulerConfig& cfg) : cfg_(cfg) {
  for (int q = 0; q < 8; ++q) quantum_[q] = static_cast<int64_t>(cfg_.weights[q]) * 1536;
}

bool EgressScheduler::HasPausedBacklog(uint8_t paused_mask) const {
  return (nonempty_ & paused_mask) != 0;
}

size_t EgressScheduler::frames() const {
  size_t n = control_.size();
  for (const auto& q : q_) n += q.size();
  return n;
}

size_t EgressScheduler::Clear() {
  size_t n = control_.Clear();
  for (auto& q : q_) n += q.Clear();
  nonempty_ = 0;
  return n;
}

void EgressScheduler::PrefetchHeads() const {
  if (nonempty_ & kControlBit) rte_prefetch0(control_.Front());
  for (unsigned bits = nonempty_ & 0xFFu; bits != 0; bits &= bits - 1) {
    const rte_mbuf* m = q_[__builtin_ctz(bits)].Front();
    rte_prefetch0(m);
    rte_prefetch0(reinterpret_cast<const char*>(m) + sizeof(rte_mbuf));  // PacketMeta
  }
}

rte_mbuf* EgressScheduler::Dequeue(uint8_t paused_mask, uint8_t* queue) {
  if (nonempty_ & kControlBit) {
    *queue = 8;
    rte_mbuf* m = control_.Pop();
    if (control_.empty()) nonempty_ &= static_cast<uint16_t>(~kControlBit);
    return m;
  }
  const uint8_t eligible = static_cast<uint8_t>(nonempty_ & ~paused_mask);
  const uint8_t strict = eligible & cfg_.strict_mask;
  if (strict != 0) {
    const auto q = static_cast<uint8_t>(31 - __builtin_clz(strict));  // highest index first
    *queue = q;
    return Pop(q);
  }
  const uint8_t dwrr = eligible & static_cast<uint8_t>(~cfg_.strict_mask);
  if (dwrr == 0) return nullptr;
  // Each visit of an eligible queue adds its quantum (>= 1536 B), so this loop ends within
  // (max frame / min quantum + 1) rounds. The pointer moves straight to the next eligible queue
  // instead of one queue at a time: of the queues it passes, a paused one keeps its deficit (a
  // visit would leave it) and an empty one loses it (as a visit would clear it; it is already 0
  // unless the watchdog emptied the queue: stale_), so the order is the step-by-step walk's.
  for (;;) {
    if (!((dwrr >> rr_) & 1)) {
      const unsigned rotated = (dwrr * 0x101u) >> rr_;  // bit i: queue (rr_ + i) & 7
      const unsigned dist = static_cast<unsigned>(__builtin_ctz(rotated));
      if (stale_ != 0) {
        const unsigned passed = ((1u << dist) - 1) << rr_;
        const auto cleared = static_cast<uint8_t>((passed | passed >> 8) & stale_ & ~nonempty_);
        for (unsigned bits = cleared; bits != 0; bits &= bits - 1)
          deficit_[__builtin_ctz(bits)] = 0;
        stale_ &= static_cast<uint8_t>(~cleared);
      }
      rr_ = static_cast<uint8_t>((rr_ + dist) & 7);
      fresh_ = true;
    }
    const uint8_t q = rr_;
    if (fresh_) {
      deficit_[q] += quantum_[q];
      fresh_ = false;
    }
    const int64_t len = q_[q].FrontLen();
    if (len <= deficit_[q]) {
      deficit_[q] -= len;
      rte_mbuf* m = Pop(q);
      if (!((nonempty_ >> q) & 1)) {
        deficit_[q] = 0;
        rr_ = (rr_ + 1) & 7;
        fresh_ = true;
      }
      *queue = q;
      return m;
    }
    rr_ = (rr_ + 1) & 7;
    fresh_ = true;
  }
}

}  // namespace rocefab
