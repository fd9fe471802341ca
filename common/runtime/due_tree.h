#pragma once
/// @file due_tree.h
/// The live runner's due events, one per port: a fixed set of slots (0..n-1), each with one
/// (time, key, sub) triple (time in ps, kTimeNever: nothing due) and a caller's tag, whose
/// earliest slot is read in O(1) and whose entry is changed in O(log n). The live runner keeps
/// one slot per port, holding the earlier of the port's two events (the delay line's head
/// delivery, the next wire slot; the tag says which), so finding a partition's next event does
/// not scan its ports. Equal times are ordered by key (the sim runner's event key: node, then
/// arrivals by port before the node's own events in scheduling order; sim_runner.h), then by
/// sub (wakes taken in the same event, in the order they were taken), then by slot.
///
/// A tournament (winner) tree: the leaves are the slots, every inner node holds the slot that
/// wins (is earlier) in its subtree. Changing a slot replays its matches on the way to the root:
/// one comparison per level, stopping where the winner is unchanged and is not the slot changed.
/// A binary heap over the same entries took two comparisons per level and moved 32-byte entries
/// (and their positions) on every update: ~23 % of a saturated live poll thread's samples went
/// to it (perf, 2026-12-07, docs/experiments.md "Live capacity by poll threads").

#include <cstdint>
#include <vector>

#include "common/time.h"

namespace rocefab {

class DueTree {
 public:
  /// `n` slots, all kTimeNever.
  void Reset(uint32_t n) {
    n_ = n;
    leaves_ = 1;
    while (leaves_ < n) leaves_ *= 2;
    // Slots n..leaves_-1 pad the tree: never due, and after every real slot at equal entries.
    entries_.assign(leaves_, Entry{});
    win_.assign(2 * static_cast<size_t>(leaves_), 0);
    for (uint32_t s = 0; s < leaves_; ++s) win_[leaves_ + s] = s;
    for (uint32_t i = leaves_ - 1; i >= 1; --i) win_[i] = Match(win_[2 * i], win_[2 * i + 1]);
  }
  uint32_t size() const { return n_; }
  /// Sets slot's time, tie keys and tag (slot < size()).
  void Set(uint32_t slot, Time t, uint64_t key = 0, uint64_t sub = 0, uint8_t tag = 0) {
    Entry& e = entries_[slot];
    e.tag = tag;
    if (e.t == t && e.key == key && e.sub == sub) return;
    e.t = t;
    e.key = key;
    e.sub = sub;
    for (uint32_t i = (leaves_ + slot) / 2; i >= 1; i /= 2) {
      const uint32_t w = Match(win_[2 * i], win_[2 * i + 1]);
      if (w == win_[i] && w != slot) break;  // this match and every one above are unchanged
      win_[i] = w;
    }
  }
  Time time(uint32_t slot) const { return entries_[slot].t; }
  uint64_t key(uint32_t slot) const { return entries_[slot].key; }
  uint64_t sub(uint32_t slot) const { return entries_[slot].sub; }
  uint8_t tag(uint32_t slot) const { return entries_[slot].tag; }
  /// The earliest time (kTimeNever when empty or nothing due), its slot, key and tag.
  Time top_time() const { return n_ == 0 ? kTimeNever : entries_[Top()].t; }
  uint32_t top_slot() const { return Top(); }
  uint64_t top_key() const { return entries_[Top()].key; }
  uint8_t top_tag() const { return entries_[Top()].tag; }

 private:
  struct Entry {
    Time t = kTimeNever;
    uint64_t key = 0;
    uint64_t sub = 0;
    uint8_t tag = 0;
  };
  uint32_t Top() const { return leaves_ == 1 ? 0 : win_[1]; }
  /// The earlier of slots a < b (at equal entries the lower slot: a).
  uint32_t Match(uint32_t a, uint32_t b) const {
    const Entry& x = entries_[a];
    const Entry& y = entries_[b];
    bool b_first;
    if (x.t != y.t) {
      b_first = y.t < x.t;
    } else if (x.key != y.key) {
      b_first = y.key < x.key;
    } else {
      b_first = y.sub < x.sub;
    }
    return b_first ? b : a;
  }

  uint32_t n_ = 0;
  uint32_t leaves_ = 1;
  std::vector<Entry> entries_;  ///< per slot (padded to leaves_)
  std::vector<uint32_t>
      win_;  ///< [1, leaves_): winners of inner nodes; [leaves_, 2 leaves_): slots
};

}  // namespace rocefab
