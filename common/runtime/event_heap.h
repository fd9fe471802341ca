#pragma once
/// @file event_heap.h
/// A 4-ary min-heap for the sim runner's events: shallower than a binary heap (log4 n levels) and
/// the four children of a node share cache lines, which is what dominates at 10^5..10^6 pending
/// events. Ordered by Less; ties must be broken by the caller (the runner's sequence number).

#include <cstddef>
#include <utility>
#include <vector>

namespace rocefab {

template <class T, class Less>
class EventHeap {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const T& top() const { return v_.front(); }
  void push(const T& x) {
    v_.push_back(x);
    size_t i = v_.size() - 1;
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!less_(v_[i], v_[parent])) break;
      std::swap(v_[i], v_[parent]);
      i = parent;
    }
  }
  void pop() {
    v_.front() = v_.back();
    v_.pop_back();
    const size_t n = v_.size();
    size_t i = 0;
    for (;;) {
      const size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t best = c;
      const size_t last = c + 4 < n ? c + 4 : n;
      for (size_t k = c + 1; k < last; ++k) {
        if (less_(v_[k], v_[best])) best = k;
      }
      if (!less_(v_[best], v_[i])) break;
      std::swap(v_[i], v_[best]);
      i = best;
    }
  }

 private:
  std::vector<T> v_;
  Less less_;
};

}  // namespace rocefab
