#pragma once
/// @file mtt_cache.h
/// The RNIC's memory translation table (MTT) cache model: a least-recently-used set of page keys
/// of fixed capacity (`RnicConfig::mtt_entries`, the miss cost is the caller's). Slots live in
/// one array with an intrusive recency list and a FlatMap from key to slot, so a lookup is one
/// hash probe, a hit relinks two neighbours and a miss reuses the evicted slot: nothing is
/// allocated once the cache has filled (a std::list node and a hash node were allocated per
/// miss before). Pure: no clock, no I/O.

#include <cstdint>
#include <vector>

#include "common/flat_map.h"

namespace rocefab {

class MttCache {
 public:
  /// capacity >= 1 entries.
  explicit MttCache(uint32_t capacity) : capacity_(capacity) {
    slots_.reserve(capacity);
    index_.reserve(capacity);
  }

  /// Looks `key` up. Hit: it becomes the most recent, returns true. Miss: it is inserted as the
  /// most recent, evicting the least recent entry when the cache is full; returns false.
  bool Touch(uint64_t key) {
    if (auto it = index_.find(key); it != index_.end()) {
      const uint32_t s = it->second;
      if (s != head_) {
        Unlink(s);
        PushFront(s);
      }
      return true;
    }
    uint32_t s;
    if (slots_.size() < capacity_) {
      s = static_cast<uint32_t>(slots_.size());
      slots_.push_back(Slot{});
    } else {
      s = tail_;
      index_.erase(slots_[s].key);
      Unlink(s);
    }
    slots_[s].key = key;
    PushFront(s);
    index_.emplace(key, s);
    return false;
  }

  size_t size() const { return index_.size(); }
  uint32_t capacity() const { return capacity_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Slot {
    uint64_t key = 0;
    uint32_t prev = kNone, next = kNone;  ///< towards the most / least recent
  };
  void Unlink(uint32_t s) {
    Slot& x = slots_[s];
    (x.prev == kNone ? head_ : slots_[x.prev].next) = x.next;
    (x.next == kNone ? tail_ : slots_[x.next].prev) = x.prev;
    x.prev = x.next = kNone;
  }
  void PushFront(uint32_t s) {
    slots_[s].prev = kNone;
    slots_[s].next = head_;
    if (head_ != kNone) slots_[head_].prev = s;
    head_ = s;
    if (tail_ == kNone) tail_ = s;
  }

  uint32_t capacity_;
  std::vector<Slot> slots_;
  FlatMap<uint64_t, uint32_t> index_;
  uint32_t head_ = kNone, tail_ = kNone;
};

}  // namespace rocefab
