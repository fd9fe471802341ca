#pragma once
/// @file mbuf_fifo.h
/// FIFO of mbuf pointers in a growable power-of-two ring; no allocation once it has grown to its
/// working size. Not thread-safe (one lcore owns each queue). Each slot keeps the frame's length
/// next to the pointer, so byte accounting and FrontLen() (a scheduler's DWRR test) do not touch
/// the mbuf itself: in a large fabric a queued mbuf has usually left the CPU caches.

#include <rte_mbuf.h>

#include <cstdint>
#include <vector>

namespace rocefab {

class MbufFifo {
 public:
  MbufFifo() : ring_(16) {}
  ~MbufFifo() { Clear(); }
  MbufFifo(const MbufFifo&) = delete;
  MbufFifo& operator=(const MbufFifo&) = delete;
  /// Moves leave the source empty and usable (the defaults would leave its counters behind, and
  /// its destructor would then free frames it no longer holds).
  MbufFifo(MbufFifo&& o) noexcept
      : ring_(std::move(o.ring_)), head_(o.head_), tail_(o.tail_), bytes_(o.bytes_) {
    o.Reset();
  }
  MbufFifo& operator=(MbufFifo&& o) noexcept {
    if (this != &o) {
      Clear();
      ring_ = std::move(o.ring_);
      head_ = o.head_;
      tail_ = o.tail_;
      bytes_ = o.bytes_;
      o.Reset();
    }
    return *this;
  }

  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  uint64_t bytes() const { return bytes_; }
  void Push(rte_mbuf* m) {
    if (size() == ring_.size()) Grow();
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    ring_[tail_++ & (ring_.size() - 1)] = Slot{m, len};
    bytes_ += len;
  }
  rte_mbuf* Front() const { return ring_[head_ & (ring_.size() - 1)].m; }
  /// pkt_len of Front() as it was when pushed (bytes).
  uint32_t FrontLen() const { return ring_[head_ & (ring_.size() - 1)].len; }
  rte_mbuf* Pop() {
    const Slot& s = ring_[head_++ & (ring_.size() - 1)];
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
    rte_mbuf* m;
    uint32_t len;
  };
  void Reset() {
    ring_.assign(16, Slot{nullptr, 0});
    head_ = tail_ = 0;
    bytes_ = 0;
  }
  void Grow() {
    std::vector<Slot> bigger(ring_.size() * 2);
    const size_t n = size();
    for (size_t i = 0; i < n; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
    tail_ = n;
  }
  std::vector<Slot> ring_;
  uint64_t head_ = 0, tail_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace rocefab
