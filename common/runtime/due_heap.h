#pragma once
/// @file due_heap.h
/// An indexed binary min-heap of due events: a fixed set of slots (0..n-1), each with one
/// (time, key, sub) triple (time in ps, kTimeNever: nothing due), whose earliest slot is read in
/// O(1) and whose entry is changed in O(log n). The live runner keeps two slots per port (the
/// delay line's head delivery and the next wire slot), so finding a partition's next event does
/// not scan its ports. Equal times are ordered by key (the sim runner's event key: node, then
/// arrivals by port before the node's own events in scheduling order; sim_runner.h), then by
/// sub (wakes taken in the same event, in the order they were taken), then by slot.

#include <cstdint>
#include <vector>

#include "common/time.h"

namespace rocefab {

class DueHeap {
 public:
  /// `n` slots, all kTimeNever.
  void Reset(uint32_t n) {
    due_.assign(n, Due{});
    heap_.resize(n);
    pos_.resize(n);
    for (uint32_t i = 0; i < n; ++i) heap_[i] = pos_[i] = i;
  }
  uint32_t size() const { return static_cast<uint32_t>(due_.size()); }
  /// Sets slot's time and tie keys (slot < size()).
  void Set(uint32_t slot, Time t, uint64_t key = 0, uint64_t sub = 0) {
    const Due old = due_[slot];
    const Due now{t, key, sub};
    if (now.t == old.t && now.key == old.key && now.sub == old.sub) return;
    due_[slot] = now;
    if (Before(now, old)) {
      SiftUp(pos_[slot]);
    } else {
      SiftDown(pos_[slot]);
    }
  }
  Time time(uint32_t slot) const { return due_[slot].t; }
  uint64_t key(uint32_t slot) const { return due_[slot].key; }
  uint64_t sub(uint32_t slot) const { return due_[slot].sub; }
  /// The earliest time (kTimeNever when empty or nothing due) and its slot.
  Time top_time() const { return heap_.empty() ? kTimeNever : due_[heap_[0]].t; }
  uint32_t top_slot() const { return heap_[0]; }

 private:
  struct Due {
    Time t = kTimeNever;
    uint64_t key = 0;
    uint64_t sub = 0;
  };
  static bool Before(const Due& a, const Due& b) {
    if (a.t != b.t) return a.t < b.t;
    return a.key != b.key ? a.key < b.key : a.sub < b.sub;
  }
  bool Less(uint32_t a, uint32_t b) const {
    const Due& x = due_[a];
    const Due& y = due_[b];
    if (x.t != y.t) return x.t < y.t;
    if (x.key != y.key) return x.key < y.key;
    return x.sub != y.sub ? x.sub < y.sub : a < b;
  }
  void Place(uint32_t i, uint32_t slot) {
    heap_[i] = slot;
    pos_[slot] = i;
  }
  void SiftUp(uint32_t i) {
    const uint32_t slot = heap_[i];
    while (i > 0) {
      const uint32_t parent = (i - 1) / 2;
      if (!Less(slot, heap_[parent])) break;
      Place(i, heap_[parent]);
      i = parent;
    }
    Place(i, slot);
  }
  void SiftDown(uint32_t i) {
    const uint32_t slot = heap_[i];
    const auto n = static_cast<uint32_t>(heap_.size());
    for (;;) {
      uint32_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && Less(heap_[child + 1], heap_[child])) ++child;
      if (!Less(heap_[child], slot)) break;
      Place(i, heap_[child]);
      i = child;
    }
    Place(i, slot);
  }

  std::vector<Due> due_;        ///< per slot
  std::vector<uint32_t> heap_;  ///< slots in heap order
  std::vector<uint32_t> pos_;   ///< per slot: its index in heap_
};

}  // namespace rocefab
