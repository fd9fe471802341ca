#pragma once
/// @file egress_port.h
/// Egress side of one switch port: 8 queues (one per traffic class), a byte limit, and the
/// scheduler the runner pulls from when the wire is free. This scheduler is strict
/// priority (queue 7 highest) with one shared byte limit per port; the lossless-switch work
/// replaces admission with the shared-buffer MMU and adds DWRR and per-priority pause, behind the
/// same Enqueue/Dequeue calls.

#include <array>
#include <cstdint>

#include "common/mbuf_fifo.h"
#include "common/time.h"

namespace rocefab {

inline constexpr int kNumQueues = 8;

class EgressPort {
 public:
  /// `limit_bytes` > 0: frames that would push the port's queued bytes above it are refused.
  explicit EgressPort(int64_t limit_bytes = 1 << 20) : limit_bytes_(limit_bytes) {}

  /// Queues `m` on queue `tc` (0..7). Returns false (caller drops and counts) when over limit.
  bool Enqueue(rte_mbuf* m, uint8_t tc) {
    if (bytes_ + rte_pktmbuf_pkt_len(m) > limit_bytes_) return false;
    bytes_ += rte_pktmbuf_pkt_len(m);
    queues_[tc & 7].Push(m);
    if (bytes_ > watermark_bytes_) watermark_bytes_ = bytes_;
    return true;
  }
  /// Next frame by strict priority, or nullptr.
  rte_mbuf* Dequeue() {
    for (int q = kNumQueues - 1; q >= 0; --q) {
      if (!queues_[q].empty()) {
        rte_mbuf* m = queues_[q].Pop();
        bytes_ -= rte_pktmbuf_pkt_len(m);
        return m;
      }
    }
    return nullptr;
  }
  int64_t bytes() const { return bytes_; }
  int64_t watermark_bytes() const { return watermark_bytes_; }
  size_t queued(int q) const { return queues_[q].size(); }

 private:
  int64_t limit_bytes_;
  int64_t bytes_ = 0;
  int64_t watermark_bytes_ = 0;
  std::array<MbufFifo, kNumQueues> queues_;
};

}  // namespace rocefab
