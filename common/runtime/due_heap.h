#pragma once
/// @file due_heap.h
/// An indexed binary min-heap of due times: a fixed set of slots (0..n-1), each with one time
/// (ps; kTimeNever: nothing due), whose earliest slot is read in O(1) and whose time is changed
/// in O(log n). The live runner keeps two slots per port (the delay line's head delivery and the
/// next wire slot), so finding a partition's next event does not scan its ports.
/// Ties go to the lower slot, so the order of equal times is deterministic.

#include <cstdint>
#include <vector>

#include "common/time.h"

namespace rocefab {

class DueHeap {
 public:
  /// `n` slots, all kTimeNever.
  void Reset(uint32_t n) {
    key_.assign(n, kTimeNever);
    heap_.resize(n);
    pos_.resize(n);
    for (uint32_t i = 0; i < n; ++i) heap_[i] = pos_[i] = i;
  }
  uint32_t size() const { return static_cast<uint32_t>(key_.size()); }
  /// Sets slot's time (slot < size()).
  void Set(uint32_t slot, Time t) {
    const Time old = key_[slot];
    if (t == old) return;
    key_[slot] = t;
    if (t < old) {
      SiftUp(pos_[slot]);
    } else {
      SiftDown(pos_[slot]);
    }
  }
  Time time(uint32_t slot) const { return key_[slot]; }
  /// The earliest time (kTimeNever when empty or nothing due) and its slot.
  Time top_time() const { return heap_.empty() ? kTimeNever : key_[heap_[0]]; }
  uint32_t top_slot() const { return heap_[0]; }

 private:
  bool Less(uint32_t a, uint32_t b) const { return key_[a] != key_[b] ? key_[a] < key_[b] : a < b; }
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

  std::vector<Time> key_;       ///< per slot
  std::vector<uint32_t> heap_;  ///< slots in heap order
  std::vector<uint32_t> pos_;   ///< per slot: its index in heap_
};

}  // namespace rocefab
