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
  void push(const T& in) {
    // Moves parents down into the hole and writes the element once (one copy per level, not a
    // swap). Copied first: `in` may not alias the vector across push_back.
    const T x = in;
    v_.push_back(x);
    size_t i = v_.size() - 1;
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!less_(x, v_[parent])) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = x;
  }
  void pop() {
    const T x = v_.back();
    v_.pop_back();
    const size_t n = v_.size();
    if (n == 0) return;
    // Sift the former last element down from the root, moving the smaller child up into the hole.
    size_t i = 0;
    for (;;) {
      const size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t best = c;
      const size_t last = c + 4 < n ? c + 4 : n;
      for (size_t k = c + 1; k < last; ++k) {
        if (less_(v_[k], v_[best])) best = k;
      }
      if (!less_(v_[best], x)) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = x;
  }

 private:
  std::vector<T> v_;
  Less less_;
};

}  // namespace rocefab
