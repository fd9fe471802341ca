#pragma once
/// @file mbuf_fifo.h
/// FIFO of mbuf pointers in a growable power-of-two ring; no allocation once it has grown to its
/// working size. Not thread-safe (one lcore owns each queue).

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
  MbufFifo(MbufFifo&&) = default;
  MbufFifo& operator=(MbufFifo&&) = default;

  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  uint64_t bytes() const { return bytes_; }
  void Push(rte_mbuf* m) {
    if (size() == ring_.size()) Grow();
    ring_[tail_++ & (ring_.size() - 1)] = m;
    bytes_ += rte_pktmbuf_pkt_len(m);
  }
  rte_mbuf* Front() const { return ring_[head_ & (ring_.size() - 1)]; }
  rte_mbuf* Pop() {
    rte_mbuf* m = ring_[head_++ & (ring_.size() - 1)];
    bytes_ -= rte_pktmbuf_pkt_len(m);
    return m;
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
  void Grow() {
    std::vector<rte_mbuf*> bigger(ring_.size() * 2);
    const size_t n = size();
    for (size_t i = 0; i < n; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
    tail_ = n;
  }
  std::vector<rte_mbuf*> ring_;
  uint64_t head_ = 0, tail_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace rocefab
