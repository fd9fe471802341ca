#pragma once
/// @file due_heap.h
/// An indexed binary min-heap of due events: a fixed set of slots (0..n-1), each with one
/// (time, key, sub) triple (time in ps, kTimeNever: nothing due) and a caller's tag, whose
/// earliest slot is read in O(1) and whose entry is changed in O(log n). The live runner keeps
/// one slot per port, holding the earlier of the port's two events (the delay line's head
/// delivery, the next wire slot; the tag says which), so finding a partition's next event does
/// not scan its ports. Equal times are ordered by key (the sim runner's event key: node, then
/// arrivals by port before the node's own events in scheduling order; sim_runner.h), then by
/// sub (wakes taken in the same event, in the order they were taken), then by slot.
///
/// Entries live in the heap array itself (no indirection per comparison); `pos_` maps a slot
/// to its place. Set() with an unchanged entry does nothing.

#include <cstdint>
#include <vector>

#include "common/time.h"

namespace rocefab {

class DueHeap {
 public:
  /// `n` slots, all kTimeNever.
  void Reset(uint32_t n) {
    heap_.assign(n, Entry{});
    pos_.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      heap_[i].slot = i;
      pos_[i] = i;
    }
  }
  uint32_t size() const { return static_cast<uint32_t>(heap_.size()); }
  /// Sets slot's time, tie keys and tag (slot < size()).
  void Set(uint32_t slot, Time t, uint64_t key = 0, uint64_t sub = 0, uint8_t tag = 0) {
    const uint32_t i = pos_[slot];
    Entry& e = heap_[i];
    if (e.t == t && e.key == key && e.sub == sub) {
      e.tag = tag;
      return;
    }
    const Entry now{t, key, sub, slot, tag};
    if (Before(now, e)) {
      SiftUp(i, now);
    } else {
      SiftDown(i, now);
    }
  }
  Time time(uint32_t slot) const { return heap_[pos_[slot]].t; }
  uint64_t key(uint32_t slot) const { return heap_[pos_[slot]].key; }
  uint64_t sub(uint32_t slot) const { return heap_[pos_[slot]].sub; }
  uint8_t tag(uint32_t slot) const { return heap_[pos_[slot]].tag; }
  /// The earliest time (kTimeNever when empty or nothing due), its slot, key and tag.
  Time top_time() const { return heap_.empty() ? kTimeNever : heap_[0].t; }
  uint32_t top_slot() const { return heap_[0].slot; }
  uint64_t top_key() const { return heap_[0].key; }
  uint8_t top_tag() const { return heap_[0].tag; }

 private:
  struct Entry {
    Time t = kTimeNever;
    uint64_t key = 0;
    uint64_t sub = 0;
    uint32_t slot = 0;
    uint8_t tag = 0;
  };
  static bool Before(const Entry& x, const Entry& y) {
    if (x.t != y.t) return x.t < y.t;
    if (x.key != y.key) return x.key < y.key;
    return x.sub != y.sub ? x.sub < y.sub : x.slot < y.slot;
  }
  void Place(uint32_t i, const Entry& e) {
    heap_[i] = e;
    pos_[e.slot] = i;
  }
  void SiftUp(uint32_t i, const Entry& e) {
    while (i > 0) {
      const uint32_t parent = (i - 1) / 2;
      if (!Before(e, heap_[parent])) break;
      Place(i, heap_[parent]);
      i = parent;
    }
    Place(i, e);
  }
  void SiftDown(uint32_t i, const Entry& e) {
    const auto n = static_cast<uint32_t>(heap_.size());
    for (;;) {
      uint32_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && Before(heap_[child + 1], heap_[child])) ++child;
      if (!Before(heap_[child], e)) break;
      Place(i, heap_[child]);
      i = child;
    }
    Place(i, e);
  }

  std::vector<Entry> heap_;    ///< entries in heap order
  std::vector<uint32_t> pos_;  ///< per slot: its index in heap_
};

}  // namespace rocefab
