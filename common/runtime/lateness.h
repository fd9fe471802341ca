#pragma once
/// @file lateness.h
/// How late a real-time runner acts against the exact schedule that virtual time would keep.
///
/// Every delay-line delivery, node timer and wire slot of the live runner has an exact time (when
/// the last bit reaches the peer, when the timer is due, when the wire became free for a waiting
/// frame); lateness is the actual time minus that time, 0 when on time. LatenessHistogram keeps
/// their distribution in log-linear buckets (16 per power of two of picoseconds, so a reported
/// percentile is the upper edge of its bucket, at most 1/16 = 6.25 % above the true value; the
/// scheme of HdrHistogram with 4 bits of precision). The count beyond the run's tolerance and the
/// maximum are exact. Pure accounting: no clock, no allocation after construction.

#include <array>
#include <bit>
#include <cstdint>

#include "common/time.h"

namespace rocefab {

class LatenessHistogram {
 public:
  /// `tolerance` (ps, >= 0): lateness above it counts in late_beyond_tolerance().
  explicit LatenessHistogram(Time tolerance = 0) : tolerance_(tolerance) {}

  void set_tolerance(Time t) { tolerance_ = t; }
  Time tolerance() const { return tolerance_; }

  /// Records one event `late` ps after its exact time (<= 0: on time).
  void Record(Time late) {
    ++count_;
    if (late <= 0) {
      ++buckets_[0];
      return;
    }
    ++buckets_[Bucket(late)];
    if (late > max_) max_ = late;
    if (late > tolerance_) ++beyond_;
  }

  /// Adds another histogram's events (same bucket scheme; tolerance of this one kept, and the
  /// other's beyond-tolerance count taken as it is).
  void Merge(const LatenessHistogram& o) {
    for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    beyond_ += o.beyond_;
    if (o.max_ > max_) max_ = o.max_;
  }

  uint64_t count() const { return count_; }
  uint64_t late_beyond_tolerance() const { return beyond_; }
  Time max() const { return max_; }
  double fraction_beyond_tolerance() const {
    return count_ == 0 ? 0.0 : static_cast<double>(beyond_) / static_cast<double>(count_);
  }

  /// Nearest-rank percentile, p in (0, 1]: the upper edge of the bucket holding the
  /// ceil(p * count)-th smallest value, capped at max(). 0 when empty.
  Time Percentile(double p) const {
    if (count_ == 0) return 0;
    auto rank = static_cast<uint64_t>(p * static_cast<double>(count_) + 0.999999999);
    if (rank < 1) rank = 1;
    if (rank > count_) rank = count_;
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank) {
        const Time edge = UpperEdge(i);
        return edge < max_ ? edge : max_;
      }
    }
    return max_;
  }

 private:
  static constexpr int kSubBits = 4;  // 16 buckets per power of two
  static constexpr int kSub = 1 << kSubBits;
  // Bucket 0: on time (<= 0); buckets 1..kSub: exactly 1..kSub ps; then kSub buckets per power
  // of two: value v >= 2^kSubBits with msb m goes to 1 + kSub + (m - kSubBits) * kSub + the
  // kSubBits bits below the msb.
  static constexpr size_t kBuckets = 1 + kSub + (63 - kSubBits) * kSub;

  static size_t Bucket(Time v) {
    const auto u = static_cast<uint64_t>(v);
    if (u <= kSub) return static_cast<size_t>(u);
    const int msb = 63 - std::countl_zero(u);  // >= kSubBits
    const int shift = msb - kSubBits;
    const uint64_t sub = (u >> shift) & (kSub - 1);
    return 1 + kSub + static_cast<size_t>(shift) * kSub + static_cast<size_t>(sub);
  }
  static Time UpperEdge(size_t b) {
    if (b <= static_cast<size_t>(kSub)) return static_cast<Time>(b);
    const size_t k = b - 1 - kSub;
    const int shift = static_cast<int>(k / kSub);
    const uint64_t sub = k % kSub;
    // Values in this bucket: ((kSub + sub) << shift) .. ((kSub + sub + 1) << shift) - 1.
    return static_cast<Time>(((kSub + sub + 1) << shift) - 1);
  }

  Time tolerance_;
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0, beyond_ = 0;
  Time max_ = 0;
};

}  // namespace rocefab
