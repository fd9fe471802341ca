#pragma once
/// @file scheduler.h
/// Egress scheduler of one port: a control queue for MAC control frames (PFC; never paused, sent
/// before anything else, as 802.1Qbb frames are not subject to PFC), then strict-priority queues
/// (highest index first), then DWRR (deficit weighted round robin, Shreedhar & Varghese 1996;
/// the ETS bandwidth shares of 802.1Qaz) over the other queues, each with a quantum of
/// weight x 1536 bytes. Queues whose priority is paused by PFC are skipped and keep their frames.

#include <array>
#include <cstdint>

#include "common/mbuf_fifo.h"

namespace rocefab {

struct SchedulerConfig {
  uint8_t strict_mask = 0xFF;                               ///< bit q: queue q is strict priority
  std::array<uint16_t, 8> weights{1, 1, 1, 1, 1, 1, 1, 1};  ///< DWRR weights (1..255)
};

class EgressScheduler {
 public:
  explicit EgressScheduler(const SchedulerConfig& cfg = {});

  void EnqueueControl(rte_mbuf* m) {
    control_.Push(m);
    nonempty_ |= kControlBit;
  }
  void Enqueue(uint8_t queue, rte_mbuf* m) {
    q_[queue & 7].Push(m);
    nonempty_ |= static_cast<uint16_t>(1u << (queue & 7));
  }
  /// Next frame to send, skipping queues in `paused_mask`; nullptr if none is eligible.
  /// `*queue` gets the queue it came from (8 = control).
  rte_mbuf* Dequeue(uint8_t paused_mask, uint8_t* queue);
  /// Queued frames that wait only because their queue is paused.
  bool HasPausedBacklog(uint8_t paused_mask) const;
  size_t queued(uint8_t q) const { return q_[q].size(); }
  uint64_t queued_bytes(uint8_t q) const { return q_[q].bytes(); }
  bool empty() const { return nonempty_ == 0; }
  /// Frames queued in every queue, the control queue included.
  size_t frames() const;
  /// Prefetches the mbuf header and metadata of every queue's head frame (a cache hint only).
  void PrefetchHeads() const;
  /// Frees everything queued (teardown); returns the frames freed.
  size_t Clear();
  /// Frees the frames of one queue (PFC watchdog drop action); returns the frames freed.
  size_t ClearQueue(uint8_t q) {
    nonempty_ &= static_cast<uint16_t>(~(1u << q));
    NoteEmptiedOutsideDwrr(q);
    return q_[q].Clear();
  }
  rte_mbuf* PopQueue(uint8_t q) {
    if (q_[q].empty()) return nullptr;
    rte_mbuf* m = Pop(q);
    if (q_[q].empty()) NoteEmptiedOutsideDwrr(q);
    return m;
  }

 private:
  static constexpr uint16_t kControlBit = 1u << 8;
  /// Pops the head of queue q (< 8, not empty) and clears q's bit in nonempty_ if it emptied.
  rte_mbuf* Pop(uint8_t q) {
    rte_mbuf* m = q_[q].Pop();
    if (q_[q].empty()) nonempty_ &= static_cast<uint16_t>(~(1u << q));
    return m;
  }
  /// A queue emptied by the watchdog keeps its deficit until the round-robin pointer passes it
  /// while it is still empty (as a step-by-step walk would clear it there).
  void NoteEmptiedOutsideDwrr(uint8_t q) {
    if (deficit_[q] != 0) stale_ |= static_cast<uint8_t>(1u << q);
  }

  SchedulerConfig cfg_;
  /// Bit q (0-7): queue q holds frames; kControlBit: the control queue does. Dequeue decides from
  /// this word and the paused mask without reading the nine FIFOs (six cache lines).
  uint16_t nonempty_ = 0;
  MbufFifo control_;
  std::array<MbufFifo, 8> q_;
  std::array<int64_t, 8> deficit_{};
  std::array<int64_t, 8> quantum_{};
  uint8_t rr_ = 0;
  bool fresh_ = true;  // the round-robin pointer just arrived at rr_
  /// Bit q: queue q may be empty with a deficit left (emptied by PopQueue/ClearQueue). Every
  /// other empty queue has no deficit: the DWRR clears it when it empties the queue.
  uint8_t stale_ = 0;
};

}  // namespace rocefab
