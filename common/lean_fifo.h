#pragma once
/// @file lean_fifo.h
/// A FIFO on a std::vector with a head index: no allocation until the first push (a std::deque
/// allocates about 600 bytes when constructed, which matters for 10^5 queue pairs), amortized
/// O(1) push/pop, iteration in FIFO order.

#include <cstddef>
#include <vector>

namespace rocefab {

template <class T>
class LeanFifo {
 public:
  bool empty() const { return head_ == v_.size(); }
  size_t size() const { return v_.size() - head_; }
  void push_back(const T& x) { v_.push_back(x); }
  T& front() { return v_[head_]; }
  const T& front() const { return v_[head_]; }
  void pop_front() {
    ++head_;
    if (head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= v_.size()) {
      v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  void clear() {
    v_.clear();
    head_ = 0;
  }
  auto begin() { return v_.begin() + static_cast<std::ptrdiff_t>(head_); }
  auto end() { return v_.end(); }
  auto begin() const { return v_.begin() + static_cast<std::ptrdiff_t>(head_); }
  auto end() const { return v_.end(); }

 private:
  std::vector<T> v_;
  size_t head_ = 0;
};

}  // namespace rocefab
