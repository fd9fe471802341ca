#pragma once
/// @file ring.h
/// FIFO of trivially copyable values in a growable power-of-two ring: amortized O(1), no
/// allocation once it has grown to its working size, neighbouring elements in neighbouring
/// memory. Not thread-safe. The base of MbufFifo (switch and host queues, live delay lines) and of
/// the sim runner's per-link frames in flight.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rocefab {

template <class T>
class Ring {
 public:
  Ring() : v_(16) {}
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  /// Moves leave the source empty and usable.
  Ring(Ring&& o) noexcept : v_(std::move(o.v_)), head_(o.head_), tail_(o.tail_) { o.Reset(); }
  Ring& operator=(Ring&& o) noexcept {
    if (this != &o) {
      v_ = std::move(o.v_);
      head_ = o.head_;
      tail_ = o.tail_;
      o.Reset();
    }
    return *this;
  }

  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  void push_back(const T& x) {
    if (size() == v_.size()) Grow();
    v_[tail_++ & (v_.size() - 1)] = x;
  }
  /// The oldest element; the ring must not be empty.
  const T& front() const { return v_[head_ & (v_.size() - 1)]; }
  /// Removes and returns the oldest element; the ring must not be empty.
  T pop_front() { return v_[head_++ & (v_.size() - 1)]; }
  /// Address of the slot after front() (always valid memory, not necessarily an element): for
  /// prefetching.
  const T* second_slot() const { return &v_[(head_ + 1) & (v_.size() - 1)]; }
  template <class F>
  void ForEach(F f) const {
    for (uint64_t i = head_; i != tail_; ++i) f(v_[i & (v_.size() - 1)]);
  }

 private:
  void Reset() {
    v_.assign(16, T{});
    head_ = tail_ = 0;
  }
  void Grow() {
    std::vector<T> bigger(v_.size() * 2);
    const size_t n = size();
    for (size_t i = 0; i < n; ++i) bigger[i] = v_[(head_ + i) & (v_.size() - 1)];
    v_.swap(bigger);
    head_ = 0;
    tail_ = n;
  }
  std::vector<T> v_;
  uint64_t head_ = 0, tail_ = 0;
};

}  // namespace rocefab
