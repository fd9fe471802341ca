#include "switch/scheduler.h"

#include <rte_prefetch.h>

namespace rocefab {

EgressScheduler::EgressScheduler(const SchedulerConfig& cfg) : cfg_(cfg) {
  for (int q = 0; q < 8; ++q) quantum_[q] = static_cast<int64_t>(cfg_.weights[q]) * 1536;
}

bool EgressScheduler::empty() const {
  if (!control_.empty()) return false;
  for (const auto& q : q_) {
    if (!q.empty()) return false;
  }
  return true;
}

bool EgressScheduler::HasPausedBacklog(uint8_t paused_mask) const {
  for (uint8_t q = 0; q < 8; ++q) {
    if (((paused_mask >> q) & 1) && !q_[q].empty()) return true;
  }
  return false;
}

size_t EgressScheduler::frames() const {
  size_t n = control_.size();
  for (const auto& q : q_) n += q.size();
  return n;
}

size_t EgressScheduler::Clear() {
  size_t n = control_.Clear();
  for (auto& q : q_) n += q.Clear();
  return n;
}

void EgressScheduler::PrefetchHeads() const {
  if (!control_.empty()) rte_prefetch0(control_.Front());
  for (const MbufFifo& f : q_) {
    if (!f.empty()) {
      const rte_mbuf* m = f.Front();
      rte_prefetch0(m);
      rte_prefetch0(reinterpret_cast<const char*>(m) + sizeof(rte_mbuf));  // PacketMeta
    }
  }
}

rte_mbuf* EgressScheduler::Dequeue(uint8_t paused_mask, uint8_t* queue) {
  if (!control_.empty()) {
    *queue = 8;
    return control_.Pop();
  }
  for (int q = 7; q >= 0; --q) {
    if (((cfg_.strict_mask >> q) & 1) && !((paused_mask >> q) & 1) && !q_[q].empty()) {
      *queue = static_cast<uint8_t>(q);
      return q_[q].Pop();
    }
  }
  bool any = false;
  for (uint8_t q = 0; q < 8; ++q) {
    const bool eligible =
        !((cfg_.strict_mask >> q) & 1) && !((paused_mask >> q) & 1) && !q_[q].empty();
    any |= eligible;
  }
  if (!any) return nullptr;
  // Each visit of an eligible queue adds its quantum (>= 1536 B), so this loop ends within
  // (max frame / min quantum + 1) rounds.
  for (;;) {
    const uint8_t q = rr_;
    const bool eligible =
        !((cfg_.strict_mask >> q) & 1) && !((paused_mask >> q) & 1) && !q_[q].empty();
    if (eligible) {
      if (fresh_) {
        deficit_[q] += quantum_[q];
        fresh_ = false;
      }
      const int64_t len = q_[q].FrontLen();
      if (len <= deficit_[q]) {
        deficit_[q] -= len;
        rte_mbuf* m = q_[q].Pop();
        if (q_[q].empty()) {
          deficit_[q] = 0;
          rr_ = (rr_ + 1) & 7;
          fresh_ = true;
        }
        *queue = q;
        return m;
      }
    } else if (q_[q].empty()) {
      deficit_[q] = 0;
    }
    rr_ = (rr_ + 1) & 7;
    fresh_ = true;
  }
}

}  // namespace rocefab
