#pragma once
/// @file mbuf_fifo.h
/// FIFO of mbuf pointers in a growable power-of-two ring; no allocation once it has grown to its
/// working size. Not thread-safe (one lcore owns each queue). Each slot keeps the frame's length
/// next to the pointer, so byte accounting and FrontLen() (a scheduler's DWRR test) do not touch
/// the mbuf itself: in a large fabric a queued mbuf has usually left the CPU caches.

#include <rte_mbuf.h>

#include <cstdint>

#include "common/ring.h"

namespace rocefab {

class MbufFifo {
 public:
  MbufFifo() = default;
  ~MbufFifo() { Clear(); }
  MbufFifo(const MbufFifo&) = delete;
  MbufFifo& operator=(const MbufFifo&) = delete;
  /// Moves leave the source empty and usable (defaulted moves would leave its byte count
  /// behind).
  MbufFifo(MbufFifo&& o) noexcept : ring_(std::move(o.ring_)), bytes_(o.bytes_) { o.bytes_ = 0; }
  MbufFifo& operator=(MbufFifo&& o) noexcept {
    if (this != &o) {
      Clear();
      ring_ = std::move(o.ring_);
      bytes_ = o.bytes_;
      o.bytes_ = 0;
    }
    return *this;
  }

  bool empty() const { return ring_.empty(); }
  size_t size() const { return ring_.size(); }
  uint64_t bytes() const { return bytes_; }
  void Push(rte_mbuf* m) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    ring_.push_back(Slot{m, len});
    bytes_ += len;
  }
  rte_mbuf* Front() const { return ring_.front().m; }
  /// pkt_len of Front() as it was when pushed (bytes).
  uint32_t FrontLen() const { return ring_.front().len; }
  rte_mbuf* Pop() {
    const Slot s = ring_.pop_front();
    bytes_ -= s.len;
    return s.m;
  }
  /// Frees every queued mbuf; returns how many.
  size_t Clear() {
    size_t n = 0;
    while (!empty()) {
      rte_pktmbuf_free(Pop());
      ++n;
    }
    return n;
  }

 private:
  struct Slot {
    rte_mbuf* m = nullptr;
    uint32_t len = 0;
  };
  Ring<Slot> ring_;
  uint64_t bytes_ = 0;
};

}  // namespace rocefab
